// One symbol's order book on this gateway: a replica of the book in Redis,
// kept by the seq'd messages of its channel, and a window per depth some
// connection holds, per mode. The changes of a batching window become, per
// merge window, one frame serialized once for all its subscribers: the
// levels that changed in the window since its last frame (those leaving it
// as deletes, those entering with their size; sizes are absolute, so the
// last change of a level wins) and the checksum of the window after them
// (docs/protocol.md, Order books). A distinct window gets each change as
// its own frame, at once; a window with a maxRate at most that many frames
// a second, the changes in between merged.

import { ServerOp } from '@wsps/protocol'
import { OrderBook, bookChecksum, windowDelta } from '@wsps/protocol/book'
import { DISTINCT, FULL_RATE } from '../delivery.js'
import { encodeBook, encodeLevels } from '../protocol.js'
import { TextFrame } from '../text-frame.js'

/**
 * @typedef {import('@wsps/protocol/book').Level} Level
 * @typedef {import('../connection.js').Connection} Client
 *
 * @typedef {object} BookState a whole book, as read from Redis (readBook)
 * @property {number} seq
 * @property {string} epoch
 * @property {number} ts
 * @property {boolean} sync false: the feed lost its sequence; no levels until its next snapshot
 * @property {Level[]} bids best first
 * @property {Level[]} asks best first
 *
 * @typedef {object} BookMessage one change as published (the channel and the book's history)
 * @property {number} seq
 * @property {string} epoch
 * @property {number} ts
 * @property {boolean} [snapshot] the levels are the whole book
 * @property {boolean} [sync] false: out of sync, no levels
 * @property {Level[]} bids
 * @property {Level[]} asks
 *
 * @typedef {object} Window what the subscribers of one depth and delivery hold
 * @property {number} depth
 * @property {number} delivery DISTINCT: every change its own frame, at once; FULL_RATE: merged per
 *   flush; a maxRate: merged, at most that many frames a second (delivery.js)
 * @property {{bids: Level[], asks: Level[]}} top
 * @property {number} seq the seq of the last change of this window (a delta's `prev`)
 * @property {string} epoch
 * @property {number} ts
 * @property {boolean} sync
 * @property {number} at the feed's count of changes its subscribers hold (made when added: nothing to flush to them)
 * @property {number} sentAt when its last frame went (a maxRate's clock)
 * @property {NodeJS.Timeout | null} timer a maxRate's next frame, deferred
 * @property {boolean} restart the deferred frame is a snapshot
 * @property {Set<Client>} clients
 */

/**
 * @param {number} depth
 * @param {number} delivery
 */
const windowKey = (depth, delivery) => `${depth} ${delivery}`

/** What onMessage() did with a message. */
export const Applied = Object.freeze({
  APPLIED: 'applied',
  /** At or below the seq held: a duplicate (e.g. read already with the book). */
  OLD: 'old',
  /** It skips changes, or belongs to another epoch without being its snapshot: the book must be read again. */
  GAP: 'gap'
})

export class BookFeed {
  #symbol
  #book = new OrderBook()
  #seq = 0
  #epoch = ''
  #ts = 0
  #sync = true
  /** @type {Map<string, Window>} by windowKey */
  #windows = new Map()
  #onChange
  /** Changed since the last flush(). */
  #dirty = false
  /** The book started over since the last flush(): windows get a snapshot. */
  #restart = false
  /** Changes so far (Window.at). */
  #changes = 0

  /**
   * @param {string} symbol
   * @param {(feed: BookFeed) => void} onChange the book changed: flush() it
   *   (called once until that flush)
   */
  constructor (symbol, onChange) {
    this.#symbol = symbol
    this.#onChange = onChange
  }

