// Which watched symbols must not be shown as live, and since when. Three
// sources, held apart and combined: the gateway says its feed of a symbol
// is interrupted (a `stale` frame, until its `fresh`), the gateway does not
// answer (the connection is quiet, liveness.js: until its next frame), and
// the client's own connection was lost (until the symbol is resubscribed
// and recovered or snapshotted on a new one). A symbol is fresh only when
// none holds; its `since` is the earliest. Every change returns the
// symbols whose combined state it flipped, so the client tells each flip
// once.

export class Staleness {
  /** @type {Map<string, number>} the gateway's `stale` frames of the current connection: symbol -> since */
  #server = new Map()
  /** @type {Map<string, number>} a lost connection's: symbol -> since, until restored on a new one */
  #lost = new Map()
  /** @type {Map<string, number>} the current connection does not answer: symbol -> since (its last frame) */
  #quiet = new Map()

  /**
   * @param {string} symbol
   * @returns {boolean}
   */
  isStale (symbol) {
    return this.#server.has(symbol) || this.#lost.has(symbol) || this.#quiet.has(symbol)
  }

  /**
   * @param {string} symbol
   * @returns {number | null} ms since the epoch: what is held is from then or before; null when fresh
   */
  since (symbol) {
    let out = null
    for (const source of [this.#server, this.#lost, this.#quiet]) {
      const t = source.get(symbol)
      if (t !== undefined && (out === null || t < out)) out = t
    }
    return out
  }

  /**
   * A `stale` frame.
   *
   * @param {string[]} symbols the watched ones it names
   * @param {number} since
   * @returns {string[]} those that were fresh
   */
  serverStale (symbols, since) {
    const flipped = symbols.filter((s) => !this.isStale(s))
    for (const s of symbols) this.#server.set(s, Math.min(since, this.#server.get(s) ?? since))
    return flipped
  }

  /**
   * A `fresh` frame.
   *
   * @param {string[]} symbols
   * @returns {string[]} those that are fresh now and were not
   */
  serverFresh (symbols) {
    return symbols.filter((s) => this.#server.delete(s) && !this.isStale(s))
  }

  /**
   * The connection does not answer: every symbol of `symbols` is stale from
   * `since` (its last frame) until answered().
   *
   * @param {string[]} symbols the watch set
   * @param {number} since
   * @returns {string[]} those that were fresh
   */
  quiet (symbols, since) {
    const flipped = symbols.filter((s) => !this.isStale(s))
    for (const s of symbols) if (!this.#quiet.has(s)) this.#quiet.set(s, since)
    return flipped
  }

  /**
   * A frame arrived on the quiet connection.
   *
   * @returns {string[]} those that are fresh now and were not
   */
  answered () {
    const symbols = [...this.#quiet.keys()]
    this.#quiet.clear()
    return symbols.filter((s) => !this.isStale(s))
  }

  /**
   * The connection was lost: every symbol of `symbols` is stale from
   * `since` (the last frame received) until restored() on a new connection.
   *
   * @param {string[]} symbols the watch set
   * @param {number} since
   * @returns {string[]} those that were fresh
   */
  lost (symbols, since) {
    const flipped = symbols.filter((s) => !this.isStale(s))
    for (const [s, t] of this.#quiet) this.#lost.set(s, Math.min(t, this.#lost.get(s) ?? t))
    this.#quiet.clear()
    this.handOver()
    for (const s of symbols) if (!this.#lost.has(s)) this.#lost.set(s, since)
    return flipped
  }

  /**
   * The connection is replaced on purpose (an SSE stream reopened for a new
   * watch set): the gateway's word ends with it. Its stale symbols stay
   * stale until restored() on the next one, whose gateway (maybe another
   * pod) says again if its feed of them is still interrupted.
   */
  handOver () {
    for (const [s, since] of this.#server) this.#lost.set(s, Math.min(since, this.#lost.get(s) ?? since))
    this.#server.clear()
  }

  /**
   * Resubscribed and recovered (the ack's `recovered`) or snapshotted on
   * the new connection.
   *
   * @param {string[]} symbols
   * @returns {string[]} those that are fresh now and were not
   */
  restored (symbols) {
    return symbols.filter((s) => this.#lost.delete(s) && !this.isStale(s))
  }

  /** @param {string[]} symbols no longer watched: neither stale nor fresh */
  forget (symbols) {
    for (const s of symbols) {
      this.#server.delete(s)
      this.#lost.delete(s)
      this.#quiet.delete(s)
    }
  }
}
