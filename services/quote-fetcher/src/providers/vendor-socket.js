// One persistent WebSocket to a vendor: reconnects with capped exponential
// backoff and jitter, and pings so a half-open connection (a vendor that
// vanished without a FIN) is noticed and replaced. It knows nothing of
// quotes nor of the vendor's handshake: the owner (StreamSession) reacts to
// onOpen, onMessage and onClose, says when the connection has proved itself
// (resetBackoff) and when to stay away (stop, then connect later).

import WebSocket from 'ws'
import { loggableUrl } from './stream-auth.js'

const MAX_BACKOFF_MS = 30_000
/** Vendors send large snapshot arrays; anything larger is not a quote feed. */
const MAX_PAYLOAD = 16 * 1024 * 1024

export class VendorSocket {
  /** @type {WebSocket | null} */
  #ws = null
  /**
   * Failed attempts in a row: the next delay doubles with each. Only the
   * owner resets it (resetBackoff), once the session has proved itself: a
   * vendor that accepts the socket and then refuses or drops it must not be
   * reconnected to at the first delay for ever.
   */
  #attempt = 0
  #stopped = true
  #connectAtClose = false
  /** @type {NodeJS.Timeout | null} */
  #retry = null
  /** @type {NodeJS.Timeout | null} */
  #pinger = null
  #opts
  #where

  /**
   * @param {object} options
   * @param {string} options.url credentials filled in: never logged as is
   * @param {Record<string, string>} [options.headers] upgrade request headers (may hold credentials: never logged)
   * @param {number} options.backoffMs first reconnect delay
   * @param {number} options.pingMs
   * @param {() => void} options.onOpen
   * @param {(text: string) => void} options.onMessage
   * @param {(code: number, reason: string) => void} options.onClose every close, asked for or not
   * @param {() => void} [options.onAttempt] a connection attempt starts
   * @param {import('pino').Logger} options.logger
   * @param {import('./../metrics.js').FetcherMetrics} options.metrics
   */
  constructor (options) {
    this.#opts = options
    this.#where = loggableUrl(options.url)
  }

  get open () { return this.#ws?.readyState === WebSocket.OPEN }

  /** Connects now (a no-op while running); reconnects by itself until stop(). */
  connect () {
    if (!this.#stopped) return
    this.#stopped = false
    // The last connection is still closing: the new one starts at its close.
    if (this.#ws) this.#connectAtClose = true
    else this.#connect()
  }

  /** The connection works: the next reconnect starts from the first delay again. */
  resetBackoff () { this.#attempt = 0 }

  /** @param {string} frame */
  send (frame) {
    if (this.open) /** @type {WebSocket} */ (this.#ws).send(frame)
  }

  #connect () {
    const { url, headers, pingMs, logger, metrics } = this.#opts
    if (this.#attempt > 0) metrics.streamReconnects.inc()
    this.#opts.onAttempt?.()
    const ws = new WebSocket(url, { handshakeTimeout: 10_000, maxPayload: MAX_PAYLOAD, headers })
    this.#ws = ws
    let alive = true
    ws.on('open', () => {
      metrics.streamConnected.set(1)
      logger.info({ url: this.#where }, 'vendor stream connected')
      this.#pinger = setInterval(() => {
        if (!alive) {
          logger.warn('vendor stream: no pong, dropping the connection')
          ws.terminate()
          return
        }
        alive = false
        ws.ping()
      }, pingMs)
      this.#opts.onOpen()
    })
    ws.on('pong', () => { alive = true })
    ws.on('message', (data, isBinary) => {
      alive = true
      this.#opts.onMessage(isBinary ? '' : String(data))
    })
    ws.on('error', (err) => logger.warn({ err: err.message }, 'vendor stream error'))
    ws.on('close', (code, reasonBuffer) => {
      if (this.#pinger) clearInterval(this.#pinger)
      this.#pinger = null
      metrics.streamConnected.set(0)
      if (this.#ws !== ws) return
      this.#ws = null
      const reason = String(reasonBuffer).slice(0, 123)
      this.#opts.onClose(code, reason)
      if (this.#stopped) {
        logger.info({ code, reason }, 'vendor stream closed')
        return
      }
      if (this.#connectAtClose) {
        this.#connectAtClose = false
        this.#connect()
        return
      }
      const base = Math.min(this.#opts.backoffMs * 2 ** this.#attempt++, MAX_BACKOFF_MS)
      // Full jitter on half the delay: replicas that lost the vendor together
      // do not come back together.
      const delay = Math.round(base / 2 + Math.random() * base / 2)
      logger.warn({ code, reason, retryInMs: delay }, 'vendor stream closed; reconnecting')
      this.#retry = setTimeout(() => {
        this.#retry = null
        this.#connect()
      }, delay)
    })
  }

  /**
   * Closes the connection (with `code` and `reason`) and reconnects after
   * the backoff, as after a drop: for a vendor that does not answer.
   * @param {number} code
   * @param {string} reason
   */
  drop (code, reason) {
    const ws = this.#ws
    if (!ws || ws.readyState !== WebSocket.OPEN) return
    ws.close(code, reason)
    // No close handshake from a vendor that went silent: do not wait 30 s for it.
    setTimeout(() => ws.terminate(), 2000).unref()
  }

  /**
   * Closes the connection (with `code` and `reason`) and stays away until
   * connect().
   * @param {number} [code]
   * @param {string} [reason]
   */
  async stop (code = 1000, reason = 'fetcher stopping') {
    this.#stopped = true
    this.#connectAtClose = false
    if (this.#retry) clearTimeout(this.#retry)
    this.#retry = null
    const ws = this.#ws
    if (!ws) return
    if (ws.readyState === WebSocket.CLOSED) return
    const closed = new Promise((resolve) => ws.once('close', resolve))
    if (ws.readyState === WebSocket.CONNECTING) ws.terminate()
    else ws.close(code, reason)
    const timer = setTimeout(() => ws.terminate(), 2000)
    await closed
    clearTimeout(timer)
  }
}
