// Bars from ticks, by the rules of docs/protocol.md (Bars): a pure function
// of the ticks in seq order (and, for closing a quiet bar, of a clock the
// caller passes), so every gateway cuts the same closed bars from the same
// history, whenever it started.
//
// - A tick's bucket is floor(ts / interval) * interval (ts: the fetcher's).
// - o/h/l/c follow the tick's `last`; n counts the ticks.
// - v adds the rise of the cumulative `volume` since the tick before (the
//   first tick whose predecessor is unknown adds 0, and so does a fall: a
//   new trading day's counter starting over).
// - A tick goes into the bar of its bucket, or into the earliest bar not
//   closed when its bucket is older (clock skew between fetcher replicas
//   stamps a tick before the one it follows): closed bars never reopen.
//   A tick of a later bucket closes the open bar first.
// - closeDue(now) closes the open bar once `now` is past its end: a quiet
//   symbol's bar does not wait for its next tick.

/**
 * @typedef {{t: number, o: number, h: number, l: number, c: number, v: number, n: number}} Bar
 * @typedef {{ts: number, last?: unknown, volume?: unknown}} Tick the fields of a quote a bar reads
 */

export class BarBuilder {
  #intervalMs
  /** @type {Bar | null} */
  #open = null
  /** Start of the last bar closed (-Infinity: none): no tick goes into it or before. */
  #closedT = -Infinity
  /** @type {number | null} the cumulative volume of the tick before (null: unknown) */
  #volume = null

  /** @param {number} intervalMs a bar's length */
  constructor (intervalMs) {
    this.#intervalMs = intervalMs
  }

  get intervalMs () {
    return this.#intervalMs
  }

  /** @returns {Bar | null} the open bar (a copy), if any */
  get open () {
    return this.#open === null ? null : { ...this.#open }
  }

  /**
   * The tick before the first one fed is known (read from history, older
   * than the first bar wanted): only its volume counts, as the base of the
   * next tick's rise.
   *
   * @param {Tick} tick
   */
  prime (tick) {
    if (typeof tick.volume === 'number' && Number.isFinite(tick.volume)) this.#volume = tick.volume
  }

  /**
   * Feeds one tick (in seq order). A tick without a numeric `last` or `ts`
   * is skipped: its volume counts with the next tick's rise.
   *
   * @param {Tick} tick
   * @returns {Bar | null} the bar it closed (a tick of a later bucket), if any
   */
  tick (tick) {
    const { ts, last, volume } = tick
    if (typeof last !== 'number' || !Number.isFinite(last) || typeof ts !== 'number' || !Number.isFinite(ts)) return null
    let rise = 0
    if (typeof volume === 'number' && Number.isFinite(volume)) {
      if (this.#volume !== null && volume > this.#volume) rise = volume - this.#volume
      this.#volume = volume
    }
    const floor = this.#open !== null ? this.#open.t : this.#closedT + this.#intervalMs
    const t = Math.max(Math.floor(ts / this.#intervalMs) * this.#intervalMs, floor)
    /** @type {Bar | null} */
    let closed = null
    const open = this.#open
    if (open !== null && t > open.t) closed = this.#close()
    if (this.#open === null) {
      this.#open = { t, o: last, h: last, l: last, c: last, v: rise, n: 1 }
      return closed
    }
    const bar = this.#open
    if (last > bar.h) bar.h = last
    if (last < bar.l) bar.l = last
    bar.c = last
    bar.v += rise
    bar.n++
    return closed
  }

  /**
   * Closes the open bar if `now` (the series' clock, grace included by
   * the caller) is at or past its end.
   *
   * @param {number} now
   * @returns {Bar | null} the bar closed, if any
   */
  closeDue (now) {
    if (this.#open === null || now < this.#open.t + this.#intervalMs) return null
    return this.#close()
  }

  /** @returns {Bar} */
  #close () {
    const bar = /** @type {Bar} */ (this.#open)
    this.#open = null
    this.#closedT = bar.t
    return bar
  }
}

/**
 * Every bar these ticks make, closed and open, with no clock: what a
 * gateway's series of them holds (tests recompute bars with it).
 *
 * @param {number} intervalMs
 * @param {Tick[]} ticks in seq order
 * @param {Tick} [before] the tick before the first, when known
 * @returns {{closed: Bar[], open: Bar | null}}
 */
export function barsOf (intervalMs, ticks, before) {
  const b = new BarBuilder(intervalMs)
  if (before !== undefined) b.prime(before)
  /** @type {Bar[]} */
  const closed = []
  for (const t of ticks) {
    const c = b.tick(t)
    if (c !== null) closed.push(c)
  }
  return { closed, open: b.open }
}
