// Which symbols' feeds are interrupted on this process, since when, and
// whether their subscribers were told (a `stale` frame). The hub marks a
// symbol when its feed stops being known good (the Redis link lost or
// silent, its channel being restored after a reconnect or a shard's
// failover) and clears it when the feed is live again (then a `fresh`
// frame follows for those that were told).
//
// A short interruption (a reconnect that restores the channel within the
// grace, gap fill included) is not told: nothing was shown wrongly, and
// clients are spared a stale/fresh pair per blip. A link found silent is
// told at once: it was found only after seconds without an answer.

/**
 * @typedef {object} StaleEntry
 * @property {number} since wall clock (ms): what the subscribers hold is from then or before
 * @property {number} foundAt performance.now() when it was marked (the grace counts from it)
 * @property {boolean} told a `stale` frame went out for it
 */

export class StaleBook {
  /** @type {Map<string, StaleEntry>} */
  #entries = new Map()
  #graceMs
  #told = 0

  /** @param {number} graceMs WSPS_STALE_GRACE_MS */
  constructor (graceMs) {
    this.#graceMs = graceMs
  }

  /**
   * Marks a symbol interrupted, unless it already is (the first mark's
   * `since` is the true one).
   *
   * @param {string} symbol
   * @param {number} since wall clock (ms) of the last moment its feed was known good
   * @param {boolean} [now] tell at the next due() instead of after the grace
   */
  mark (symbol, since, now = false) {
    if (this.#entries.has(symbol)) return
    this.#entries.set(symbol, { since, foundAt: performance.now() - (now ? this.#graceMs : 0), told: false })
  }

  /**
   * The marked symbols whose grace is over and that were not told yet,
   * grouped by `since`; they count as told from now on.
   *
   * @returns {Map<number, string[]>}
   */
  due () {
    /** @type {Map<number, string[]>} */
    const out = new Map()
    const now = performance.now()
    for (const [symbol, e] of this.#entries) {
      if (e.told || now - e.foundAt < this.#graceMs) continue
      e.told = true
      this.#told++
      const list = out.get(e.since)
      if (list) list.push(symbol)
      else out.set(e.since, [symbol])
    }
    return out
  }

  /**
   * The symbol's feed is live again (or gone).
   *
   * @param {string} symbol
   * @returns {boolean} whether its subscribers had been told it was stale
   */
  clear (symbol) {
    const e = this.#entries.get(symbol)
    if (e === undefined) return false
    this.#entries.delete(symbol)
    if (e.told) this.#told--
    return e.told
  }

  /**
   * @param {string} symbol
   * @returns {number | null} its `since` when its subscribers were told it is stale, else null
   */
  toldSince (symbol) {
    const e = this.#entries.get(symbol)
    return e?.told ? e.since : null
  }

  /** Symbols whose subscribers were told they are stale. */
  get toldCount () {
    return this.#told
  }

  /**
   * The symbols told stale, oldest first (the fleet view).
   *
   * @param {number} max
   * @returns {{symbol: string, since: number}[]}
   */
  told (max) {
    /** @type {{symbol: string, since: number}[]} */
    const out = []
    for (const [symbol, e] of this.#entries) if (e.told) out.push({ symbol, since: e.since })
    return out.sort((a, b) => a.since - b.since).slice(0, max)
  }
}
