// The receiver rules of docs/protocol.md "Order books", once for every
// client: one OrderBook per symbol at the depth it was subscribed at, kept
// by `book` snapshots and `levels` deltas, its checksum checked after every
// frame. Like receiver.js (the quotes' rules) it only judges and holds: the
// caller acts on the verdict (a resync is `unsub` + `sub` of the book).
//
// Plain ESM importing only ./book.js: the JS client links both (browsers
// load them from the page's client/ folder), k6 by relative path.

import { OrderBook, bookChecksum } from './book.js'

/** What BookReceiver#frame did with a `book` or `levels` frame. */
export const BookVerdict = Object.freeze({
  /** Applied, and the checksum matches: the held book is the gateway's. */
  APPLIED: 'applied',
  /** A `levels` frame that does not continue the held book (`prev` ≤ held < `seq` fails, another epoch, nothing held): not applied; resync. */
  GAP: 'gap',
  /** Applied, but the book held then differs from the gateway's (checksum): resync. */
  CHECKSUM_MISMATCH: 'checksum_mismatch',
  /** A `"sync":false` snapshot: the book is unknown, held empty until the feed's next snapshot comes by itself (no resync). */
  OUT_OF_SYNC: 'out_of_sync',
  /** The book awaits its fresh snapshot since resync(): `levels` are dropped until it comes. */
  RESYNCING: 'resyncing',
  /** Not a book held at that depth (not wanted, or a late frame of another depth): nothing changed. */
  IGNORED: 'ignored'
})

/**
 * @typedef {typeof BookVerdict[keyof typeof BookVerdict]} BookVerdictValue
 * @typedef {import('./book.js').Level} Level
 *
 * @typedef {object} BookFrame a `book` or `levels` frame as parsed
 * @property {'book' | 'levels'} op
 * @property {string} symbol
 * @property {number} depth
 * @property {number} seq
 * @property {number} [prev] levels: applies when prev ≤ the held seq < seq
 * @property {string} [epoch] book: always; levels: when the gateway names it
 * @property {boolean} [sync] false on a snapshot: the book is unknown
 * @property {number} [ts]
 * @property {Level[]} bids
 * @property {Level[]} asks
 * @property {number} checksum CRC-32 of the window after the frame
 *
 * @typedef {object} HeldBook what a client shows of a book; a new object per change
 * @property {string} symbol
 * @property {number} depth
 * @property {number} seq
 * @property {string} epoch
 * @property {boolean} sync false: unknown (shown empty) until the next snapshot
 * @property {number | null} ts of the last frame applied
 * @property {Level[]} bids best first
 * @property {Level[]} asks best first
 *
 * @typedef {object} Entry
 * @property {number} depth
 * @property {OrderBook | null} book null until the first snapshot
 * @property {HeldBook | null} view
 * @property {number | null} resyncing when resync() was called (caller's clock), null when not
 */

/**
 * Held books of one client, by the receiver rules:
 *
 * 1. want() names the depth a symbol is held at; frames of other depths
 *    (or symbols not wanted) are IGNORED.
 * 2. A `book` frame replaces the held book and ends a resync.
 * 3. A `levels` frame applies when `prev` ≤ the held seq < its `seq`, in
 *    the held epoch and while in sync; else GAP and nothing changes.
 * 4. After every frame applied the held book's checksum must equal the
 *    frame's, else CHECKSUM_MISMATCH. On GAP or CHECKSUM_MISMATCH the
 *    caller calls resync() and resubscribes the book; `levels` are then
 *    RESYNCING until the snapshot comes.
 * 5. When the client's link is lost or silent (its own liveness check),
 *    interrupt(): every book is held out of sync until its next snapshot.
 */
export class BookReceiver {
  /** @type {Map<string, Entry>} */
  #entries = new Map()

