// The upstream session of the ws-stream provider: the state of this
// replica's one vendor connection, from "may I connect at all" to "the
// vendor accepted the credentials, subscribe now".
//
//   standby         -- a connection slot held -->  connecting  (no WSPS_STREAM_MAX_CONNECTIONS: starts here)
//   connecting      -- open -->                    authenticating  (ready at once without WSPS_STREAM_AUTH_REPLIES)
//   authenticating  -- ok -->                      ready
//   authenticating  -- refused | limited -->       refused | limited  -- WSPS_STREAM_AUTH_BACKOFF_MS -->  standby | connecting
//   authenticating  -- no answer in time -->       closed
//   connecting, authenticating, ready -- close --> closed  -- reconnect backoff -->  connecting
//   any but refused, limited -- slot lost -->      standby
//
// - standby: WSPS_STREAM_MAX_CONNECTIONS > 0 and this replica holds no slot
//   (ConnectionSlot); without that limit it is never in standby.
// - authenticating: only when WSPS_STREAM_AUTH_REPLIES says what the vendor
//   answers; without, the session is ready once the auth message is sent (or
//   on open without one), as the first version was.
// - ready: the only state in which the feed claims symbols and subscribes.
//   Leaving it (onLeave) releases every symbol at once.
// - refused / limited: the vendor refused the credentials or the connection
//   (too many per key). Named, logged once with the vendor's code and message
//   and the close code, counted, and followed by the long auth backoff with
//   the connection slot given up: retrying at once cannot help, and the
//   vendor may lock out a key that hammers it.
// The reconnect backoff of the socket is reset only once the session has
// proved itself (a record streamed, or ready for STABLE_MS): a vendor that
// accepts the socket and drops it at once is retried ever more slowly.

import { Code } from '../errors.js'

/** @typedef {'standby' | 'connecting' | 'authenticating' | 'ready' | 'closed' | 'refused' | 'limited' | 'stopped'} SessionState */

/** Every state, for the state metric. @type {readonly SessionState[]} */
export const SESSION_STATES = Object.freeze(['standby', 'connecting', 'authenticating', 'ready', 'closed', 'refused', 'limited', 'stopped'])

/** Ready this long without a drop: the connection works, the backoff starts over. */
export const STABLE_MS = 10_000

/** Named outcomes in the logs. */
const OUTCOME_CODES = Object.freeze({
  refused: Code.STREAM_AUTH_REFUSED,
  limited: Code.STREAM_CONNECTION_LIMIT,
  timeout: Code.STREAM_AUTH_TIMEOUT
})

/**
 * What the session needs of the socket (VendorSocket).
 * @typedef {object} SessionSocket
 * @property {() => void} connect
 * @property {(code?: number, reason?: string) => Promise<void>} stop
 * @property {(code: number, reason: string) => void} drop close and reconnect after the backoff
 * @property {(frame: string) => void} send
 * @property {() => void} resetBackoff
 */

/**
 * What the session needs of the connection slot (ConnectionSlot).
 * @typedef {object} SessionSlot
 * @property {() => Promise<boolean>} acquire
 * @property {(now: number, marginMs: number) => boolean} held
 * @property {() => Promise<void>} release
 */

/**
 * @typedef {object} SessionMetrics
 * @property {import('prom-client').Counter<'result'>} streamAuth
 * @property {import('prom-client').Gauge<'state'>} streamSession
 * @property {import('prom-client').Gauge} streamLastRecordAge
 */

export class StreamSession {
  /** @type {SessionState} */
  #state = 'stopped'
  /** When the session last became ready, or started (ms). */
  #since = 0
  /** When the last record streamed (ms); 0: none yet. */
  #lastRecordAt = 0
  /** refused / limited: no connection before this (ms). */
  #holdUntil = 0
  /**
   * A refusal waiting for its close, to be logged once with the close code.
   * @type {{result: 'refused' | 'limited', vendorCode: string, vendorMessage: string, retryInMs: number} | null}
   */
  #outcome = null
  /** @type {NodeJS.Timeout | null} */
  #authTimer = null
  /** @type {NodeJS.Timeout | null} */
  #stableTimer = null
  #socket
  #slot
  #auth
  #opts
  #log
  #metrics
  #now

