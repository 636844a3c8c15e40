// Gap fill: one feed's quotes (feed.js) while it cannot hand them on in seq
// order yet. When the broker connection comes back (Feed#restart()), a feed
// whose quotes carry an epoch keeps what its subscribers hold and buffers
// what arrives here; Feed#goLive() then gets the ticks it missed, read from
// the symbol's history, and hands history and buffer to its subscribers in
// seq order as if they had never been missed. A live quote that skips ticks
// of a symbol with distinct subscribers or taps (Taken.GAP) starts one the
// same way, for Feed#fill(). Only when they cannot continue the held quote
// (history off, trimmed or expired, a new epoch, more quotes than may be
// buffered) does every subscriber get a fresh snapshot, marked
// `"recovered":false`. A feed holds one only while it buffers: made by the
// restart or the gap, dropped when the fill is decided.

/**
 * @typedef {import('./delta.js').Quote} Quote
 * @typedef {{quote: Quote, raw: string}} Entry a quote with its bytes as published
 */

export class GapFill {
  /** @type {Entry[]} the quotes that arrived since it began, in arrival order */
  #buffer
  /** More quotes arrived than may be buffered: the gap cannot be filled. */
  #overflow = false
  #max

  /**
   * @param {number} max quotes buffered (WSPS_RECOVERY_MAX); more and the
   *   gap is not filled
   * @param {Entry | null} [first] the quote that began it (a live gap): kept
   *   whatever `max`
   */
  constructor (max, first = null) {
    this.#max = max
    this.#buffer = first === null ? [] : [first]
  }

  /**
   * A quote arrived meanwhile: buffered, or (buffer full) the gap is not fillable.
   *
   * @param {Quote} quote
   * @param {string} raw
   */
  offer (quote, raw) {
    if (this.#buffer.length < this.#max) this.#buffer.push({ quote, raw })
    else this.#overflow = true
  }

  /**
   * The ticks that continue `held`, from history and buffer: history was
   * read after the channel was subscribed, so the two together hold every
   * tick after the held one, unless history lost some. Checked tick by
   * tick, in one epoch; what is not newer than held is passed over.
   *
   * @param {Quote} held the quote every subscriber holds
   * @param {Quote | null} latest the latest quote read from the broker, if
   *   read (a broker reconnect's pass): another epoch and nothing continues
   * @param {Entry[] | null} missed history after held, in seq order; null:
   *   not read, or more than may be filled
   * @returns {Entry[] | null} the ticks to hand on, in seq order; null:
   *   they do not continue held (the subscribers start over, newest())
   */
  continuation (held, latest, missed) {
    const epoch = held.epoch
    if (missed === null || this.#overflow || (latest !== null && latest.epoch !== epoch)) return null
    let next = held.seq + 1
    /** @type {Entry[]} */
    const fill = []
    for (const e of missed.concat(this.#buffer)) {
      if (e.quote.epoch !== epoch) return null
      if (e.quote.seq < next) continue
      if (e.quote.seq !== next) return null
      fill.push(e)
      next++
    }
    return fill
  }

  /**
   * The newest quote known, where the subscribers start over: the last one
   * buffered, else the newest of history, else the latest read.
   *
   * @param {Entry[] | null} missed
   * @param {Quote | null} latest
   * @param {string | null} latestRaw
   * @returns {Entry | null}
   */
  newest (missed, latest, latestRaw) {
    return this.#buffer.at(-1) ?? missed?.at(-1) ?? (latest !== null && latestRaw !== null ? { quote: latest, raw: latestRaw } : null)
  }
}
