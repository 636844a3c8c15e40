// What waits to be written to one connection in the current fan-out pass,
// and the send-buffer watch over it: a queue that returns a verdict. It
// writes nothing and closes nothing; its Connection (connection.js) acts on
// the verdict.
//
// A reader over the send high-water mark is slow: its merge-mode updates
// are skipped (conflated: only the symbols are kept) and, once it drains,
// one `snap` of those symbols catches it up. Its order book frames are
// skipped alike, and a snapshot of each book's window catches it up. Slow
// for WSPS_SLOW_CLOSE_MS, the verdict is DISCONNECT.

import { binaryQuotesFrame, encodeSnap, quotesFrame } from './protocol.js'
import { batchBucket } from './metrics.js'
import { DISTINCT } from './delivery.js'
import { TextFrame } from './text-frame.js'

/**
 * @typedef {import('./delta.js').Update} Update
 * @typedef {import('./fanout.js').PassStats} PassStats
 * @typedef {import('./subscriptions.js').Subscriptions} Subscriptions
 *
 * @typedef {object} OutboxContext shared by every outbox of a gateway
 * @property {import('./metrics.js').GatewayMetrics} metrics
 * @property {number} sendHighWater buffered bytes above which a reader is slow
 * @property {number} slowCloseMs how long a reader may stay slow before a 4008
 * @property {(symbol: string, delivery: number, delayed: boolean) => string | null} latest the
 *   full quote a merge reader catching up gets for a symbol (the base of the
 *   next update it is handed), from the delayed timeline when it is served delayed
 * @property {(symbol: string, depth: number, delivery: number) => TextFrame | null} bookSnapshot the `book`
 *   snapshot of a book's window (depth and delivery) a reader catching up gets (null: no longer held)
 */

/** What the outbox tells its connection to do with this pass's updates. */
export const Verdict = Object.freeze({
  /** Not slow: write the catch-up snapshot (if any), then the updates. */
  WRITE: 0,
  /**
   * Slow: merge-mode updates were skipped (distinct ones are still
   * written); try again next pass.
   */
  SKIP: 1,
  /** Slow for too long: close the connection (Disconnect.SLOW_CONSUMER). */
  DISCONNECT: 2
})

export class Outbox {
  #ctx
  /** Its connection's: the delivery of each symbol, and whether it is served delayed. */
  #subs
  /**
   * @type {Update[] | null} updates of this pass, in order: one per symbol
   * in merge mode (unless it ticked again while the pass ran), every tick
   * in distinct mode
   */
  #pending = null
  /**
   * Symbols whose updates a slow reader skipped. When it catches up it gets
   * their latest full quote as one `snap` (conflation: only the latest
   * quote per symbol is kept, and nothing per update is allocated).
   * @type {Set<string> | null}
   */
  #stale = null
  /**
   * Books (symbol, depth) whose frames a slow reader skipped: each gets its
   * window's snapshot when it catches up (their frames no longer apply).
   * @type {Map<string, {symbol: string, depth: number}> | null}
   */
  #staleBooks = null
  /** Queued in the fan-out's list of connections to write. */
  #queued = false
  /** When the send buffer went over the high-water mark; 0 while it is not. */
  #slowSince = 0
  /** Its reader speaks the binary encoding: frames are built from the updates' Protobuf bytes. */
  #binary

  /**
   * @param {OutboxContext} ctx
   * @param {Subscriptions} subs read only
   * @param {boolean} [binary] its reader speaks the binary encoding (`wsps.v1.proto`)
   */
  constructor (ctx, subs, binary = false) {
    this.#ctx = ctx
    this.#subs = subs
    this.#binary = binary
  }