  /**
   * @param {object} options
   * @param {SessionSocket} options.socket whose events are handed to opened(), message(), closed(), attempting()
   * @param {SessionSlot | null} options.slot null: no limit on connections (WSPS_STREAM_MAX_CONNECTIONS=0)
   * @param {import('./stream-auth.js').StreamAuth} options.auth
   * @param {number} options.authTimeoutMs
   * @param {number} options.authBackoffMs
   * @param {number} options.tickMs how often tick() runs: a slot that could not be renewed is let go when it would lapse before the next
   * @param {import('pino').Logger} options.logger
   * @param {SessionMetrics} options.metrics
   * @param {() => void} options.onReady the vendor accepted us: subscribe
   * @param {() => void} options.onLeave no longer ready: forget the subscriptions, release the symbols
   * @param {(text: string) => void} options.onMessage a vendor message while ready
   * @param {() => number} [options.now]
   */
  constructor ({ socket, slot, auth, authTimeoutMs, authBackoffMs, tickMs, logger, metrics, onReady, onLeave, onMessage, now = Date.now }) {
    this.#socket = socket
    this.#slot = slot
    this.#auth = auth
    this.#opts = { authTimeoutMs, authBackoffMs, tickMs, onReady, onLeave, onMessage }
    this.#log = logger
    this.#metrics = metrics
    this.#now = now
    this.#publishState()
  }

