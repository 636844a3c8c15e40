// One client connection: its transport, liveness, admission bookkeeping
// (auth state and grants, message rate, protocol strikes, token expiry) and
// the one place it is closed with a code. What it is sent lives in its Outbox (outbox.js).

import { CloseCode } from '@wsps/protocol'
import { Outbox } from './outbox.js'
import { RateLimit } from '@wsps/shared/rate-limit'

/** @typedef {import('./text-frame.js').TextFrame} TextFrame */

/** @typedef {'hello' | 'ack' | 'error' | 'pong' | 'snap' | 'q'} FrameOp */

/**
 * What a connection needs of its transport. A `ws` WebSocket fits it as is
 * (see ws-transport.js); another transport (SSE) implements the same few
 * members. `readyState` takes the WebSocket values (ReadyState below).
 *
 * @typedef {object} Transport
 * @property {number} readyState one of ReadyState
 * @property {number} bufferedAmount bytes accepted by send() but not yet
 *   handed to the kernel: what the slow-reader limits watch
 * @property {(data: string | Buffer) => void} send writes one text frame
 *   (a Buffer holds UTF-8 text)
 * @property {(code: number, reason: string) => void} close starts an
 *   orderly close carrying the code; the transport reports CLOSED when done
 * @property {() => void} ping a liveness probe; the transport calls
 *   Connection.markAlive() when the peer answers (or shows any sign of life)
 * @property {() => void} terminate drops the connection at once
 * @property {(data: Buffer) => void} [pong] answers a peer's ping (WebSocket only)
 * @property {(frame: TextFrame) => void} [sendFrame] writes a frame framed
 *   already, maybe shared by many connections (WebSocket only: its wire
 *   bytes); without it the frame's payload goes to send()
 */

/** The readyState values of a Transport (the WebSocket ones). */
export const ReadyState = Object.freeze({ CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 })

/** Protocol errors a client may make: a burst of 20, then one a second. */
const STRIKES = new RateLimit(1, 20)

/** A closing connection that does not finish its close handshake in this time is destroyed. */
const CLOSE_GRACE_MS = 2000

/** Longest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * @typedef {object} ConnectionContext shared by every connection of a gateway
 * @property {import('./metrics.js').GatewayMetrics} metrics
 * @property {number} sendMax buffered bytes at which the connection is closed with 4008
 * @property {RateLimit} messageRate the per-connection message limit
 * @property {import('./outbox.js').OutboxContext} outbox what each connection's outbox is given
 */

export class Connection {
  #transport
  #ctx
  #id
  #ip
  /** @type {((symbol: string) => boolean) | null} */
  #grants
  /** False while auth is on and no token was accepted yet: only `auth` is served. */
  #authed
  /** Set once the transport closed and dispose() ran. */
  #closed = false
  #outbox
  /** Answered (or sent anything) since the last heartbeat visit. */
  #alive = true
  /** Message rate limit state (see services/shared/src/rate-limit.js). */
  #rateTat = 0
  /** Messages dropped since the last one the rate limit let through. */
  #limitedDrops = 0
  /** Protocol error limit state: past it, a close. */
  #strikeTat = 0
  /** @type {number | null} the code the gateway closed this connection with */
  #closeCode = null
  /**
   * One timer for the auth lifecycle: before auth the deadline for the
   * `auth` frame (4003), after it the token's `exp` (4002).
   * @type {NodeJS.Timeout | null}
   */
  #expiry = null

  /**
   * @param {Transport} transport
   * @param {ConnectionContext} ctx
   * @param {{id: number, ip: string, grants: ((symbol: string) => boolean) | null, authed?: boolean}} info
   *   grants: the token's entitlement check (null: every symbol); authed:
   *   false until a token is accepted
   */
  constructor (transport, ctx, { id, ip, grants, authed = true }) {
    this.#transport = transport
    this.#ctx = ctx
    this.#id = id
    this.#ip = ip
    this.#grants = grants
    this.#authed = authed
    this.#outbox = new Outbox(this, ctx.outbox)
  }