  get seq () { return this.#seq }
  get epoch () { return this.#epoch }
  /** @returns {boolean} a book was read or fed (it may be out of sync) */
  get known () { return this.#epoch !== '' }

  /** @returns {number} connections holding the book at some depth */
  get subscribers () {
    let n = 0
    for (const w of this.#windows.values()) n += w.clients.size
    return n
  }

  /**
   * Takes the book as read. Windows held already get what changed (the same
   * epoch and sync: a delta; else a snapshot), so a book read again after a
   * lost message or a reconnect reaches its subscribers as one more update.
   *
   * A book read behind the one held in the same epoch, or at its seq with
   * other levels, means Redis lost writes this gateway had delivered (a
   * failover to a replica that had not got them): the seqs after it will be
   * used again for other changes, so the book as read replaces what is held,
   * as a snapshot, and those changes then apply to it.
   *
   * @param {BookState} state
   * @returns {boolean} whether the book read was behind (rewound)
   */
  load (state) {
    const same = state.epoch === this.#epoch && state.sync === this.#sync
    if (same && state.seq > this.#seq) {
      this.#take(state, false)
      return false
    }
    if (!same) {
      this.#take(state, true)
      return false
    }
    if (state.seq === this.#seq && this.#holds(state)) return false
    this.#take(state, true)
    return true
  }

  /**
   * @param {BookState} state
   * @param {boolean} restart
   */
  #take (state, restart) {
    this.#book.reset(state)
    this.#at(state)
    this.#publish(restart)
  }

  /**
   * @param {BookState} state
   * @returns {boolean} the book held has exactly these levels
   */
  #holds (state) {
    const held = this.#book.top(Infinity)
    return JSON.stringify([held.bids, held.asks]) === JSON.stringify([state.bids, state.asks])
  }

  /**
   * The book is gone from Redis (expired): subscribers hold an empty book,
   * out of sync, until it is fed again.
   */
  lost () {
    if (!this.#sync) return
    this.#book.reset({})
    this.#sync = false
    this.#ts = Date.now()
    this.#publish(true)
  }

  /**
   * This gateway's feed of the book is interrupted (its broker link lost or
   * silent): what the subscribers hold may be old, so they hold an empty
   * book, out of sync, until the book is read again (load()).
   *
   * @returns {boolean} whether they were told (false: out of sync already)
   */
  interrupt () {
    if (!this.#sync) return false
    this.#book.reset({})
    this.#sync = false
    this.#publish(true)
    return true
  }

  /**
   * @param {BookMessage} msg
   * @returns {typeof Applied[keyof typeof Applied]}
   */
  onMessage (msg) {
    if (msg.epoch === this.#epoch && msg.seq <= this.#seq) return Applied.OLD
    const restart = msg.snapshot === true || msg.sync === false
    // A delta changes a book known here, never an emptied one.
    if (!restart && !this.#sync) return Applied.GAP
    if (restart ? msg.seq <= this.#seq && msg.epoch === this.#epoch : msg.epoch !== this.#epoch || msg.seq !== this.#seq + 1) {
      return Applied.GAP
    }
    const epochChanged = msg.epoch !== this.#epoch
    const syncChanged = (msg.sync !== false) !== this.#sync
    if (restart) this.#book.reset(msg)
    else this.#book.apply(msg)
    this.#at({ ...msg, sync: msg.sync !== false })
    this.#publish(epochChanged || syncChanged || msg.snapshot === true)
    return Applied.APPLIED
  }

  /**
   * A connection holds the book at this depth from now on, in the mode its
   * subscription says; it gets the window's snapshot now.
   *
   * @param {Client} client
   * @param {number} depth
   */
  add (client, depth) {
    const delivery = client.subscriptions.bookDelivery(this.#symbol, depth) ?? FULL_RATE
    // Windows held already then hold the book as it is now (but a maxRate's, which holds what it sent last).
    if (this.#dirty) this.flush()
    const key = windowKey(depth, delivery)
    let w = this.#windows.get(key)
    if (w === undefined) {
      w = {
        depth,
        delivery,
        top: this.#book.top(depth),
        seq: this.#seq,
        epoch: this.#epoch,
        ts: this.#ts,
        sync: this.#sync,
        at: this.#changes,
        sentAt: Date.now(),
        timer: null,
        restart: false,
        clients: new Set()
      }
      this.#windows.set(key, w)
    }
    w.clients.add(client)
    client.sendBook(this.#symbol, depth, new TextFrame(this.#snapshot(depth, w)), ServerOp.BOOK)
  }

  /**
   * A snapshot of the window of this depth and delivery as its readers
   * hold it now (a slow reader catching up; distinct ones are never skipped).
   *
   * @param {number} depth
   * @param {number} delivery
   * @returns {TextFrame | null} null: nobody holds it
   */
  snapshotOf (depth, delivery) {
    if (this.#dirty) this.flush()
    const w = this.#windows.get(windowKey(depth, delivery))
    return w === undefined ? null : new TextFrame(this.#snapshot(depth, w))
  }

  /**
   * @param {Client} client
   * @param {number} depth
   */
  remove (client, depth) {
    for (const [key, w] of this.#windows) {
      if (w.depth !== depth || !w.clients.delete(client)) continue
      client.forgetBook(this.#symbol, depth)
      if (w.clients.size === 0) {
        if (w.timer !== null) clearTimeout(w.timer)
        this.#windows.delete(key)
      }
    }
  }

  /** @param {{seq: number, epoch: string, ts: number, sync: boolean}} at */
  #at ({ seq, epoch, ts, sync }) {
    this.#seq = seq
    this.#epoch = epoch
    this.#ts = ts
    this.#sync = sync
  }

  /**
   * @param {number} depth
   * @param {Window} w
   */
  #snapshot (depth, w) {
    return encodeBook(this.#symbol, depth, { seq: w.seq, epoch: w.epoch, ts: w.ts, sync: w.sync }, w.top, bookChecksum(w.top))
  }

  /** @param {boolean} restart */
  #publish (restart) {
    this.#changes++
    for (const w of this.#windows.values()) if (w.delivery === DISTINCT) this.#sendWindow(w, restart)
    this.#restart ||= restart
    if (this.#dirty) return
    this.#dirty = true
    this.#onChange(this)
  }

  /**
   * Sends each merge window (at full rate or a maxRate) what the changes
   * since the last flush did to it (sendWindow).
   */
  flush () {
    if (!this.#dirty) return
    const restart = this.#restart
    this.#dirty = false
    this.#restart = false
    for (const w of this.#windows.values()) if (w.delivery !== DISTINCT) this.#sendWindow(w, restart)
  }

  /**
   * Sends a window what changed since its last frame: a snapshot when the
   * book started over (a snapshot of the feed, a new epoch, sync lost or
   * back), else its changed levels, or nothing when it did not change.
   *
   * @param {Window} w
   * @param {boolean} restart
   */
  #sendWindow (w, restart) {
    if (w.at === this.#changes) return
    const depth = w.depth
    const top = this.#book.top(depth)
    restart ||= w.restart
    const delta = restart ? null : windowDelta(w.top, top)
    if (delta !== null && delta.bids.length === 0 && delta.asks.length === 0) {
      w.at = this.#changes
      return
    }
    if (w.delivery > 0) {
      // A maxRate: the frame waits for its turn; what changes meanwhile joins it.
      const wait = w.sentAt + 1000 / w.delivery - Date.now()
      if (wait > 0) {
        w.restart = restart
        if (w.timer === null) {
          w.timer = setTimeout(() => {
            w.timer = null
            this.#sendWindow(w, false)
          }, wait)
          // A closing gateway does not wait for a slow rate's next frame.
          w.timer.unref()
        }
        return
      }
      w.sentAt = Date.now()
      w.restart = false
    }
    w.at = this.#changes
    const prev = w.seq
    w.top = top
    w.seq = this.#seq
    w.ts = this.#ts
    if (delta === null) {
      w.epoch = this.#epoch
      w.sync = this.#sync
      this.#send(w, new TextFrame(this.#snapshot(depth, w)), ServerOp.BOOK)
      return
    }
    this.#send(w, new TextFrame(encodeLevels(this.#symbol, depth, this.#seq, prev, this.#ts, delta, bookChecksum(top))), ServerOp.LEVELS)
  }

  /**
   * @param {Window} w
   * @param {TextFrame} frame one serialization for all of them
   * @param {typeof ServerOp.BOOK | typeof ServerOp.LEVELS} op
   */
  #send (w, frame, op) {
    for (const c of w.clients) c.sendBook(this.#symbol, w.depth, frame, op)
  }
}
