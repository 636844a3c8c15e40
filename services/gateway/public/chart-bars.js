// The bars of one symbol and interval, as the gateway streams them: a
// backfill of closed bars (`bars` frame), then updates of the open bar and
// each bar's final version (`bar` frames, `closed: true` exactly once per
// bar). Pure state, no DOM: the chart draws `bars`, the tests feed frames.

/**
 * @typedef {import('./client/index.js').Bar} Bar
 * @typedef {Bar & {closed: boolean}} SeriesBar a bar and whether it is final
 */

/** Bars kept: what a chart of a few hundred pixels can show. */
export const MAX_BARS = 120

/** @param {unknown} b */
const isBar = (b) => {
  const bar = /** @type {Record<string, unknown> | null} */ (b)
  return bar !== null && typeof bar === 'object' &&
    ['t', 'o', 'h', 'l', 'c'].every((k) => typeof bar[k] === 'number' && Number.isFinite(bar[k]))
}

export class ChartBars {
  /** @type {SeriesBar[]} oldest first, at most one open bar (the last) */
  #bars = []
  #max

  /** @param {number} [max] bars kept, the newest */
  constructor (max = MAX_BARS) {
    this.#max = max
  }

  /** @returns {readonly SeriesBar[]} oldest first; the last may be open */
  get bars () { return this.#bars }

  /**
   * A backfill replaces what is held: it is the gateway's answer to a
   * (re)subscription, so it is the truth from its first bar on.
   *
   * @param {{bars?: unknown[], current?: unknown}} frame a `bars` frame
   */
  backfill ({ bars = [], current }) {
    /** @type {SeriesBar[]} */
    const next = []
    for (const b of bars) {
      if (!isBar(b)) continue
      const bar = /** @type {Bar} */ (b)
      if (next.length && bar.t <= next[next.length - 1].t) continue // oldest first, one per start
      next.push({ ...bar, closed: true })
    }
    if (isBar(current)) {
      const open = /** @type {Bar} */ (current)
      if (!next.length || open.t > next[next.length - 1].t) next.push({ ...open, closed: false })
    }
    this.#bars = next
    this.#trim()
  }

  /**
   * A live update: the open bar replaced, or a bar closed (final), or a new
   * bar started. Updates older than the held ones, and any of a bar already
   * closed, change nothing.
   *
   * @param {{bar?: unknown, closed?: boolean}} frame a `bar` frame
   * @returns {boolean} whether the series changed
   */
  apply ({ bar: b, closed = false }) {
    if (!isBar(b)) return false
    const bar = /** @type {Bar} */ (b)
    const last = this.#bars[this.#bars.length - 1]
    const next = { ...bar, closed: closed === true }
    if (!last || bar.t > last.t) {
      // A new bar: the one before it can no longer change, whether or not
      // its closing frame was seen (a lost frame must not leave it open).
      if (last) last.closed = true
      this.#bars.push(next)
      this.#trim()
      return true
    }
    if (bar.t === last.t && !last.closed) {
      this.#bars[this.#bars.length - 1] = next
      return true
    }
    return false
  }

  /** Forgets every bar (another symbol or interval is shown). */
  clear () {
    this.#bars = []
  }

  #trim () {
    if (this.#bars.length > this.#max) this.#bars = this.#bars.slice(-this.#max)
  }
}