  get id () { return this.#id }
  get ip () { return this.#ip }
  /** The token's entitlement check; null: every symbol. */
  get grants () { return this.#grants }
  /** False while auth is on and no token was accepted yet. */
  get authed () { return this.#authed }
  /** True once the transport closed and dispose() ran. */
  get closed () { return this.#closed }
  get outbox () { return this.#outbox }
  /** The code the gateway closed with, if it did (a stuck reader never echoes it: 1006). */
  get closeCode () { return this.#closeCode }
  get open () { return this.#transport.readyState === ReadyState.OPEN }
  get bufferedAmount () { return this.#transport.bufferedAmount }

  /** The peer showed it is there (a pong, a message). */
  markAlive () {
    this.#alive = true
  }

  /**
   * A heartbeat visit: drops the connection if it did not answer the last
   * probe, else probes again.
   */
  beat () {
    if (!this.open) return
    if (!this.#alive) {
      this.#transport.terminate()
      return
    }
    this.#alive = false
    this.#transport.ping()
  }

  /**
   * Admits one client message under the message rate limit. The peer is
   * alive either way. A client that keeps sending far past its limit is
   * closed with 4029.
   *
   * @returns {number} 0 when admitted, else how many messages in a row were dropped
   */
  admit () {
    this.#alive = true
    const tat = this.#ctx.messageRate.take(this.#rateTat)
    if (tat >= 0) {
      this.#rateTat = tat
      this.#limitedDrops = 0
      return 0
    }
    const drops = ++this.#limitedDrops
    if (drops > 2 * this.#ctx.messageRate.burst) this.close(CloseCode.RATE_LIMIT_EXCEEDED, 'rate limit exceeded')
    return drops
  }

  /**
   * Counts a protocol error; past the limit the connection is closed with
   * 1008.
   *
   * @returns {boolean} false when it was closed
   */
  strike () {
    const tat = STRIKES.take(this.#strikeTat)
    if (tat >= 0) {
      this.#strikeTat = tat
      return true
    }
    this.close(CloseCode.POLICY_VIOLATION, 'too many invalid messages')
    return false
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
    if (this.#expiry !== null) clearTimeout(this.#expiry)
    this.#expiry = null
    if (at === null || this.#closed) return
    const left = at - Date.now()
    if (left <= 0) {
      this.close(code, reason)
      return
    }
    // setTimeout fires at once beyond 2^31-1 ms (24.8 days): re-arm in steps.
    this.#expiry = setTimeout(() => this.closeAt(at, code, reason), Math.min(left, MAX_TIMER_MS))
  }

  /**
   * A token was accepted: its grants replace the previous ones, and the
   * connection closes with 4002 at its `exp` unless refreshed before.
   *
   * @param {((symbol: string) => boolean) | null} grants
   * @param {number | null} expiresAt ms since the epoch
   */
  authorize (grants, expiresAt) {
    this.#grants = grants
    this.#authed = true
    this.closeAt(expiresAt, CloseCode.TOKEN_EXPIRED, 'token expired')
  }

  /**
   * Whether a frame may be written now. Replies, snapshots and pongs obey
   * the same cap as quote batches: a reader that stopped reading must not
   * grow its buffer by asking for more; at the cap it is closed with 4008.
   */
  writable () {
    if (!this.open) return false
    if (this.#transport.bufferedAmount >= this.#ctx.sendMax) {
      this.close(CloseCode.SLOW_CONSUMER, 'send buffer full')
      return false
    }
    return true
  }

  /**
   * Sends a control frame now, counted per frame.
   *
   * @param {string | Buffer} data a text frame
   * @param {FrameOp} op for metrics
   */
  send (data, op) {
    if (!this.writable()) return
    this.#transport.send(data)
    this.#counted(op, typeof data === 'string' ? Buffer.byteLength(data) : data.length)
  }

  /**
   * Sends a frame built already (maybe shared by many connections) now,
   * counted per frame: written with one socket write where the transport
   * allows it (write()).
   *
   * @param {TextFrame} frame
   * @param {FrameOp} op for metrics
   */
  sendFrame (frame, op) {
    if (!this.writable()) return
    this.write(frame)
    this.#counted(op, frame.payload.length)
  }

  /**
   * One frame sent now, in the per-frame metrics.
   *
   * @param {FrameOp} op
   * @param {number} bytes its payload
   */
  #counted (op, bytes) {
    const m = this.#ctx.metrics
    m.framesOut[op].inc()
    m.bytesOut.inc(bytes)
  }

  /**
   * Writes a frame the fan-out counts itself (per pass, not per frame).
   * The caller checked writable() in the same turn.
   *
   * @param {TextFrame} frame
   */
  write (frame) {
    const t = this.#transport
    if (t.sendFrame) t.sendFrame(frame)
    else t.send(frame.payload)
  }

  /**
   * Answers a WebSocket ping frame, under the same send-buffer cap.
   *
   * @param {Buffer} data
   */
  pong (data) {
    if (this.writable()) this.#transport.pong?.(data)
  }

  /**
   * Starts a close handshake with a code and destroys the transport if it
   * does not finish (a reader that stopped reading will not read the close
   * frame either). The one place a connection is closed with a code.
   *
   * @param {number} code
   * @param {string} reason
   */
  close (code, reason) {
    const t = this.#transport
    if (t.readyState === ReadyState.CLOSED) return
    if (t.readyState !== ReadyState.CLOSING) {
      this.#closeCode = code
      t.close(code, reason)
    }
    setTimeout(() => t.terminate(), CLOSE_GRACE_MS).unref()
  }

  /** Drops the transport at once (process shutdown). */
  terminate () {
    this.#transport.terminate()
  }

  /** Called once the transport closed: releases what the connection held. */
  dispose () {
    this.closeAt(null, 0, '')
    this.#closed = true
    this.#outbox.dispose()
  }
}