  /**
   * How far behind its reader is, for an operator's view.
   *
   * @param {number} now
   * @returns {{slowForMs: number, skipped: number}} slowForMs: how long over
   *   the high-water mark (0: not); skipped: symbols whose latest quote it
   *   gets as a snapshot when it catches up
   */
  lag (now) {
    return { slowForMs: this.#slowSince === 0 ? 0 : now - this.#slowSince, skipped: (this.#stale?.size ?? 0) + (this.#staleBooks?.size ?? 0) }
  }

  /**
   * An order book frame for this reader (books/book-feed.js): WRITE it now
   * (always, for a distinct subscription); or SKIP it, the reader being
   * slow (or the book skipped already): a
   * snapshot of the book's window follows when it catches up (catchUpBooks);
   * or DISCONNECT, slow for too long.
   *
   * @param {string} symbol
   * @param {number} depth
   * @param {number} buffered the connection's bufferedAmount
   * @param {number} now
   * @returns {number} a Verdict; after SKIP the connection queues itself (enqueue)
   */
  book (symbol, depth, buffered, now) {
    // Distinct books, as distinct quotes, are never skipped: the send cap bounds them.
    if (this.#subs.bookDelivery(symbol, depth) === DISTINCT) return Verdict.WRITE
    const key = `${symbol} ${depth}`
    const ctx = this.#ctx
    const skipped = this.#staleBooks?.has(key) === true
    if (!skipped && buffered <= ctx.sendHighWater) return Verdict.WRITE
    if (this.#slowSince === 0) {
      if (buffered > ctx.sendHighWater) {
        this.#slowSince = now
        ctx.metrics.slowClients.inc()
      }
    } else if (now - this.#slowSince >= ctx.slowCloseMs) {
      return Verdict.DISCONNECT
    }
    if (!skipped) (this.#staleBooks ??= new Map()).set(key, { symbol, depth })
    ctx.metrics.conflated.inc()
    return Verdict.SKIP
  }

  /**
   * @returns {boolean} true when it was not queued for the fan-out's next
   *   pass: the caller queues it (a book frame was skipped; the pass judges
   *   when it has caught up)
   */
  enqueue () {
    if (this.#queued) return false
    this.#queued = true
    return true
  }

  /**
   * A book no longer held (unsubscribed): its skipped frames are forgotten.
   *
   * @param {string} symbol
   * @param {number} depth
   */
  dropBook (symbol, depth) {
    this.#staleBooks?.delete(`${symbol} ${depth}`)
  }

  /**
   * A reader back under the high-water mark (verdict WRITE) gets a snapshot
   * of each book window it skipped. Taken before they are forgotten: taking
   * one may send the book's pending changes, which this reader still skips.
   *
   * @returns {TextFrame[] | null} the `book` frames to write, if any
   */
  catchUpBooks () {
    const stale = this.#staleBooks
    if (stale === null) return null
    /** @type {TextFrame[]} */
    const frames = []
    for (const { symbol, depth } of stale.values()) {
      const delivery = this.#subs.bookDelivery(symbol, depth)
      const f = delivery === undefined ? null : this.#ctx.bookSnapshot(symbol, depth, delivery)
      if (f !== null) frames.push(f)
    }
    this.#staleBooks = null
    return frames
  }

  /**
   * Takes a symbol's update for this pass (called by the fanout, through
   * the connection).
   *
   * @param {Update} update
   * @param {PassStats} stats
   * @returns {boolean} true when it was not queued for writing yet: the
   *   caller queues its connection
   */
  push (update, stats) {
    if (this.#stale !== null && this.#stale.has(update.symbol)) stats.conflated++
    else if (this.#pending === null) this.#pending = [update]
    else this.#pending.push(update)
    if (this.#queued) return false
    this.#queued = true
    return true
  }

  /**
   * Forgets what is queued for symbols (unsubscribed, or superseded by a
   * snapshot).
   *
   * @param {Iterable<string>} symbols
   */
  drop (symbols) {
    for (const s of symbols) this.#stale?.delete(s)
    if (this.#pending === null || this.#pending.length === 0) return
    const gone = new Set(symbols)
    this.#pending = this.#pending.filter((u) => !gone.has(u.symbol))
  }

  /**
   * Forgets everything queued: nothing can be written any more (the
   * connection is not open, or over its send cap).
   */
  clear () {
    this.#queued = false
    this.#pending = null
    this.#stale = null
    this.#staleBooks = null
  }

  /**
   * The pass reached this connection: is the reader slow, and for how long?
   * A slow reader's merge-mode updates are skipped here.
   *
   * @param {number} buffered the connection's bufferedAmount
   * @param {number} now
   * @param {PassStats} stats
   * @returns {number} a Verdict
   */
  verdict (buffered, now, stats) {
    this.#queued = false
    const ctx = this.#ctx
    if (buffered <= ctx.sendHighWater) {
      this.#leaveSlow()
      return Verdict.WRITE
    }
    if (this.#slowSince === 0) {
      this.#slowSince = now
      ctx.metrics.slowClients.inc()
    } else if (now - this.#slowSince >= ctx.slowCloseMs) {
      return Verdict.DISCONNECT
    }
    const pending = this.#pending
    if (pending !== null && pending.length) this.#conflate(pending, stats)
    // Stays queued: retried next pass.
    this.#queued = true
    return Verdict.SKIP
  }

  /**
   * A reader back under the high-water mark (verdict WRITE) gets the latest
   * full quote of each symbol it skipped, as one snapshot.
   *
   * @param {PassStats} stats
   * @returns {TextFrame | null} the `snap` frame to write first, if any
   */
  catchUp (stats) {
    const stale = this.#stale
    if (stale === null) return null
    const subs = this.#subs
    const quotes = []
    for (const s of stale) {
      const raw = this.#ctx.latest(s, subs.deliveryOf(s), subs.delayedOf(s))
      if (raw !== null) quotes.push(raw)
    }
    this.#stale = null
    if (quotes.length === 0) return null
    // One reader's: its text, and for a binary reader its twin, are its own.
    const text = new TextFrame(encodeSnap(quotes))
    const frame = this.#binary ? text.binaryTwin : text
    stats.snaps++
    stats.bytes += frame.length
    return frame
  }

  /**
   * Hands over this pass's updates as one `q` frame (after a verdict that
   * is not DISCONNECT).
   *
   * @param {number} tick the chunk of the pass (latency samples, Update.sentIn)
   * @param {PassStats} stats its `traced` gets the frame's traced updates
   * @returns {TextFrame | null} null: nothing pending
   */
  take (tick, stats) {
    const pending = this.#pending
    if (pending === null || pending.length === 0) return null
    const n = pending.length
    stats.frames++
    stats.quotes += n
    stats.batches[batchBucket(n)]++
    let frame
    if (n === 1) {
      // The common case (one symbol changed in the window): every subscriber
      // of the update shares one frame, framed once.
      const u = pending[0]
      frame = this.#binary ? u.protoFrame : u.frame
      if (u.sentIn(tick)) stats.sent.push(u)
      if (u.trace !== null) stats.traced.push(u)
    } else {
      for (const u of pending) {
        if (u.sentIn(tick)) stats.sent.push(u)
        if (u.trace !== null) stats.traced.push(u)
      }
      frame = this.#binary ? binaryQuotesFrame(pending) : quotesFrame(pending)
    }
    stats.bytes += frame.length
    pending.length = 0
    return frame
  }

  /**
   * A slow reader skips its merge-mode updates: only the symbols are kept,
   * for a snapshot when it catches up. Distinct-mode updates are never
   * merged nor skipped: they stay pending and are written (the send cap,
   * not conflation, bounds a distinct reader that falls behind: 4008).
   *
   * @param {Update[]} pending
   * @param {PassStats} stats
   */
  #conflate (pending, stats) {
    const subs = this.#subs
    const stale = this.#stale ??= new Set()
    let kept = 0
    for (const u of pending) {
      if (subs.deliveryOf(u.symbol) === DISTINCT) {
        pending[kept++] = u
      } else {
        stale.add(u.symbol)
        stats.conflated++
      }
    }
    pending.length = kept
  }

  #leaveSlow () {
    if (this.#slowSince !== 0) {
      this.#slowSince = 0
      this.#ctx.metrics.slowClients.dec()
    }
  }

  /** The connection closed: releases what the outbox held. */
  dispose () {
    this.#leaveSlow()
    this.#pending = null
    this.#stale = null
    this.#staleBooks = null
  }
}
