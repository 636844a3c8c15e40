// A seeded random walk of one order book around a mid, for the book
// section's publisher (book-publisher.js): what a busy book does, changes
// concentrated near the top. Pure: no clock, no I/O.
//
// Prices are integer ticks of 0.01 (written as canonical decimals: 10001
// ticks -> "100.01"); bids sit at mid-1 .. mid-levels, asks at mid+1 ..
// mid+levels, so the book never crosses. Each step is one update:
//
// - with probability `moveP` the mid moves one tick up or down: the best
//   level on the side it moves into goes, a new best comes on the other
//   side, and the book's far ends move along (4 levels change);
// - otherwise one level of one side changes, its distance from the best
//   drawn from a geometric law (`topP`: P(distance >= d) = (1 - topP)^d,
//   ~1.7% past 25 levels at the default): a present level is deleted with
//   probability `deleteP` or gets a new size, an absent one comes back.

/** @typedef {[string, string]} Level */

/** The walk's defaults (BookWalk options). */
export const WALK_DEFAULTS = Object.freeze({
  /** levels per side the book spans (each present at start) */
  levels: 100,
  /** share of updates that move the mid */
  moveP: 0.05,
  /** the geometric law of a changed level's distance from the best */
  topP: 0.15,
  /** share of changes to a present level that delete it */
  deleteP: 0.2
})

/**
 * A tiny LCG (as publisher.js uses): the same seed, the same walk.
 *
 * @param {number} seed
 * @returns {() => number} uniform in [0, 1)
 */
export function lcg (seed) {
  let s = (seed >>> 0) & 0x7fffffff
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff
    return s / 0x80000000
  }
}

/** @param {number} ticks */
export const priceOf = (ticks) => String(ticks / 100)

export class BookWalk {
  /** @type {Map<number, string>} ticks -> size */
  #bids = new Map()
  /** @type {Map<number, string>} */
  #asks = new Map()
  #mid
  #rand
  #o

  /**
   * @param {object} options
   * @param {number} options.seed
   * @param {number} options.mid ticks
   * @param {number} [options.levels]
   * @param {number} [options.moveP]
   * @param {number} [options.topP]
   * @param {number} [options.deleteP]
   */
  constructor ({ seed, mid, ...rest }) {
    this.#o = { ...WALK_DEFAULTS, ...rest }
    if (!(this.#o.levels >= 1 && this.#o.topP > 0 && this.#o.topP <= 1)) throw new TypeError('BookWalk: levels >= 1 and 0 < topP <= 1')
    this.#rand = lcg(seed)
    this.#mid = mid
    for (let d = 0; d < this.#o.levels; d++) {
      this.#bids.set(mid - 1 - d, this.#size())
      this.#asks.set(mid + 1 + d, this.#size())
    }
  }

  /** @returns {number} the mid, ticks */
  get mid () {
    return this.#mid
  }

  /** @returns {{bids: Level[], asks: Level[]}} the whole book, best first (a snapshot) */
  snapshot () {
    const side = (/** @type {Map<number, string>} */ m, /** @type {number} */ dir) =>
      [...m].sort((a, b) => dir * (a[0] - b[0])).map(([t, s]) => /** @type {Level} */ ([priceOf(t), s]))
    return { bids: side(this.#bids, -1), asks: side(this.#asks, 1) }
  }

  /** @returns {{bids: Level[], asks: Level[]}} one update's levels (absolute sizes, "0" deletes), applied to the walk's book */
  next () {
    /** @type {{bids: Level[], asks: Level[]}} */
    const out = { bids: [], asks: [] }
    const set = (/** @type {'bids' | 'asks'} */ side, /** @type {number} */ t, /** @type {string} */ size) => {
      const m = side === 'bids' ? this.#bids : this.#asks
      if (size === '0') {
        if (!m.delete(t)) return
      } else {
        m.set(t, size)
      }
      out[side].push([priceOf(t), size])
    }
    const L = this.#o.levels
    const m = this.#mid
    if (this.#rand() < this.#o.moveP) {
      if (this.#rand() < 0.5) {
        set('asks', m + 1, '0')
        set('bids', m - L, '0')
        set('bids', m, this.#size())
        set('asks', m + 1 + L, this.#size())
        this.#mid = m + 1
      } else {
        set('bids', m - 1, '0')
        set('asks', m + L, '0')
        set('asks', m, this.#size())
        set('bids', m - 1 - L, this.#size())
        this.#mid = m - 1
      }
      return out
    }
    const side = this.#rand() < 0.5 ? 'bids' : 'asks'
    const d = Math.min(L - 1, Math.floor(Math.log(1 - this.#rand()) / Math.log(1 - this.#o.topP)))
    const t = side === 'bids' ? m - 1 - d : m + 1 + d
    const present = (side === 'bids' ? this.#bids : this.#asks).has(t)
    set(side, t, present && this.#rand() < this.#o.deleteP ? '0' : this.#size())
    return out
  }

  /** @returns {string} a canonical size: 1..1000, a quarter of them with .5 */
  #size () {
    const n = 1 + Math.floor(this.#rand() * 1000)
    return this.#rand() < 0.25 ? `${n}.5` : String(n)
  }
}
