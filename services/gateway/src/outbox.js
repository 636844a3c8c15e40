// What one connection is sent: the symbols it receives, the updates queued
// for it in the current fan-out pass, and the send-buffer watch that
// conflates a slow reader's updates and cuts it off when it stays slow.
// Writes go through its Connection.

import { CloseCode } from '@wsps/protocol'
import { encodeQuotes, encodeSnap } from './protocol.js'
import { TextFrame } from './text-frame.js'

/**
 * @typedef {import('./delta.js').Update} Update
 * @typedef {import('./fanout.js').PassStats} PassStats
 *
 * @typedef {object} OutboxContext shared by every outbox of a gateway
 * @property {import('./metrics.js').GatewayMetrics} metrics
 * @property {number} sendHighWater buffered bytes above which a reader is slow
 * @property {number} slowCloseMs how long a reader may stay slow before a 4008
 * @property {(symbol: string, delivery: number) => string | null} latest the
 *   full quote a merge reader catching up gets for a symbol (the base of the
 *   next update it is handed)
 */

/**
 * A subscription's delivery, as one number: DISTINCT, FULL_RATE (merge, on
 * every pass) or a merge mode maxRate in updates per second.
 */
export const DISTINCT = -1
export const FULL_RATE = 0

export class Outbox {
  #conn
  #ctx
  /**
   * Subscribed symbols, in order. An array, not a Set: at the usual few
   * dozen symbols it costs a third of the memory (idle connections are
   * what a gateway holds most of); see holds() for large lists.
   * @type {string[]}
   */
  #symbols = []
  /**
   * Delivery of the symbols not at FULL_RATE; null while every one is (the
   * default costs no map).
   * @type {Map<string, number> | null}
   */
  #delivery = null
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
  /** Queued in the fan-out's list of outboxes to write. */
  #queued = false
  /** When the send buffer went over the high-water mark; 0 while it is not. */
  #slowSince = 0

  /**
   * @param {import('./connection.js').Connection} conn
   * @param {OutboxContext} ctx
   */
  constructor (conn, ctx) {
    this.#conn = conn
    this.#ctx = ctx
  }