  get state () { return this.#state }
  get ready () { return this.#state === 'ready' }

  start () {
    this.#since = this.#now()
    if (this.#slot) this.#setState('standby')
    else this.#connect()
  }

  /** Sends a frame on the connection, only while ready. @param {string} frame */
  send (frame) {
    if (this.ready) this.#socket.send(frame)
  }

  /**
   * Quotes streamed: the connection has proved itself.
   * @param {number} [now]
   */
  sawData (now = this.#now()) {
    this.#lastRecordAt = now
    if (this.ready) this.#socket.resetBackoff()
  }

  /**
   * Run every WSPS_STREAM_TICK_MS: ends a refusal's backoff, renews or
   * takes a connection slot (connecting or standing by to match), and
   * samples the time since the last record.
   */
  async tick () {
    const now = this.#now()
    this.#metrics.streamLastRecordAge.set(Math.max(0, now - Math.max(this.#lastRecordAt, this.#since)) / 1000)
    if (this.#state === 'stopped') return
    if (this.#state === 'refused' || this.#state === 'limited') {
      if (now < this.#holdUntil) return
      this.#outcome = null
      if (!this.#slot) return this.#connect()
      this.#setState('standby')
    }
    if (!this.#slot) return
    let held
    try {
      held = await this.#slot.acquire()
    } catch (err) {
      // Keep the slot while it surely lasts past the next tick; let go of
      // the vendor before it may lapse, so a standby that takes it over is
      // never connected at the same time.
      held = this.#slot.held(this.#now(), this.#opts.tickMs)
      this.#log.warn({ err: /** @type {Error} */ (err).message, held }, 'stream connection slot not renewed')
    }
    const state = /** @type {SessionState} */ (this.#state)
    if (state === 'stopped' || state === 'refused' || state === 'limited') {
      // It changed while the slot was asked for.
      if (held) await this.#releaseSlot()
      return
    }
    if (held && state === 'standby') {
      this.#log.info('holding an upstream connection slot: connecting')
      this.#connect()
    } else if (!held && state !== 'standby') {
      this.#log.warn('no upstream connection slot (WSPS_STREAM_MAX_CONNECTIONS): disconnecting, standing by')
      this.#leave('standby')
      await this.#socket.stop(1000, 'standby')
    }
  }

  async stop () {
    this.#clearTimers()
    this.#leave('stopped')
    await this.#socket.stop()
    if (this.#slot) await this.#releaseSlot()
  }

  // Socket events.

  /** A connection attempt starts (also each automatic reconnect). */
  attempting () {
    if (this.#state === 'closed' || this.#state === 'standby' || this.#state === 'connecting') this.#setState('connecting')
  }

  opened () {
    if (this.#state !== 'connecting') return
    if (this.#auth.frame !== null) this.#socket.send(this.#auth.frame)
    if (!this.#auth.waits) return this.#becomeReady()
    this.#setState('authenticating')
    this.#authTimer = setTimeout(() => this.#timedOut(), this.#opts.authTimeoutMs)
  }

  /** @param {string} text */
  message (text) {
    if (this.#state === 'ready') return this.#opts.onMessage(text)
    if (this.#state !== 'authenticating') return
    let msg
    try { msg = JSON.parse(text) } catch { return }
    const reply = this.#auth.reply(msg)
    if (!reply) return
    this.#clearTimers()
    if (reply.kind === 'ok') {
      this.#metrics.streamAuth.inc({ result: 'ok' })
      this.#log.info('vendor accepted the credentials')
      return this.#becomeReady()
    }
    this.#refused(reply.kind, reply.code, reply.message)
  }

  /**
   * @param {number} code
   * @param {string} reason
   */
  closed (code, reason) {
    this.#clearTimers()
    if (this.#outcome) {
      const { result, ...rest } = this.#outcome
      this.#log.warn({ code: OUTCOME_CODES[result], ...rest, closeCode: code, closeReason: reason },
        result === 'refused' ? 'vendor refused the credentials; waiting before trying again' : 'vendor refused the connection: too many connections for this key; waiting before trying again')
      this.#outcome = null
    }
    if (this.#state === 'connecting' || this.#state === 'authenticating' || this.#state === 'ready') this.#leave('closed')
  }

  // Inside.

  #connect () {
    this.#setState('connecting')
    this.#socket.connect()
  }

  #becomeReady () {
    this.#since = this.#now()
    this.#setState('ready')
    this.#stableTimer = setTimeout(() => this.#socket.resetBackoff(), STABLE_MS)
    this.#opts.onReady()
  }

  #timedOut () {
    this.#authTimer = null
    if (this.#state !== 'authenticating') return
    this.#metrics.streamAuth.inc({ result: 'timeout' })
    this.#log.warn({ code: OUTCOME_CODES.timeout, timeoutMs: this.#opts.authTimeoutMs }, 'vendor did not answer the authentication in time; reconnecting')
    this.#setState('closed')
    this.#socket.drop(1000, 'auth timeout')
  }

  /**
   * @param {'refused' | 'limited'} result
   * @param {string} vendorCode
   * @param {string} vendorMessage
   */
  #refused (result, vendorCode, vendorMessage) {
    this.#metrics.streamAuth.inc({ result })
    // Jitter upwards only: never sooner than the setting says.
    const retryInMs = Math.round(this.#opts.authBackoffMs * (1 + Math.random() * 0.2))
    this.#holdUntil = this.#now() + retryInMs
    this.#outcome = { result, vendorCode, vendorMessage, retryInMs }
    this.#leave(result)
    this.#socket.stop(1000, result === 'refused' ? 'auth refused' : 'connection limit').catch(() => {})
    // Another replica (with other credentials, or within the limit) may do better.
    if (this.#slot) this.#releaseSlot().catch(() => {})
  }

  /** @param {SessionState} next */
  #leave (next) {
    const wasReady = this.#state === 'ready'
    this.#setState(next)
    if (wasReady) this.#opts.onLeave()
  }

  async #releaseSlot () {
    try {
      await /** @type {SessionSlot} */ (this.#slot).release()
    } catch (err) {
      this.#log.warn({ err: /** @type {Error} */ (err).message }, 'stream connection slot not released (it lapses after the lease)')
    }
  }

  #clearTimers () {
    if (this.#authTimer) clearTimeout(this.#authTimer)
    if (this.#stableTimer) clearTimeout(this.#stableTimer)
    this.#authTimer = null
    this.#stableTimer = null
  }

  /** @param {SessionState} state */
  #setState (state) {
    if (state === this.#state) return
    this.#state = state
    this.#publishState()
  }

  #publishState () {
    for (const s of SESSION_STATES) this.#metrics.streamSession.set({ state: s }, s === this.#state ? 1 : 0)
  }
}
