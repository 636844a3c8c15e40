// A Kraken-style book (WebSocket v2 `book` channel): a snapshot, then
// updates, each carrying a CRC32 checksum of the venue's top 10 levels.
// Kraken does not delete levels that an insert pushes out of the
// subscribed depth: the local book is cut to that depth after every
// message, or the checksum (and the book) goes wrong. A checksum that does
// not match means the local book is not the venue's: it is lost until the
// venue sends a new snapshot. Pure: no I/O, no clock.

import { crc32, OrderBook } from '@wsps/protocol/book'

/** What a message did. */
export const KrakenStep = Object.freeze({
  /** The book is in sync and moved (or was just built from a snapshot). */
  APPLIED: 'applied',
  /** An update before any snapshot: nothing to apply it to. */
  DROPPED: 'dropped',
  /** The venue's checksum is not the local book's: lost until a new snapshot. */
  CHECKSUM: 'checksum'
})

/** Levels per side the venue's checksum covers. */
const CHECKSUM_LEVELS = 10

/**
 * @typedef {import('@wsps/protocol/book').Level} Level
 * @typedef {{price: string, qty: string}} RawLevel the venue's own text of each number (its checksum is over it)
 * @typedef {{bids: RawLevel[], asks: RawLevel[], checksum: number}} KrakenMessage
 */

/**
 * One level in the checksum's form: the number's text without its `.` and
 * without leading zeros ("0.05005" -> "5005").
 * @param {string} text
 */
const digits = (text) => text.replace('.', '').replace(/^0+/, '')

/**
 * Kraken's checksum of a book: asks best (lowest) first, then bids best
 * first, the top 10 of each, each level price then qty in that form, all
 * concatenated; CRC32 of it.
 * @param {{bids: RawLevel[], asks: RawLevel[]}} top best first, at least the top 10
 * @returns {number} unsigned 32-bit
 */
export function krakenChecksum ({ bids, asks }) {
  const side = (/** @type {RawLevel[]} */ levels) => levels.slice(0, CHECKSUM_LEVELS).map((l) => digits(l.price) + digits(l.qty)).join('')
  return crc32(side(asks) + side(bids))
}

export class KrakenBook {
  #book = new OrderBook()
  /** The venue's text of each level held, by canonical price. @type {{bids: Map<string, RawLevel>, asks: Map<string, RawLevel>}} */
  #raw = { bids: new Map(), asks: new Map() }
  #depth
  #synced = false

  /** @param {number} depth the subscribed depth: the book is cut to it */
  constructor (depth) {
    this.#depth = depth
  }

  get synced () { return this.#synced }

  /** @param {number} depth @returns {{bids: Level[], asks: Level[]}} */
  top (depth) { return this.#book.top(depth) }

  /**
   * @param {{bids: Level[], asks: Level[], raw: {bids: RawLevel[], asks: RawLevel[]}, checksum: number}} m the levels canonical and as sent
   * @returns {typeof KrakenStep[keyof typeof KrakenStep]}
   */
  snapshot (m) {
    this.#book.reset({})
    this.#raw.bids.clear()
    this.#raw.asks.clear()
    this.#synced = true
    return this.#take(m)
  }

  /**
   * @param {{bids: Level[], asks: Level[], raw: {bids: RawLevel[], asks: RawLevel[]}, checksum: number}} m
   * @returns {typeof KrakenStep[keyof typeof KrakenStep]}
   */
  update (m) {
    if (!this.#synced) return KrakenStep.DROPPED
    return this.#take(m)
  }

  /** Not in sync any more (a bad checksum, the connection closed). */
  lost () {
    this.#synced = false
    this.#book.reset({})
    this.#raw.bids.clear()
    this.#raw.asks.clear()
  }

  /** @param {{bids: Level[], asks: Level[], raw: {bids: RawLevel[], asks: RawLevel[]}, checksum: number}} m */
  #take (m) {
    for (const side of /** @type {const} */ (['bids', 'asks'])) {
      m[side].forEach(([p, s], i) => {
        if (s === '0') this.#raw[side].delete(p)
        else this.#raw[side].set(p, m.raw[side][i])
      })
    }
    this.#book.apply(m)
    // Levels an insert pushed below the subscribed depth are gone: Kraken sends no delete for them.
    const top = this.#book.top(this.#depth)
    const { bids, asks } = this.#book.levels
    if (bids > top.bids.length || asks > top.asks.length) {
      this.#book.reset(top)
      for (const side of /** @type {const} */ (['bids', 'asks'])) {
        const keep = new Set(top[side].map(([p]) => p))
        for (const p of this.#raw[side].keys()) if (!keep.has(p)) this.#raw[side].delete(p)
      }
    }
    const ten = this.#book.top(CHECKSUM_LEVELS)
    const raw = (/** @type {'bids' | 'asks'} */ side) => ten[side].map(([p]) => /** @type {RawLevel} */ (this.#raw[side].get(p)))
    if (krakenChecksum({ bids: raw('bids'), asks: raw('asks') }) !== m.checksum) {
      this.lost()
      return KrakenStep.CHECKSUM
    }
    return KrakenStep.APPLIED
  }
}
