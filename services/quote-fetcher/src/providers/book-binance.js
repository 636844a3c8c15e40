// A Binance-style diff-depth book ("How to manage a local order book
// correctly"): the stream's `depthUpdate` events are buffered from the
// subscription on; a REST snapshot (its `lastUpdateId`) is fetched after
// that; buffered events the snapshot already holds (`u <= lastUpdateId`) are
// dropped, the first one applied must straddle it (`U <= lastUpdateId + 1 <=
// u`), and every later one must follow the one before (`U <= u + 1` of it,
// or, on futures, `pu` equal to it). Anything else means an event was lost:
// the book is not known until a new snapshot. Pure: no I/O, no clock.

import { OrderBook } from '@wsps/protocol/book'

/** What an event or a snapshot did. */
export const DepthStep = Object.freeze({
  /** Kept until the snapshot (not in sync yet). */
  BUFFERED: 'buffered',
  /** The book is in sync and moved (or was just built from a snapshot). */
  APPLIED: 'applied',
  /** Older than the book (u at or below the last applied id): nothing changed. */
  DROPPED: 'dropped',
  /** An event is missing (or came out of order): the book is lost until a new snapshot. */
  GAP: 'gap',
  /** The snapshot is older than the first buffered event (or than the first event after it): fetch another. */
  STALE_SNAPSHOT: 'stale_snapshot'
})

/** Buffered events kept at most while the snapshot is awaited (the oldest go first; the snapshot is then stale and fetched again). */
const MAX_BUFFER = 10_000
/** Levels kept per side: a venue's diffs may add levels without end far from the top; the book published is its top. */
const MAX_LEVELS = 5000

/**
 * @typedef {import('@wsps/protocol/book').Level} Level
 * @typedef {{U: number, u: number, pu?: number, bids: Level[], asks: Level[]}} DepthEvent canonical levels
 * @typedef {{lastUpdateId: number, bids: Level[], asks: Level[]}} DepthSnapshot
 */

export class DepthBook {
  #book = new OrderBook()
  /** @type {DepthEvent[]} */
  #buffer = []
  /** The last update id applied; null: not in sync (buffering). @type {number | null} */
  #last = null
  /** The next event is the first after the snapshot: it straddles it, whatever its `pu`. */
  #first = false

  /** In sync: built from a snapshot that an event has joined (a snapshot alone may be older than the stream). */
  get synced () { return this.#last !== null && !this.#first }

  /** @param {number} depth @returns {{bids: Level[], asks: Level[]}} */
  top (depth) { return this.#book.top(depth) }

  /**
   * @param {DepthEvent} e
   * @returns {typeof DepthStep[keyof typeof DepthStep]}
   */
  event (e) {
    if (this.#last === null) {
      this.#buffer.push(e)
      if (this.#buffer.length > MAX_BUFFER) this.#buffer.shift()
      return DepthStep.BUFFERED
    }
    if (e.u <= this.#last) return DepthStep.DROPPED
    const first = this.#first
    if (!this.#follows(e, this.#last)) {
      this.lost()
      // The first event after the snapshot does not join it: the snapshot is older than the stream.
      return first ? DepthStep.STALE_SNAPSHOT : DepthStep.GAP
    }
    this.#apply(e)
    return DepthStep.APPLIED
  }

  /**
   * @param {DepthSnapshot} s
   * @returns {typeof DepthStep[keyof typeof DepthStep]} APPLIED (in sync), BUFFERED (nothing buffered joins it yet: in sync
   *   once the next event does), STALE_SNAPSHOT or GAP (within the buffer)
   */
  snapshot (s) {
    const pending = this.#buffer.filter((e) => e.u > s.lastUpdateId)
    // The first event left must straddle the snapshot, or events between
    // the snapshot and it were never received.
    if (pending.length && pending[0].U > s.lastUpdateId + 1) return DepthStep.STALE_SNAPSHOT
    this.#buffer = []
    this.#book.reset(s)
    this.#last = s.lastUpdateId
    this.#first = true
    for (const e of pending) {
      if (!this.#follows(e, /** @type {number} */ (this.#last))) {
        this.lost()
        return DepthStep.GAP
      }
      this.#apply(e)
    }
    return pending.length ? DepthStep.APPLIED : DepthStep.BUFFERED
  }

  /** Not in sync any more (a gap, the connection closed): buffer again from empty. */
  lost () {
    this.#last = null
    this.#buffer = []
    this.#book.reset({})
  }

  /**
   * @param {DepthEvent} e
   * @param {number} last
   */
  #follows (e, last) {
    // Futures say which event came before; spot events must overlap or touch.
    const ok = e.pu !== undefined && !this.#first ? e.pu === last : e.U <= last + 1 && last + 1 <= e.u
    this.#first = false
    return ok
  }

  /** @param {DepthEvent} e */
  #apply (e) {
    this.#book.apply(e)
    this.#last = e.u
    const { bids, asks } = this.#book.levels
    if (bids > MAX_LEVELS || asks > MAX_LEVELS) this.#book.reset(this.#book.top(MAX_LEVELS))
  }
}