  /** @returns {readonly string[]} the subscribed symbols, in order */
  get symbols () { return this.#symbols }

  /**
   * A membership test for the subscribed symbols: a scan for short lists,
   * a Set built once for long ones (WSPS_MAX_SUBSCRIPTIONS may be 10,000).
   *
   * @returns {(symbol: string) => boolean}
   */
  holds () {
    const subs = this.#symbols
    if (subs.length <= 32) return (s) => subs.includes(s)
    const set = new Set(subs)
    return (s) => set.has(s)
  }

  /**
   * @param {string} symbol
   * @returns {number} its delivery (DISTINCT, FULL_RATE or a maxRate)
   */
  deliveryOf (symbol) {
    return this.#delivery?.get(symbol) ?? FULL_RATE
  }

  /**
   * Adds symbols not held yet (the caller checked).
   *
   * @param {string[]} fresh
   * @param {number} [delivery]
   */
  subscribe (fresh, delivery = FULL_RATE) {
    // concat allocates exactly what is held; push would leave slack in
    // every idle connection's list.
    if (fresh.length) this.#symbols = this.#symbols.concat(fresh)
    for (const s of fresh) this.#setDelivery(s, delivery)
  }

  /**
   * Changes the delivery of a held symbol; what was queued for it under the
   * old one is forgotten (a snapshot follows).
   *
   * @param {string} symbol
   * @param {number} delivery
   */
  redeliver (symbol, delivery) {
    this.drop([symbol])
    this.#setDelivery(symbol, delivery)
  }

  /**
   * @param {string} symbol
   * @param {number} delivery
   */
  #setDelivery (symbol, delivery) {
    if (delivery !== FULL_RATE) {
      (this.#delivery ??= new Map()).set(symbol, delivery)
    } else if (this.#delivery !== null) {
      this.#delivery.delete(symbol)
      if (this.#delivery.size === 0) this.#delivery = null
    }
  }

  /**
   * Removes symbols and forgets what is queued for them.
   *
   * @param {string[]} symbols
   * @param {(symbol: string, delivery: number) => void} onRemoved called for
   *   each symbol that was held, with the delivery it had
   */
  unsubscribe (symbols, onRemoved) {
    const gone = new Set(symbols)
    /** @type {string[]} */
    const kept = []
    for (const s of this.#symbols) {
      if (gone.has(s)) {
        onRemoved(s, this.deliveryOf(s))
        this.#setDelivery(s, FULL_RATE)
      } else {
        kept.push(s)
      }
    }
    this.#symbols = kept
    this.drop(symbols)
  }

  /**
   * Takes a symbol's update for this pass (called by the fanout).
   *
   * @param {Update} update
   * @param {PassStats} stats
   * @returns {boolean} true when the outbox was not queued for writing yet:
   *   the caller queues it
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
   * Sends a snapshot frame now. It supersedes anything queued for its
   * symbols.
   *
   * @param {string[]} symbols
   * @param {TextFrame} frame maybe shared by other connections
   */
  sendSnap (symbols, frame) {
    this.drop(symbols)
    this.#conn.sendFrame(frame, 'snap')
  }

  /**
   * Writes this pass's updates as one `q` frame — after a `snap` of the
   * symbols it skipped while slow — unless the reader is (still) slow.
   *
   * @param {number} now
   * @param {number} tick
   * @param {PassStats} stats
   * @returns {boolean} true when it stays queued: to be tried again next pass (still slow)
   */
  flush (now, tick, stats) {
    this.#queued = false
    const conn = this.#conn
    const pending = this.#pending
    if (!conn.open) {
      this.#pending = null
      this.#stale = null
      return false
    }
    if (!conn.writable()) return false
    const ctx = this.#ctx
    const slow = conn.bufferedAmount > ctx.sendHighWater
    if (slow) {
      if (this.#slowSince === 0) {
        this.#slowSince = now
        ctx.metrics.slowClients.inc()
      } else if (now - this.#slowSince >= ctx.slowCloseMs) {
        conn.close(CloseCode.SLOW_CONSUMER, 'too slow for too long')
        return false
      }
      if (pending !== null && pending.length) this.#conflate(pending, stats)
      // Stays queued: retried next pass.
      this.#queued = true
    } else {
      this.#leaveSlow()
      if (this.#stale !== null) this.#catchUp(stats)
    }
    if (pending === null || pending.length === 0) return slow

    const n = pending.length
    stats.frames++
    stats.quotes += n
    stats.batches[n === 1 ? 0 : n <= 4 ? 1 : n <= 16 ? 2 : n <= 64 ? 3 : 4]++
    let frame
    if (n === 1) {
      // The common case (one symbol changed in the window): every subscriber
      // of the update shares one frame, framed once (text-frame.js).
      const u = pending[0]
      if (u.json === null) u.json = JSON.stringify(u.fields)
      frame = u.frame ??= new TextFrame(encodeQuotes([u.json]))
      trackSent(u, tick, stats.sent)
    } else {
      const parts = []
      for (const u of pending) {
        if (u.json === null) u.json = JSON.stringify(u.fields)
        parts.push(u.json)
        trackSent(u, tick, stats.sent)
      }
      frame = new TextFrame(encodeQuotes(parts))
    }
    stats.bytes += frame.payload.length
    pending.length = 0
    conn.write(frame)
    return slow
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
    const delivery = this.#delivery
    const stale = this.#stale ??= new Set()
    let kept = 0
    for (const u of pending) {
      if (delivery !== null && delivery.get(u.symbol) === DISTINCT) {
        pending[kept++] = u
      } else {
        stale.add(u.symbol)
        stats.conflated++
      }
    }
    pending.length = kept
  }

  /**
   * A reader back under the high-water mark gets the latest full quote of
   * each symbol it skipped, as one snapshot.
   *
   * @param {PassStats} stats
   */
  #catchUp (stats) {
    const quotes = []
    for (const s of /** @type {Set<string>} */ (this.#stale)) {
      const raw = this.#ctx.latest(s, this.deliveryOf(s))
      if (raw !== null) quotes.push(raw)
    }
    this.#stale = null
    if (quotes.length === 0) return
    const frame = new TextFrame(encodeSnap(quotes))
    this.#conn.write(frame)
    stats.snaps++
    stats.bytes += frame.payload.length
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
    this.#symbols = []
    this.#delivery = null
    this.#pending = null
    this.#stale = null
  }
}

/**
 * @param {Update} u
 * @param {number} tick
 * @param {Update[]} sent
 */
function trackSent (u, tick, sent) {
  if (u.tick !== tick) {
    u.tick = tick
    sent.push(u)
  }
}
