// One WebSocket connection: its subscriptions, its pending batch, its send
// buffer watch (slow-reader conflation and cut-off) and its limits.

import WebSocket from 'ws'
import { CloseCode } from '../public/protocol.js'
import { mergeUpdates } from './delta.js'
import { encodeQuotes } from './protocol.js'
import { TokenBucket } from './rate-limit.js'

/** @typedef {'hello' | 'ack' | 'error' | 'pong' | 'snap' | 'q'} FrameOp */

const TEXT = Object.freeze({ binary: false })

/** A closing socket that does not finish its close handshake in this time is destroyed. */
const CLOSE_GRACE_MS = 2000

/**
 * @typedef {object} ClientLimits
 * @property {number} sendHighWater
 * @property {number} sendMax
 * @property {number} slowCloseMs
 * @property {number} ratePerSec
 * @property {number} rateBurst
 *
 * @typedef {object} ClientContext shared by every client of a gateway
 * @property {import('./fanout.js').Fanout} fanout
 * @property {import('./metrics.js').GatewayMetrics} metrics
 * @property {ClientLimits} limits
 */

export class Client {
  /**
   * @param {WebSocket} ws
   * @param {ClientContext} ctx
   * @param {{id: number, ip: string, grants: ((symbol: string) => boolean) | null}} info
   */
  constructor (ws, ctx, { id, ip, grants }) {
    this.ws = ws
    this.ctx = ctx
    this.id = id
    this.ip = ip
    /** Entitlement check from the token; null: every symbol. */
    this.grants = grants
    /** @type {Set<string>} */
    this.subs = new Set()
    /** @type {Map<string, import('./delta.js').Update> | null} symbol -> update not yet written */
    this.pending = null
    this.dirty = false
    this.alive = true
    /** When the send buffer went over the high-water mark; 0 while it is not. */
    this.slowSince = 0
    this.rate = new TokenBucket(ctx.limits.ratePerSec, ctx.limits.rateBurst)
    /** Messages dropped since the last one the rate limit let through. */
    this.limitedDrops = 0
    /** Protocol errors allowed before a 4009 close; refills slowly. */
    this.strikes = new TokenBucket(1, 20)
  }

  /**
   * Queues an update for the next batch. A second update of the same symbol
   * within one window, or while the reader is slow, is merged into the first.
   *
   * @param {import('./delta.js').Update} update
   */
  enqueue (update) {
    let pending = this.pending
    if (pending === null) pending = this.pending = new Map()
    const older = pending.get(update.symbol)
    if (older) {
      pending.set(update.symbol, mergeUpdates(older, update))
      this.ctx.metrics.conflated.inc()
    } else {
      pending.set(update.symbol, update)
    }
    if (!this.dirty) {
      this.dirty = true
      this.ctx.fanout.mark(this)
    }
  }

  /**
   * Sends a snapshot frame now. Pending deltas of the symbols in it are
   * dropped: the snapshot supersedes them.
   *
   * @param {string[]} symbols
   * @param {string | Buffer} frame
   */
  sendSnap (symbols, frame) {
    if (this.pending) for (const s of symbols) this.pending.delete(s)
    this.send(frame, 'snap')
  }

  /**
   * @param {string | Buffer} data a text frame
   * @param {FrameOp} op for metrics
   */
  send (data, op) {
    if (this.ws.readyState !== WebSocket.OPEN) return
    this.ws.send(data, TEXT)
    const m = this.ctx.metrics
    m.framesOut[op].inc()
    m.bytesOut.inc(typeof data === 'string' ? Buffer.byteLength(data) : data.length)
  }

  /**
   * Writes the pending batch as one `q` frame, unless the reader is slow.
   *
   * @param {number} now
   * @param {number} tick
   * @param {import('./delta.js').Update[]} sent collects updates for latency metrics
   * @returns {boolean} true to be flushed again next tick (still slow)
   */
  flush (now, tick, sent) {
    this.dirty = false
    const pending = this.pending
    const ws = this.ws
    if (!pending || pending.size === 0) return false
    if (ws.readyState !== WebSocket.OPEN) {
      pending.clear()
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
      this.dirty = true
      return true
    }
    this.leaveSlow()

    let frame
    if (pending.size === 1) {
      // The common case (one symbol changed in the window): every subscriber
      // of the update shares one frame buffer.
      const [u] = pending.values()
      if (u.json === null) u.json = JSON.stringify(u.fields)
      frame = u.frame ??= Buffer.from(encodeQuotes([u.json]))
      trackSent(u, tick, sent)
    } else {
      const parts = []
      for (const u of pending.values()) {
        if (u.json === null) u.json = JSON.stringify(u.fields)
        parts.push(u.json)
        trackSent(u, tick, sent)
      }
      frame = encodeQuotes(parts)
    }
    metrics.batchSize.observe(pending.size)
    metrics.quotesOut.inc(pending.size)
    pending.clear()
    this.send(frame, 'q')
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
    if (ws.readyState !== WebSocket.CLOSING) ws.close(code, reason)
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref()
  }

  /** Called once the socket closed: releases what the client held. */
  dispose () {
    this.leaveSlow()
    this.pending = null
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
