// One persistent WebSocket to a vendor: reconnects with capped exponential
// backoff and jitter, and pings so a half-open connection (a vendor that
// vanished without a FIN) is noticed and replaced. It knows nothing of
// quotes: the owner reacts to onOpen (authenticate, resubscribe) and
// onMessage.

import WebSocket from 'ws'

const MAX_BACKOFF_MS = 30_000
/** Vendors send large snapshot arrays; anything larger is not a quote feed. */
const MAX_PAYLOAD = 16 * 1024 * 1024

export class VendorSocket {
  /** @type {WebSocket | null} */
  #ws = null
  #attempt = 0
  #stopped = false
  /** @type {NodeJS.Timeout | null} */
  #retry = null
  /** @type {NodeJS.Timeout | null} */
  #pinger = null
  #opts

  /**
   * @param {object} options
   * @param {string} options.url
   * @param {number} options.backoffMs first reconnect delay
   * @param {number} options.pingMs
   * @param {() => void} options.onOpen
   * @param {(text: string) => void} options.onMessage
   * @param {() => void} options.onClose
   * @param {import('pino').Logger} options.logger
   * @param {import('./../metrics.js').FetcherMetrics} options.metrics
   */
  constructor (options) {
    this.#opts = options
  }

  get open () { return this.#ws?.readyState === WebSocket.OPEN }

  start () {
    this.#connect()
  }

  /** @param {string} frame */
  send (frame) {
    if (this.open) /** @type {WebSocket} */ (this.#ws).send(frame)
  }

  #connect () {
    const { url, pingMs, logger, metrics } = this.#opts
    if (this.#attempt > 0) metrics.streamReconnects.inc()
    const ws = new WebSocket(url, { handshakeTimeout: 10_000, maxPayload: MAX_PAYLOAD })
    this.#ws = ws
    let alive = true
    ws.on('open', () => {
      this.#attempt = 0
      metrics.streamConnected.set(1)
      logger.info({ url }, 'vendor stream connected')
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
    ws.on('close', (code) => {
      if (this.#pinger) clearInterval(this.#pinger)
      this.#pinger = null
      metrics.streamConnected.set(0)
      if (this.#ws !== ws) return
      this.#ws = null
      this.#opts.onClose()
      if (this.#stopped) return
      const base = Math.min(this.#opts.backoffMs * 2 ** this.#attempt++, MAX_BACKOFF_MS)
      // Full jitter on half the delay: replicas that lost the vendor together
      // do not come back together.
      const delay = Math.round(base / 2 + Math.random() * base / 2)
      logger.warn({ code, retryInMs: delay }, 'vendor stream closed; reconnecting')
      this.#retry = setTimeout(() => this.#connect(), delay)
    })
  }

  async stop () {
    this.#stopped = true
    if (this.#retry) clearTimeout(this.#retry)
    const ws = this.#ws
    if (!ws) return
    if (ws.readyState === WebSocket.CLOSED) return
    const closed = new Promise((resolve) => ws.once('close', resolve))
    if (ws.readyState === WebSocket.CONNECTING) ws.terminate()
    else ws.close(1000, 'fetcher stopping')
    const timer = setTimeout(() => ws.terminate(), 2000)
    await closed
    clearTimeout(timer)
  }
}