  /**
   * Holds a symbol's book at this depth from now on (a new depth forgets
   * what was held at the old one).
   *
   * @param {string} symbol
   * @param {number} depth
   */
  want (symbol, depth) {
    if (this.#entries.get(symbol)?.depth === depth) return
    this.#entries.set(symbol, { depth, book: null, view: null, resyncing: null })
  }

  /** @param {string} symbol no longer held */
  forget (symbol) {
    this.#entries.delete(symbol)
  }

  /** Forgets every book. */
  clear () {
    this.#entries.clear()
  }

  /**
   * @param {string} symbol
   * @returns {number | undefined} the depth it is held at
   */
  depthOf (symbol) {
    return this.#entries.get(symbol)?.depth
  }

  /** @returns {string[]} symbols wanted */
  get symbols () {
    return [...this.#entries.keys()]
  }

  /**
   * @param {string} symbol
   * @returns {HeldBook | undefined} the book held, once a snapshot came
   */
  book (symbol) {
    return this.#entries.get(symbol)?.view ?? undefined
  }

  /**
   * Rule 3's "then": the book is being resubscribed; `levels` are dropped
   * until the next snapshot. What is held stays readable meanwhile.
   *
   * @param {string} symbol
   * @param {number} [since] when (any clock the caller likes; see resyncingSince)
   */
  resync (symbol, since = 0) {
    const e = this.#entries.get(symbol)
    if (e !== undefined) e.resyncing = since
  }

  /**
   * The client's own link to the gateway is lost or silent: what it holds
   * may be old, so every book in sync is held as out of sync (empty), as
   * after a `"sync":false` snapshot, until the next snapshot.
   *
   * @returns {string[]} the symbols whose book was in sync
   */
  interrupt () {
    /** @type {string[]} */
    const flipped = []
    for (const [symbol, e] of this.#entries) {
      if (e.book === null || e.view === null || !e.view.sync) continue
      e.book.reset({})
      e.view = { ...e.view, sync: false, bids: [], asks: [] }
      flipped.push(symbol)
    }
    return flipped
  }

  /**
   * @param {string} symbol
   * @returns {number | undefined} the `since` of a pending resync, undefined when none
   */
  resyncingSince (symbol) {
    return this.#entries.get(symbol)?.resyncing ?? undefined
  }

  /**
   * Takes a `book` or `levels` frame.
   *
   * @param {BookFrame} frame
   * @returns {BookVerdictValue}
   */
  frame (frame) {
    const e = this.#entries.get(frame.symbol)
    if (e === undefined || e.depth !== frame.depth) return BookVerdict.IGNORED
    if (frame.op === 'book') return this.#snapshot(e, frame)
    if (e.resyncing !== null) return BookVerdict.RESYNCING
    const held = e.view
    if (e.book === null || held === null || !held.sync) return BookVerdict.GAP
    if (typeof frame.prev !== 'number' || !(frame.prev <= held.seq && held.seq < frame.seq)) return BookVerdict.GAP
    if (frame.epoch !== undefined && frame.epoch !== held.epoch) return BookVerdict.GAP
    e.book.apply(frame)
    return this.#held(e, frame, { seq: frame.seq, epoch: held.epoch, sync: true })
  }

  /**
   * @param {Entry} e
   * @param {BookFrame} frame
   */
  #snapshot (e, frame) {
    e.book ??= new OrderBook()
    e.book.reset(frame)
    e.resyncing = null
    const sync = frame.sync !== false
    const verdict = this.#held(e, frame, { seq: frame.seq, epoch: String(frame.epoch ?? ''), sync })
    return verdict === BookVerdict.APPLIED && !sync ? BookVerdict.OUT_OF_SYNC : verdict
  }

  /**
   * The new view, and rule 4. The checksum is of everything held, not of
   * the top `depth`: a frame that left more than the depth is caught too.
   *
   * @param {Entry} e
   * @param {BookFrame} frame
   * @param {{seq: number, epoch: string, sync: boolean}} at
   */
  #held (e, frame, { seq, epoch, sync }) {
    const book = /** @type {OrderBook} */ (e.book)
    const all = book.top(Infinity)
    e.view = { symbol: frame.symbol, depth: e.depth, seq, epoch, sync, ts: frame.ts ?? null, bids: all.bids.slice(0, e.depth), asks: all.asks.slice(0, e.depth) }
    return bookChecksum(all) === frame.checksum ? BookVerdict.APPLIED : BookVerdict.CHECKSUM_MISMATCH
  }
}
