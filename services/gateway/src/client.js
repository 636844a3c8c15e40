// One WebSocket connection: its subscriptions, its pending batch, its send
// buffer watch (slow-reader conflation and cut-off) and its limits.

import WebSocket from 'ws'
import { CloseCode } from '@wsps/protocol'
import { encodeQuotes, encodeSnap } from './protocol.js'
import { RateLimit } from './rate-limit.js'

/** @typedef {'hello' | 'ack' | 'error' | 'pong' | 'snap' | 'q'} FrameOp */

const TEXT = Object.freeze({ binary: false })

/** Protocol errors a client may make: a burst of 20, then one a second. */
const STRIKES = new RateLimit(1, 20)

/** A closing socket that does not finish its close handshake in this time is destroyed. */
const CLOSE_GRACE_MS = 2000

/** Longest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * @typedef {object} ClientLimits
 * @property {number} sendHighWater
 * @property {number} sendMax
 * @property {number} slowCloseMs
 * @property {number} ratePerSec
 * @property {number} rateBurst
 *
 * @typedef {object} ClientContext shared by every client of a gateway
 * @property {import('./metrics.js').GatewayMetrics} metrics
 * @property {ClientLimits} limits
 * @property {RateLimit} messageRate the per-connection message limit
 * @property {(symbol: string) => string | null} latest the full quote the process holds for a symbol
 */

export class Client {
  /**
   * @param {WebSocket} ws
   * @param {ClientContext} ctx
   * @param {{id: number, ip: string, grants: ((symbol: string) => boolean) | null, authed?: boolean}} info
   */
  constructor (ws, ctx, { id, ip, grants, authed = true }) {
    this.ws = ws
    this.ctx = ctx
    this.id = id
    this.ip = ip
    /** Entitlement check from the token; null: every symbol. */
    this.grants = grants
    /** False while auth is on and no token was accepted yet: only `auth` is served. */
    this.authed = authed
    /** Set once the socket closed and dispose() ran. */
    this.closed = false
    /**
     * Subscribed symbols, in order. An array, not a Set: at the usual few
     * dozen symbols it costs a third of the memory (idle connections are
     * what a gateway holds most of); see holds() for large lists.
     * @type {string[]}
     */
    this.subs = []
    /** @type {import('./delta.js').Update[] | null} updates of this pass, at most one per symbol */
    this.pending = null
    /**
     * Symbols whose updates a slow reader skipped. When it catches up it gets
     * their latest full quote as one `snap` (conflation: only the latest
     * quote per symbol is kept, and nothing per update is allocated).
     * @type {Set<string> | null}
     */
    this.stale = null
    this.dirty = false
    this.alive = true
    /** @type {number | null} the code the gateway closed this connection with */
    this.closeCode = null
    /** When the send buffer went over the high-water mark; 0 while it is not. */
    this.slowSince = 0
    /** Message rate limit state (see rate-limit.js). */
    this.rateTat = 0
    /** Messages dropped since the last one the rate limit let through. */
    this.limitedDrops = 0
    /** Protocol error limit state: past it, a 4009 close. */
    this.strikeTat = 0
    /**
     * One timer for the auth lifecycle: before auth the deadline for the
     * `auth` frame (4003), after it the token's `exp` (4002).
     * @type {NodeJS.Timeout | null}
     */
    this.expiry = null
  }

  /**
   * Closes the connection with `code` at `at` (ms since the epoch) unless
   * re-armed before; null disarms.
   *
   * @param {number | null} at
   * @param {number} code
   * @param {string} reason
   */
  closeAt (at, code, reason) {
    if (this.expiry !== null) clearTimeout(this.expiry)
    this.expiry = null
    if (at === null || this.closed) return
    // setTimeout fires at once beyond 2^31-1 ms (24.8 days): re-arm in steps.
    const arm = () => {
      const left = at - Date.now()
      if (left <= 0) {
        this.expiry = null
        this.closeWith(code, reason)
      } else {
        this.expiry = setTimeout(arm, Math.min(left, MAX_TIMER_MS))
      }
    }
    arm()
  }

  /**
   * A token was accepted: its grants replace the previous ones, and the
   * connection closes with 4002 at its `exp` unless refreshed before.
   *
   * @param {((symbol: string) => boolean) | null} grants
   * @param {number | null} expiresAt ms since the epoch
   */
  authorize (grants, expiresAt) {
    this.grants = grants
    this.authed = true
    this.closeAt(expiresAt, CloseCode.TOKEN_EXPIRED, 'token expired')
  }

  /** @returns {boolean} false when the client is over its message rate */
  takeMessage () {
    const tat = this.ctx.messageRate.take(this.rateTat)
    if (tat < 0) return false
    this.rateTat = tat
    return true
  }

  /** @returns {boolean} false when the client made too many protocol errors */
  takeStrike () {
    const tat = STRIKES.take(this.strikeTat)
    if (tat < 0) return false
    this.strikeTat = tat
    return true
  }

  /**
   * A membership test for the client's symbols: a scan for short lists,
   * a Set built once for long ones (WSPS_MAX_SUBSCRIPTIONS may be 10,000).
   *
   * @returns {(symbol: string) => boolean}
   */
  holds () {
    const subs = this.subs
    if (subs.length <= 32) return (s) => subs.includes(s)
    const set = new Set(subs)
    return (s) => set.has(s)
  }

  /**
   * Takes a symbol's update for this pass (called by the fanout).
   *
   * @param {import('./delta.js').Update} update
   * @param {import('./fanout.js').PassStats} stats
   */
  push (update, stats) {
    if (this.stale !== null && this.stale.has(update.symbol)) {
      stats.conflated++
      return
    }
    if (this.pending === null) this.pending = [update]
    else this.pending.push(update)
  }

