// Order books, once for every party: the fetcher that stores them, the
// gateway that windows them, and every client that holds one. Prices and
// sizes are decimal strings in one canonical form, so a level's identity is
// its string and a book's checksum is the same wherever it is computed
// (docs/protocol.md, "Order books").
//
// Plain ESM without imports, like receiver.js: browsers load it as /book.js.

/** The depths a book subscription may ask for (`"book":N`). */
export const BOOK_DEPTHS = Object.freeze([10, 25, 100, 500])

/** Most levels kept per side; a book holds the best ones. */
export const BOOK_MAX_LEVELS = 1000

/** Most significant digits of a price or size: each is then exactly one double, so ordering by number is exact. */
export const DECIMAL_MAX_DIGITS = 15

const DECIMAL = /^(\d+)(?:\.(\d+))?$/

/**
 * The canonical form of a non-negative decimal string: no leading zeros in
 * the integer part, no trailing zeros in the fraction, no empty fraction
 * ("007.50" -> "7.5", "0.000" -> "0").
 *
 * @param {unknown} text
 * @returns {string | null} null: not a decimal string, or more than DECIMAL_MAX_DIGITS significant digits
 */
export function decimal (text) {
  if (typeof text !== 'string' || text.length > 64) return null
  const m = DECIMAL.exec(text)
  if (m === null) return null
  const int = m[1].replace(/^0+(?=\d)/, '')
  const frac = (m[2] ?? '').replace(/0+$/, '')
  const digits = (int === '0' ? '' : int) + frac
  if (digits.replace(/^0+/, '').length > DECIMAL_MAX_DIGITS) return null
  return frac === '' ? int : `${int}.${frac}`
}

/**
 * Orders two canonical decimals exactly (no floating point).
 *
 * @param {string} a
 * @param {string} b
 * @returns {number} < 0, 0 or > 0 as a is below, equal to or above b
 */
export function compareDecimal (a, b) {
  const [ai, af = ''] = a.split('.')
  const [bi, bf = ''] = b.split('.')
  if (ai.length !== bi.length) return ai.length - bi.length
  if (ai !== bi) return ai < bi ? -1 : 1
  return af === bf ? 0 : af < bf ? -1 : 1
}

/** @typedef {[price: string, size: string]} Level canonical decimals; size "0" (in a delta) deletes the level */

/** What a side's order is: bids best (highest) first, asks best (lowest) first. */
export const Side = Object.freeze({ BIDS: 'bids', ASKS: 'asks' })

/**
 * One side of a book: levels by price, kept sorted best first.
 */
class BookSide {
  /** @type {string[]} prices, best first */
  #prices = []
  /** @type {Map<string, string>} price -> size */
  #sizes = new Map()
  #sign

  /** @param {1 | -1} sign 1: best is highest (bids), -1: best is lowest (asks) */
  constructor (sign) {
    this.#sign = sign
  }

  /**
   * @param {string} price canonical
   * @param {string} size canonical; "0" deletes
   */
  set (price, size) {
    const had = this.#sizes.has(price)
    if (size === '0') {
      if (!had) return
      this.#sizes.delete(price)
      this.#prices.splice(this.#find(price), 1)
      return
    }
    this.#sizes.set(price, size)
    if (!had) this.#prices.splice(this.#find(price), 0, price)
  }

  /**
   * @param {string} price
   * @returns {number} the index of price, or where it goes
   */
  #find (price) {
    let lo = 0
    let hi = this.#prices.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.#sign * compareDecimal(this.#prices[mid], price) > 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /**
   * @param {number} n
   * @returns {Level[]} the best n levels, best first
   */
  top (n) {
    return this.#prices.slice(0, n).map((p) => [p, /** @type {string} */ (this.#sizes.get(p))])
  }

  /** @returns {string | undefined} the best price */
  best () { return this.#prices[0] }

  get size () { return this.#prices.length }

  clear () {
    this.#prices = []
    this.#sizes.clear()
  }
}

/**
 * An order book: bids and asks by price. The fetcher's store, the
 * gateway's replica and every client's local book are one of these.
 */
export class OrderBook {
  #bids = new BookSide(1)
  #asks = new BookSide(-1)

  /**
   * Applies levels in order (absolute sizes; "0" deletes).
   *
   * @param {{bids?: Level[], asks?: Level[]}} levels canonical
   */
  apply ({ bids = [], asks = [] }) {
    for (const [p, s] of bids) this.#bids.set(p, s)
    for (const [p, s] of asks) this.#asks.set(p, s)
  }

  /**
   * Replaces the whole book.
   *
   * @param {{bids?: Level[], asks?: Level[]}} levels canonical
   */
  reset (levels) {
    this.#bids.clear()
    this.#asks.clear()
    this.apply(levels)
  }

  /**
   * @param {number} depth
   * @returns {{bids: Level[], asks: Level[]}} the best `depth` levels of each side, best first
   */
  top (depth) {
    return { bids: this.#bids.top(depth), asks: this.#asks.top(depth) }
  }

  /** @returns {boolean} the best bid is at or above the best ask */
  crossed () {
    const bid = this.#bids.best()
    const ask = this.#asks.best()
    return bid !== undefined && ask !== undefined && compareDecimal(bid, ask) >= 0
  }

  /** @returns {{bids: number, asks: number}} levels per side */
  get levels () {
    return { bids: this.#bids.size, asks: this.#asks.size }
  }
}

/**
 * What changes from one window of a book to the next: levels that left it
 * (size "0"), entered it or changed size. Applied to `before` it gives
 * `after` exactly.
 *
 * @param {{bids: Level[], asks: Level[]}} before
 * @param {{bids: Level[], asks: Level[]}} after
 * @returns {{bids: Level[], asks: Level[]}}
 */
export function windowDelta (before, after) {
  return { bids: sideDelta(before.bids, after.bids), asks: sideDelta(before.asks, after.asks) }
}

/**
 * @param {Level[]} before
 * @param {Level[]} after
 * @returns {Level[]} deletions first, then sets
 */
function sideDelta (before, after) {
  const now = new Map(after)
  /** @type {Level[]} */
  const out = []
  for (const [p] of before) if (!now.has(p)) out.push([p, '0'])
  const was = new Map(before)
  for (const [p, s] of after) if (was.get(p) !== s) out.push([p, s])
  return out
}

/** CRC-32 (IEEE 802.3, the one of zlib, PNG and gzip) lookup table. */
const CRC_TABLE = (() => {
  const t = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1
    t[n] = c >>> 0
  }
  return t
})()

/**
 * @param {string} text ASCII (canonical decimals and separators)
 * @returns {number} CRC-32 of its bytes, an unsigned 32-bit integer
 */
export function crc32 (text) {
  let c = 0xFFFFFFFF
  for (let i = 0; i < text.length; i++) c = CRC_TABLE[(c ^ text.charCodeAt(i)) & 0xFF] ^ (c >>> 8)
  return (c ^ 0xFFFFFFFF) >>> 0
}

/**
 * A book's checksum as a client holds it: CRC-32 of its canonical string,
 * bids best first then asks best first, each level `price:size`, levels
 * joined by `,` and the two sides by `|` (docs/protocol.md has an example).
 *
 * @param {{bids: Level[], asks: Level[]}} window
 * @returns {number}
 */
export function bookChecksum ({ bids, asks }) {
  return crc32(`${bids.map(([p, s]) => `${p}:${s}`).join(',')}|${asks.map(([p, s]) => `${p}:${s}`).join(',')}`)
}