  /**
   * Forgets what is queued for symbols (unsubscribed, or superseded by a
   * snapshot).
   *
   * @param {Iterable<string>} symbols
   */
  drop (symbols) {
    for (const s of symbols) this.stale?.delete(s)
    if (this.pending === null || this.pending.length === 0) return
    const gone = new Set(symbols)
    this.pending = this.pending.filter((u) => !gone.has(u.symbol))
  }

  /**
   * Sends a snapshot frame now. It supersedes anything queued for its
   * symbols.
   *
   * @param {string[]} symbols
   * @param {string | Buffer} frame
   */
  sendSnap (symbols, frame) {
    this.drop(symbols)
    this.send(frame, 'snap')
  }

  /**
   * Sends a control or snapshot frame now (not batched).
   *
   * @param {string | Buffer} data a text frame
   * @param {FrameOp} op for metrics
   */
  send (data, op) {
    if (!this.writable()) return
    this.ws.send(data, TEXT)
    const m = this.ctx.metrics
    m.framesOut[op].inc()
    m.bytesOut.inc(typeof data === 'string' ? Buffer.byteLength(data) : data.length)
  }

  /**
   * Answers a WebSocket ping frame, under the same send-buffer cap.
   *
   * @param {Buffer} data
   */
  pong (data) {
    if (this.writable()) this.ws.pong(data)
  }

  /**
   * Whether a reply may be written now. Replies, snapshots and pongs obey
   * the same cap as quote batches: a reader that stopped reading must not
   * grow its buffer by asking for more; at the cap it is closed with 4008.
   */
  writable () {
    if (this.ws.readyState !== WebSocket.OPEN) return false
    if (this.ws.bufferedAmount >= this.ctx.limits.sendMax) {
      this.closeWith(CloseCode.SLOW_CONSUMER, 'send buffer full')
      return false
    }
    return true
  }

  /**
   * Writes this pass's updates as one `q` frame — after a `snap` of the
   * symbols it skipped while slow — unless the reader is (still) slow.
   *
   * @param {number} now
   * @param {number} tick
   * @param {import('./fanout.js').PassStats} stats
   * @returns {boolean} true to be tried again next pass (still slow)
   */
  flush (now, tick, stats) {
    const ws = this.ws
    const pending = this.pending
    if (ws.readyState !== WebSocket.OPEN) {
      this.pending = null
      this.stale = null
      return false
    }
    const { limits, metrics } = this.ctx
    const buffered = ws.bufferedAmount
    if (buffered >= limits.sendMax) {
      this.closeWith(CloseCode.SLOW_CONSUMER, 'send buffer full')
      return false
    }
    if (buffered > limits.sendHighWater) {
      if (this.slowSince === 0) {
        this.slowSince = now
        metrics.slowClients.inc()
      } else if (now - this.slowSince >= limits.slowCloseMs) {
        this.closeWith(CloseCode.SLOW_CONSUMER, 'too slow for too long')
        return false
      }
      if (pending !== null && pending.length) {
        const stale = this.stale ??= new Set()
        for (const u of pending) stale.add(u.symbol)
        stats.conflated += pending.length
        pending.length = 0
      }
      return true
    }
    this.leaveSlow()

    if (this.stale !== null) {
      const symbols = []
      const quotes = []
      for (const s of this.stale) {
        const raw = this.ctx.latest(s)
        if (raw !== null) {
          symbols.push(s)
          quotes.push(raw)
        }
      }
      this.stale = null
      if (quotes.length) {
        const frame = encodeSnap(quotes)
        ws.send(frame, TEXT)
        stats.snaps++
        stats.bytes += Buffer.byteLength(frame)
      }
    }
    if (pending === null || pending.length === 0) return false

    let frame
    if (pending.length === 1) {
      // The common case (one symbol changed in the window): every subscriber
      // of the update shares one frame buffer.
      const u = pending[0]
      if (u.json === null) u.json = JSON.stringify(u.fields)
      frame = u.frame ??= Buffer.from(encodeQuotes([u.json]))
      trackSent(u, tick, stats.sent)
      stats.bytes += frame.length
    } else {
      const parts = []
      for (const u of pending) {
        if (u.json === null) u.json = JSON.stringify(u.fields)
        parts.push(u.json)
        trackSent(u, tick, stats.sent)
      }
      frame = encodeQuotes(parts)
      stats.bytes += Buffer.byteLength(frame)
    }
    const n = pending.length
    stats.frames++
    stats.quotes += n
    stats.batches[n === 1 ? 0 : n <= 4 ? 1 : n <= 16 ? 2 : n <= 64 ? 3 : 4]++
    pending.length = 0
    ws.send(frame, TEXT)
    return false
  }

  leaveSlow () {
    if (this.slowSince !== 0) {
      this.slowSince = 0
      this.ctx.metrics.slowClients.dec()
    }
  }

  /**
   * Starts a close handshake and destroys the socket if it does not finish
   * (a reader that stopped reading will not read the close frame either).
   *
   * @param {number} code
   * @param {string} reason
   */
  closeWith (code, reason) {
    const ws = this.ws
    if (ws.readyState === WebSocket.CLOSED) return
    if (ws.readyState !== WebSocket.CLOSING) {
      this.closeCode = code
      ws.close(code, reason)
    }
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref()
  }

  /** Called once the socket closed: releases what the client held. */
  dispose () {
    this.closeAt(null, 0, '')
    this.closed = true
    this.leaveSlow()
    this.pending = null
    this.stale = null
  }
}

/**
 * @param {import('./delta.js').Update} u
 * @param {number} tick
 * @param {import('./delta.js').Update[]} sent
 */
function trackSent (u, tick, sent) {
  if (u.tick !== tick) {
    u.tick = tick
    sent.push(u)
  }
}
