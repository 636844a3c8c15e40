// wsps client: one connection to a wsps gateway that stays connected by
// itself and keeps a consistent quote per watched symbol. WebSocket first;
// Server-Sent Events (GET /sse) when there is no WebSocket or its upgrade
// fails. With `getToken` it authenticates every connection and refreshes
// the token before it expires.
//
// Plain ESM with no Node-only or DOM-only APIs, so the page, tests and tools
// share it. In Node 20 pass a WebSocket constructor (the `ws` package):
//   new WspsClient({ url: 'ws://127.0.0.1:8081/ws', WebSocket })
// See docs/client.md.

import { AUTH_CLOSE_CODES, ClientOp, CloseCode, ErrorCode, Limits, NO_RECONNECT_CODES, Outcome, PROTOCOL_VERSION, QuoteReceiver, ServerOp } from './protocol.js'
import { SseSocket } from './sse-socket.js'

/** The gateway rejects sub/unsub requests with more symbols than this (docs/protocol.md). */
const { MAX_SYMBOLS_PER_REQUEST } = Limits
/** Unanswered requests remembered per connection. */
const MAX_INFLIGHT = 256
/** WebSocket.OPEN, the same in browsers and `ws`. */
const OPEN = 1
/** Refresh the token this long before it expires: a quarter of its life, at most 30 s. */
const refreshLeadMs = (/** @type {number} */ expiresInMs) => Math.min(30_000, expiresInMs / 4)

/** Errors whose `symbols` leave the watch set even when they answer no request of ours (see #onError). */
const DROPS_NAMED = Object.freeze(/** @type {string[]} */ ([ErrorCode.GRANT_REVOKED, ErrorCode.BAD_SYMBOL, ErrorCode.NOT_ENTITLED, ErrorCode.TOO_MANY_SUBSCRIPTIONS]))

/** The transports, in the words the page shows. */
export const Transport = Object.freeze({
  WEBSOCKET: 'websocket',
  SSE: 'sse'
})

/** Connection states, in the words the page shows. */
export const Status = Object.freeze({
  /** Created, connect() not called yet. */
  IDLE: 'idle',
  /** First connection attempt. */
  CONNECTING: 'connecting',
  /** `hello` received: subscriptions are (being) restored and quotes flow. */
  LIVE: 'live',
  /** Lost or never got a connection; retrying (see `retryAt`). */
  RECONNECTING: 'reconnecting',
  /** Not connected and not retrying: close() was called or the server said not to. */
  OFFLINE: 'offline'
})

/**
 * @typedef {typeof Status[keyof typeof Status]} StatusState
 *
 * @typedef {object} Quote a full quote (see docs/protocol.md)
 * @property {string} symbol
 * @property {number} seq
 * @property {number} ts ms since the epoch, when the fetcher produced it
 * @property {number} bid
 * @property {number} ask
 * @property {number} last
 * @property {number} bidSize
 * @property {number} askSize
 * @property {number} volume
 * @property {number} open
 * @property {number} high
 * @property {number} low
 * @property {number} prevClose
 *
 * @typedef {{symbol: string, seq: number, ts: number, base?: number} & Partial<Quote>} Delta
 *
 * @typedef {object} Hello
 * @property {'hello'} op
 * @property {number} v
 * @property {string} node
 * @property {number} heartbeatMs
 * @property {{maxSubscriptions: number, maxPayload: number, ratePerSec: number, rateBurst: number, batchMs: number}} limits
 * @property {number} [expiresInMs] auth on and the token has `exp`: ms until the connection closes with 4002 unless the token is refreshed
 *
 * @typedef {object} StatusInfo
 * @property {StatusState} state
 * @property {string | null} url the URL in use, or tried next
 * @property {string | null} node `hello.node` of the current (or last) connection
 * @property {number} attempt failed connection attempts in a row
 * @property {number | null} retryAt when the next attempt starts (ms since the epoch), while waiting for it
 * @property {number | null} retryInMs the delay chosen for it (backoff, or the 1012 jitter)
 * @property {number | null} closeCode close code of the last connection
 * @property {string} closeReason
 * @property {'websocket' | 'sse' | null} transport of the current (or last) connection
 *
 * @typedef {object} ErrorInfo
 * @property {string} code an ErrorCode, or CLOSED / CANCELLED / BAD_SERVER_FRAME from the client itself
 * @property {string} message
 * @property {string[]} [symbols]
 * @property {number | string} [id]
 *
 * @typedef {object} QuoteEvent
 * @property {string} symbol
 * @property {Quote} quote the full quote after this update (a new object per update)
 * @property {Quote | null} previous the one before, if any
 * @property {boolean} snapshot true when it came from a `snap` (a (re)subscription), not a tick
 * @property {number} latencyMs receive time minus `quote.ts` (includes clock skew)
 *
 * @typedef {object} GapEvent
 * @property {string} symbol
 * @property {number | null} heldSeq
 * @property {number} seq
 * @property {number} base
 *
 * @typedef {object} WspsEvents
 * @property {StatusInfo} status the connection state changed
 * @property {Hello} hello a connection was established
 * @property {QuoteEvent} quote a symbol's quote changed
 * @property {ErrorInfo} error the server rejected something (or the client gave up on it)
 * @property {{symbols: string[], error: ErrorInfo}} rejected symbols dropped from the watch set because the server refused them
 * @property {GapEvent} gap a delta did not continue the held quote; the symbol is being resubscribed
 *
 * @typedef {{readyState: number, send (data: string): void, close (code?: number, reason?: string): void, terminate? (): void,
 *   onopen: any, onmessage: any, onclose: any, onerror: any}} SocketLike
 * @typedef {new (url: string) => SocketLike} SocketConstructor
 *
 * @typedef {object} Delivery how the server delivers a symbol (docs/protocol.md, "Delivery modes")
 * @property {'merge' | 'distinct'} [mode] merge (default): ticks meeting in one pass merge into one
 *   update; distinct: every tick, in order, never merged
 * @property {number} [maxRate] merge only: at most this many updates per second per symbol (0.1-1000)
 *
 * @typedef {object} WspsClientOptions
 * @property {string | string[]} [url] gateway URL(s), tried in turn on each reconnect; default: same-origin `/ws`
 * @property {SocketConstructor} [WebSocket] default: globalThis.WebSocket
 * @property {Iterable<string>} [symbols] initial watch set
 * @property {number} [initialBackoffMs] first retry delay ceiling (default 500)
 * @property {number} [maxBackoffMs] retry delay cap (default 30000)
 * @property {number} [restartJitterMs] retry delay after a 1012 drain is random in [0, this) (default 500)
 * @property {number} [stableMs] a connection live this long resets the backoff (default 5000)
 * @property {number} [connectTimeoutMs] no `hello` within this: try again (default 10000)
 * @property {number} [heartbeatMs] used until `hello` says otherwise (default 15000)
 * @property {number} [resyncGraceMs] how long to wait for the snapshot of a resubscribed symbol before resubscribing again (default 5000)
 * @property {number} [retryRejectedMs] delay before re-sending subscriptions after RATE_LIMITED or INTERNAL (default 1000)
 * @property {() => number} [random] for tests; default Math.random
 * @property {() => Promise<string> | string} [getToken] a JWT for the gateway, asked for before every connection and before the current token expires
 * @property {'auto' | 'websocket' | 'sse'} [transport] auto (default): WebSocket, SSE when there is none or its upgrade fails
 * @property {typeof fetch} [fetch] for the SSE transport; default globalThis.fetch
 */

/**
 * Retry delay after `attempt` failures in a row: exponential, capped, with
 * "equal jitter" (between half and all of the ceiling) so a fleet of clients
 * cut off at once spreads out, yet none retries in a tight loop.
 *
 * @param {number} attempt 0 for the first retry
 * @param {{initialMs: number, maxMs: number}} limits
 * @param {() => number} [random]
 */
export function backoffDelay (attempt, { initialMs, maxMs }, random = Math.random) {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30))
  return Math.round(ceiling / 2 + random() * ceiling / 2)
}

/**
 * Same-origin `/ws` of the page, when there is a page.
 * @returns {string[]}
 */
function defaultUrls () {
  const loc = /** @type {{href?: string} | undefined} */ (globalThis.location)
  if (!loc?.href) throw new TypeError('WspsClient: options.url is required outside a browser page')
  const u = new URL('/ws', loc.href)
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:'
  return [u.href]
}

/**
 * @template T
 * @param {T[]} list
 * @param {number} size
 */
function chunks (list, size) {
  /** @type {T[][]} */
  const out = []
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size))
  return out
}

export class WspsClient {
  /** @type {string[]} */
  urls
  /** @type {SocketConstructor | null} */
  #WebSocket
  #opts
  /** @type {(() => Promise<string> | string) | null} */
  #getToken
  /** @type {'auto' | 'websocket' | 'sse'} */
  #transportMode
  /** The next attempt uses SSE: no WebSocket here, or its last upgrade failed. */
  #useSse = false
  /** The current socket opened (a WebSocket upgrade that never opens makes the next attempt SSE). */
  #opened = false
  /** `id:` of the last SSE event, resumed from by the next stream. */
  #lastEventId = ''
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #refreshTimer
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #restartTimer
  /** @type {Set<string>} what the user wants, in the order added */
  #wanted
  /** @type {Set<string>} what the server holds, from the latest ack */
  #serverSubs = new Set()
  /** Held quotes by the receiver rules; a resync's `since` is when its snapshot was asked for (deltas before it are expected gaps). */
  #receiver = new QuoteReceiver()
  /** @type {Map<number, {op: string, symbols: string[]}>} requests awaiting ack/error, by id */
  #inflight = new Map()
  /** @type {Map<string, Delivery>} delivery of the watched symbols that do not use the default (merge, every update) */
  #delivery = new Map()
  /** @type {Map<number, number>} ping id -> sent at */
  #pings = new Map()
  /** @type {Set<{pending: Set<string>, resolve: (r: {ok: true} | {ok: false, error: ErrorInfo}) => void}>} */
  #waiters = new Set()
  /** @type {Map<string, Set<Function>>} */
  #listeners = new Map()

  /** @type {SocketLike | null} */
  #socket = null
  /** Bumped per socket: events of an abandoned socket are ignored. */
  #gen = 0
  #urlIndex = 0
  #nextId = 1
  #attempt = 0
  #stopped = true
  #live = false
  #everConnected = false
  #liveSince = 0
  #lastFrameAt = 0
  #lastPingAt = 0
  #heartbeatMs
  /** @type {Hello | null} */
  #hello = null
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #retryTimer
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #helloTimer
  /** @type {ReturnType<typeof setInterval> | undefined} */
  #heartbeatTimer
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #reconcileTimer
  /** @type {StatusInfo} */
  #status
  /** Round trip of the last answered ping, ms. */
  rttMs = /** @type {number | null} */ (null)

  /** @param {WspsClientOptions} [options] */
  constructor (options = {}) {
    this.urls = options.url === undefined ? defaultUrls() : [options.url].flat()
    if (this.urls.length === 0) throw new TypeError('WspsClient: options.url is empty')
    this.#transportMode = options.transport ?? 'auto'
    const WS = options.WebSocket ?? /** @type {SocketConstructor | undefined} */ (globalThis.WebSocket) ?? null
    if (!WS && this.#transportMode === 'websocket') throw new TypeError('WspsClient: no WebSocket here; pass options.WebSocket (in Node: the ws package)')
    this.#WebSocket = WS
    this.#useSse = this.#transportMode === 'sse' || !WS
    this.#getToken = options.getToken ?? null
    this.#opts = {
      initialBackoffMs: options.initialBackoffMs ?? 500,
      maxBackoffMs: options.maxBackoffMs ?? 30_000,
      restartJitterMs: options.restartJitterMs ?? 500,
      stableMs: options.stableMs ?? 5000,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      resyncGraceMs: options.resyncGraceMs ?? 5000,
      retryRejectedMs: options.retryRejectedMs ?? 1000,
      random: options.random ?? Math.random,
      fetch: options.fetch
    }
    this.#heartbeatMs = options.heartbeatMs ?? 15_000
    this.#wanted = new Set(options.symbols ?? [])
    this.#status = { state: Status.IDLE, url: this.urls[0], node: null, attempt: 0, retryAt: null, retryInMs: null, closeCode: null, closeReason: '', transport: null }
  }

  // ---- public API ----------------------------------------------------------

  /** @returns {Readonly<StatusInfo>} */
  get status () { return this.#status }
  /** @returns {Hello | null} the `hello` of the current connection */
  get hello () { return this.#live ? this.#hello : null }
  /** @returns {string[]} the watch set, in the order added */
  get symbols () { return [...this.#wanted] }
  /**
   * @param {string} symbol
   * @returns {Quote | undefined} the latest full quote held
   */
  quote (symbol) { return /** @type {Quote | undefined} */ (this.#receiver.quote(symbol)) }

  /**
   * Listens to an event; returns a function that stops listening.
   * @template {keyof WspsEvents} K
   * @param {K} type
   * @param {(detail: WspsEvents[K]) => void} listener
   * @returns {() => void}
   */
  on (type, listener) {
    let set = this.#listeners.get(type)
    if (!set) this.#listeners.set(type, set = new Set())
    set.add(listener)
    return () => { set.delete(listener) }
  }

  /** Starts connecting (and staying connected). Idempotent. */
  connect () {
    if (!this.#stopped) return
    this.#stopped = false
    this.#attempt = 0
    this.#open()
  }

  /** Skips the wait of a pending retry (e.g. when the browser goes online again). */
  reconnectNow () {
    if (this.#live || (this.#socket && !this.#stopped)) return
    clearTimeout(this.#retryTimer)
    this.#stopped = false
    this.#open()
  }

  /** Closes for good (1000); no reconnect until connect() is called again. */
  close () {
    this.#stopped = true
    clearTimeout(this.#retryTimer)
    const ws = this.#socket
    this.#dropConnection()
    if (ws) {
      try { ws.close(CloseCode.NORMAL) } catch {}
    }
    this.#settleAll({ code: 'CLOSED', message: 'client closed' })
    this.#setStatus(Status.OFFLINE, { closeCode: CloseCode.NORMAL, closeReason: 'client closed', retryAt: null, retryInMs: null })
  }

  /**
   * Adds symbols to the watch set. They are sent now when live, else on
   * (re)connect. Resolves once the server holds all of them, or with the
   * error that made it refuse them; never rejects, so fire-and-forget is safe.
   *
   * A symbol already watched with another delivery is asked for again with
   * the new one (the server answers with a fresh snapshot).
   *
   * @param {string[]} symbols upper-case tickers (the server validates them)
   * @param {Delivery} [delivery] e.g. `{mode: 'distinct'}` for every tick, or
   *   `{maxRate: 1}` for rows out of view (WebSocket only; SSE streams merge)
   * @returns {Promise<{ok: true} | {ok: false, error: ErrorInfo}>}
   */
  subscribe (symbols, delivery = {}) {
    const list = [...new Set(symbols)]
    const key = deliveryKey(delivery)
    const send = list.filter((s) => !this.#wanted.has(s) || deliveryKey(this.#delivery.get(s)) !== key)
    for (const s of list) {
      this.#wanted.add(s)
      if (key === '') this.#delivery.delete(s)
      else this.#delivery.set(s, delivery)
    }
    const result = this.#waitHeld(list)
    if (this.#live) for (const chunk of chunks(send, MAX_SYMBOLS_PER_REQUEST)) this.#request(ClientOp.SUB, chunk)
    return result
  }

  /**
   * Removes symbols from the watch set; their quotes stop at once (late
   * frames for them are ignored).
   *
   * @param {string[]} symbols
   */
  unsubscribe (symbols) {
    const removed = symbols.filter((s) => this.#wanted.delete(s))
    for (const s of removed) {
      this.#delivery.delete(s)
      this.#receiver.forget(s)
    }
    this.#settle(removed, { code: 'CANCELLED', message: 'unsubscribed before the server confirmed' })
    if (this.#live) for (const chunk of chunks(removed, MAX_SYMBOLS_PER_REQUEST)) this.#request(ClientOp.UNSUB, chunk)
  }

  // ---- connection ------------------------------------------------------------

  /**
   * Opens a connection: asks for a token first when there is a token
   * source, then a WebSocket (or an SSE stream).
   *
   * @param {{quiet?: boolean}} [options] quiet: an SSE stream reopened for a
   *   new watch set or token, not a reconnect the user should see
   */
  #open ({ quiet = false } = {}) {
    clearTimeout(this.#retryTimer)
    const url = this.urls[this.#urlIndex % this.urls.length]
    if (!quiet) this.#setStatus(this.#everConnected || this.#attempt > 0 ? Status.RECONNECTING : Status.CONNECTING, { url, retryAt: null, retryInMs: null })
    const gen = ++this.#gen
    // Until the socket exists, the hello timeout also bounds getToken().
    this.#helloTimer = setTimeout(() => { if (gen === this.#gen) this.#abandon('no hello from the server') }, this.#opts.connectTimeoutMs)
    if (this.#getToken === null) {
      this.#connectSocket(url, gen, null)
      return
    }
    Promise.resolve().then(() => /** @type {() => Promise<string> | string} */ (this.#getToken)()).then(
      (token) => { if (gen === this.#gen) this.#connectSocket(url, gen, String(token)) },
      (err) => {
        if (gen !== this.#gen) return
        this.#emit('error', { code: 'TOKEN_FAILED', message: `getToken() failed: ${String(err?.message ?? err)}` })
        this.#dropConnection()
        this.#scheduleReconnect(null, 'no token')
      })
  }

  /**
   * @param {string} url
   * @param {number} gen
   * @param {string | null} token
   */
  #connectSocket (url, gen, token) {
    const sse = this.#useSse
    /** @type {SocketLike} */
    let ws
    try {
      if (sse) {
        const max = this.#hello?.limits?.maxSubscriptions ?? Infinity
        const stream = new SseSocket(url, { symbols: [...this.#wanted].slice(0, max), token, lastEventId: this.#lastEventId, fetch: this.#opts.fetch })
        stream.onheartbeat = () => { if (gen === this.#gen) this.#lastFrameAt = Date.now() }
        ws = stream
      } else {
        ws = new /** @type {SocketConstructor} */ (this.#WebSocket)(url)
      }
    } catch (err) {
      // A malformed URL throws synchronously; treat it like a refused connection.
      this.#emit('error', { code: 'CONNECT_FAILED', message: String(/** @type {Error} */ (err).message ?? err) })
      this.#dropConnection()
      this.#scheduleReconnect(null, '')
      return
    }
    this.#socket = ws
    this.#opened = false
    this.#status = { ...this.#status, transport: sse ? Transport.SSE : Transport.WEBSOCKET }
    ws.onmessage = (/** @type {{data: unknown}} */ ev) => { if (gen === this.#gen) this.#onFrame(String(ev.data)) }
    ws.onclose = (/** @type {{code: number, reason: string}} */ ev) => {
      if (gen !== this.#gen) return
      if (ws instanceof SseSocket) {
        this.#lastEventId = ws.lastEventId
        // A coded refusal (4xx) came from a gateway: not a failed upgrade.
        if (ws.answered) this.#opened = true
      }
      this.#onClose(ev.code, String(ev.reason ?? ''))
    }
    // The close event that follows an error carries everything we act on; an
    // error listener must still exist or `ws` (an EventEmitter) would throw.
    ws.onerror = () => {}
    ws.onopen = () => {
      if (gen !== this.#gen) return
      this.#opened = true
      // Browsers cannot set headers on a WebSocket: the token is the first frame.
      if (token !== null && !sse) this.#send({ op: ClientOp.AUTH, token })
    }
  }

  /**
   * Gives up on the current socket without waiting for its close handshake:
   * a dead peer would keep us waiting for minutes.
   * @param {string} reason
   */
  #abandon (reason) {
    const ws = this.#socket
    const opened = this.#opened
    this.#dropConnection()
    if (ws) this.#pickTransport(opened)
    if (ws) {
      try {
        if (typeof ws.terminate === 'function') ws.terminate()
        else ws.close(4000, reason)
      } catch {}
    }
    this.#scheduleReconnect(1006, reason)
  }

  /**
   * @param {number} code
   * @param {string} reason
   */
  #onClose (code, reason) {
    const opened = this.#opened
    this.#dropConnection()
    if (this.#stopped) return
    this.#pickTransport(opened)
    // With a token source, "get a new token first" is what every connection does anyway.
    const needsToken = /** @type {readonly number[]} */ (AUTH_CLOSE_CODES).includes(code)
    if (!(needsToken && this.#getToken) && /** @type {readonly number[]} */ (NO_RECONNECT_CODES).includes(code)) {
      this.#stopped = true
      this.#settleAll({ code: 'CLOSED', message: `server closed the connection (${code})` })
      this.#setStatus(Status.OFFLINE, { closeCode: code, closeReason: reason, retryAt: null, retryInMs: null })
      return
    }
    this.#scheduleReconnect(code, reason)
  }

  /**
   * Fallback: a WebSocket whose upgrade failed (it never opened) makes the
   * next attempt SSE; an SSE stream that failed the same way sends the next
   * attempt back to WebSocket, so a gateway that was down is not left on SSE.
   *
   * @param {boolean} opened whether the socket that closed had opened
   */
  #pickTransport (opened) {
    if (this.#transportMode !== 'auto' || opened || this.#WebSocket === null) return
    this.#useSse = !this.#useSse
  }

  /** Forgets the current socket and everything tied to it; keeps the watch set and quotes. */
  #dropConnection () {
    this.#gen++
    this.#opened = false
    this.#socket = null
    this.#live = false
    this.#serverSubs.clear()
    this.#inflight.clear()
    this.#pings.clear()
    clearTimeout(this.#helloTimer)
    clearInterval(this.#heartbeatTimer)
    clearTimeout(this.#reconcileTimer)
    clearTimeout(this.#refreshTimer)
    clearTimeout(this.#restartTimer)
    this.#restartTimer = undefined
  }

  /**
   * @param {number | null} code
   * @param {string} reason
   */
  #scheduleReconnect (code, reason) {
    if (this.#liveSince && Date.now() - this.#liveSince >= this.#opts.stableMs) this.#attempt = 0
    this.#liveSince = 0
    // 1012: the gateway is draining on purpose and has already spread its
    // closes over a window; come back at once (elsewhere), only jittered.
    const delay = code === CloseCode.SERVICE_RESTART
      ? Math.floor(this.#opts.random() * this.#opts.restartJitterMs)
      : backoffDelay(this.#attempt++, { initialMs: this.#opts.initialBackoffMs, maxMs: this.#opts.maxBackoffMs }, this.#opts.random)
    // Rotate: the next gateway in the list is the likeliest to be up.
    this.#urlIndex = (this.#urlIndex + 1) % this.urls.length
    const retryAt = Date.now() + delay
    this.#setStatus(Status.RECONNECTING, { url: this.urls[this.#urlIndex], retryAt, retryInMs: delay, closeCode: code, closeReason: reason })
    this.#retryTimer = setTimeout(() => this.#open(), delay)
  }

  // ---- frames ----------------------------------------------------------------

  /** @param {string} text */
  #onFrame (text) {
    this.#lastFrameAt = Date.now()
    let msg
    try {
      msg = JSON.parse(text)
    } catch {
      this.#emit('error', { code: 'BAD_SERVER_FRAME', message: 'the server sent a frame that is not JSON' })
      return
    }
    switch (msg?.op) {
      case ServerOp.HELLO: return this.#onHello(msg)
      case ServerOp.QUOTES: return this.#onDeltas(msg.quotes ?? [])
      case ServerOp.SNAP: return this.#onSnap(msg.quotes ?? [])
      case ServerOp.ACK: return this.#onAck(msg)
      case ServerOp.ERROR: return this.#onError(msg)
      case ServerOp.PONG: return this.#onPong(msg)
    }
  }

  /** @param {Hello} hello */
  #onHello (hello) {
    clearTimeout(this.#helloTimer)
    if (hello.v !== PROTOCOL_VERSION) {
      this.#emit('error', { code: 'BAD_SERVER_FRAME', message: `server speaks protocol v${hello.v}, this client v${PROTOCOL_VERSION}` })
    }
    this.#hello = hello
    this.#live = true
    this.#everConnected = true
    this.#liveSince = Date.now()
    if (hello.heartbeatMs > 0) this.#heartbeatMs = hello.heartbeatMs
    this.#startHeartbeat()
    this.#setStatus(Status.LIVE, { node: hello.node ?? null, retryAt: null, retryInMs: null, attempt: 0 })
    this.#emit('hello', hello)
    this.#scheduleRefresh(hello.expiresInMs)
    this.#resubscribeAll()
  }

  /**
   * The token expires in `expiresInMs` (from `hello`, or the `ack` of a
   * refresh): ask getToken() for a new one a bit before.
   *
   * @param {number | undefined} expiresInMs
   */
  #scheduleRefresh (expiresInMs) {
    clearTimeout(this.#refreshTimer)
    if (this.#getToken === null || typeof expiresInMs !== 'number') return
    const gen = this.#gen
    this.#refreshTimer = setTimeout(() => { if (gen === this.#gen) this.#refresh() }, Math.max(0, expiresInMs - refreshLeadMs(expiresInMs)))
  }

  /**
   * A WebSocket sends the new token in-band and keeps its subscriptions; an
   * SSE stream carries its token in the request, so it is reopened.
   */
  #refresh () {
    if (this.#status.transport === Transport.SSE) {
      this.#restartStream()
      return
    }
    const gen = this.#gen
    Promise.resolve().then(() => /** @type {() => Promise<string> | string} */ (this.#getToken)()).then(
      (token) => {
        if (gen !== this.#gen) return
        const id = this.#nextId++
        this.#inflight.set(id, { op: ClientOp.AUTH, symbols: [] })
        this.#send({ op: ClientOp.AUTH, token: String(token), id })
      },
      (err) => {
        if (gen !== this.#gen) return
        // The connection lives until exp (then 4002 and a reconnect); try again before that.
        this.#emit('error', { code: 'TOKEN_FAILED', message: `getToken() failed: ${String(err?.message ?? err)}` })
        this.#refreshTimer = setTimeout(() => { if (gen === this.#gen) this.#refresh() }, this.#opts.retryRejectedMs)
      })
  }

  /**
   * SSE: the watch set and the token are part of the request, so changing
   * either opens a new stream (once per burst of changes). Quotes held stay;
   * the new stream's `snap` brings them up to date.
   */
  #restartStream () {
    if (this.#restartTimer !== undefined) return
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined
      if (this.#stopped || this.#status.transport !== Transport.SSE) return
      const ws = this.#socket
      this.#dropConnection()
      try { ws?.close(CloseCode.NORMAL) } catch {}
      this.#open({ quiet: true })
    }, 0)
  }

  /** A new connection holds nothing: ask for the whole watch set again; its snapshots resync every quote. */
  #resubscribeAll () {
    const all = [...this.#wanted]
    if (all.length === 0) return
    if (this.#status.transport === Transport.SSE) {
      // The stream was opened with the watch set: its ack and snap follow.
      const now = Date.now()
      for (const s of all) this.#receiver.resync(s, now)
      return
    }
    const max = this.#hello?.limits?.maxSubscriptions ?? Infinity
    const over = all.slice(max)
    if (over.length) this.#reject(over, { code: ErrorCode.TOO_MANY_SUBSCRIPTIONS, message: `this gateway allows ${max} subscriptions` })
    const keep = all.slice(0, max)
    const now = Date.now()
    for (const s of keep) this.#receiver.resync(s, now)
    for (const chunk of chunks(keep, MAX_SYMBOLS_PER_REQUEST)) this.#request(ClientOp.SUB, chunk)
  }

  /** @param {Quote[]} quotes */
  #onSnap (quotes) {
    const now = Date.now()
    for (const q of quotes) {
      if (!this.#wanted.has(q.symbol)) continue // a late answer for a symbol since removed
      const previous = this.quote(q.symbol) ?? null
      this.#receiver.snap(q)
      const quote = /** @type {Quote} */ (this.quote(q.symbol))
      this.#emit('quote', { symbol: q.symbol, quote, previous, snapshot: true, latencyMs: now - q.ts })
    }
  }

  /** @param {Delta[]} deltas */
  #onDeltas (deltas) {
    const now = Date.now()
    /** @type {string[]} */
    const gaps = []
    for (const d of deltas) {
      const symbol = d.symbol
      if (!this.#wanted.has(symbol)) continue
      const held = this.quote(symbol)
      const outcome = this.#receiver.delta(d)
      if (outcome === Outcome.APPLIED) {
        const quote = /** @type {Quote} */ (this.quote(symbol))
        this.#emit('quote', { symbol, quote, previous: held ?? null, snapshot: false, latencyMs: now - d.ts })
        continue
      }
      // Not applicable (receiver rule 3). Right after a (re)subscribe that
      // is expected until the snapshot arrives; otherwise it is a gap: drop
      // it and ask again.
      const since = this.#receiver.resyncingSince(symbol)
      if (outcome === Outcome.RESYNCING && now - /** @type {number} */ (since) < this.#opts.resyncGraceMs) continue
      gaps.push(symbol)
      this.#emit('gap', { symbol, heldSeq: held?.seq ?? null, seq: d.seq, base: d.base ?? d.seq - 1 })
    }
    if (gaps.length === 0) return
    for (const s of gaps) this.#receiver.resync(s, now)
    // unsub + sub: a plain sub of a held symbol is a no-op and sends no snapshot.
    this.#request(ClientOp.UNSUB, gaps)
    this.#request(ClientOp.SUB, gaps)
  }

  /** @param {{id?: number, symbols?: string[], expiresInMs?: number}} ack */
  #onAck (ack) {
    const req = typeof ack.id === 'number' ? this.#inflight.get(ack.id) : undefined
    if (typeof ack.id === 'number') this.#inflight.delete(ack.id)
    if (req?.op === ClientOp.AUTH) this.#scheduleRefresh(ack.expiresInMs)
    if (!Array.isArray(ack.symbols)) return
    // The ack lists the connection's full subscription set after the request.
    this.#serverSubs = new Set(ack.symbols)
    for (const w of this.#waiters) {
      for (const s of w.pending) if (this.#serverSubs.has(s)) w.pending.delete(s)
      if (w.pending.size === 0) {
        this.#waiters.delete(w)
        w.resolve({ ok: true })
      }
    }
  }

  /** @param {{id?: number | string, code: string, message: string, symbols?: string[]}} msg */
  #onError (msg) {
    const req = typeof msg.id === 'number' ? this.#inflight.get(msg.id) : undefined
    if (req) this.#inflight.delete(/** @type {number} */ (msg.id))
    /** @type {ErrorInfo} */
    const error = { code: msg.code, message: msg.message ?? '' }
    if (msg.symbols) error.symbols = msg.symbols
    if (msg.id !== undefined) error.id = msg.id
    this.#emit('error', error)

    if (req?.op === ClientOp.SUB) {
      switch (msg.code) {
        case ErrorCode.BAD_SYMBOL:
        case ErrorCode.NOT_ENTITLED: {
          // The whole request was refused: drop the named symbols and ask
          // again for the others that came with them.
          const bad = msg.symbols?.length ? msg.symbols : req.symbols
          this.#reject(bad, error)
          const rest = req.symbols.filter((s) => this.#wanted.has(s) && !this.#serverSubs.has(s))
          if (rest.length) this.#request(ClientOp.SUB, rest)
          return
        }
        case ErrorCode.TOO_MANY_SUBSCRIPTIONS:
        case ErrorCode.BAD_REQUEST:
          this.#reject(req.symbols, error)
          return
        case ErrorCode.DRAINING:
          return // a 1012 close follows; the next connection resubscribes everything
      }
    }
    // Not the answer to a request: a refreshed token revoking grants, or a
    // refused SSE stream (its request is the stream itself).
    if (!req && msg.symbols?.length && DROPS_NAMED.includes(msg.code)) {
      this.#reject(msg.symbols, error)
      return
    }
    // RATE_LIMITED has no id (the dropped message is unknown) and INTERNAL is
    // retryable: bring the server in line with the watch set a bit later.
    if (msg.code === ErrorCode.RATE_LIMITED || msg.code === ErrorCode.INTERNAL) this.#scheduleReconcile()
  }

  /** @param {{id?: number}} msg */
  #onPong (msg) {
    const sentAt = typeof msg.id === 'number' ? this.#pings.get(msg.id) : undefined
    if (sentAt === undefined) return
    this.#pings.delete(/** @type {number} */ (msg.id))
    this.rttMs = Date.now() - sentAt
  }

  #scheduleReconcile () {
    clearTimeout(this.#reconcileTimer)
    this.#reconcileTimer = setTimeout(() => {
      if (!this.#live) return
      // Both are idempotent on the server, so re-sending what it may already hold is safe.
      const remove = [...this.#serverSubs].filter((s) => !this.#wanted.has(s))
      const add = [...this.#wanted].filter((s) => !this.#serverSubs.has(s))
      for (const chunk of chunks(remove, MAX_SYMBOLS_PER_REQUEST)) this.#request(ClientOp.UNSUB, chunk)
      for (const chunk of chunks(add, MAX_SYMBOLS_PER_REQUEST)) this.#request(ClientOp.SUB, chunk)
    }, this.#opts.retryRejectedMs)
  }

  // ---- heartbeat -------------------------------------------------------------

  // Browsers answer the server's pings without telling the page, so the
  // client cannot see them: it sends {"op":"ping"} every heartbeatMs and
  // treats 2 x heartbeatMs without any frame as a dead connection.
  #startHeartbeat () {
    clearInterval(this.#heartbeatTimer)
    const hb = this.#heartbeatMs
    const tickMs = Math.max(25, Math.floor(hb / 2))
    const gen = this.#gen
    let lastTick = Date.now()
    this.#lastFrameAt = lastTick
    this.#lastPingAt = lastTick
    this.#heartbeatTimer = setInterval(() => {
      if (gen !== this.#gen) return
      const now = Date.now()
      // Timers that ran late (a background tab, a suspended laptop) mean we
      // were not looking, not that the server was silent: ping and look again.
      const late = now - lastTick > 2 * tickMs
      lastTick = now
      if (!late && now - this.#lastFrameAt >= 2 * hb) {
        this.#abandon(`no frame for ${2 * hb} ms`)
        return
      }
      if (late || now - this.#lastPingAt >= hb) this.#ping()
    }, tickMs)
  }

  #ping () {
    const id = this.#nextId++
    this.#lastPingAt = Date.now()
    this.#pings.set(id, this.#lastPingAt)
    if (this.#pings.size > 8) this.#pings.delete(/** @type {number} */ (this.#pings.keys().next().value))
    this.#send({ op: ClientOp.PING, id })
  }

  // ---- helpers ---------------------------------------------------------------

  /**
   * @param {string} op
   * @param {string[]} symbols
   */
  #request (op, symbols) {
    if (this.#status.transport === Transport.SSE) {
      this.#restartStream()
      return
    }
    if (op === ClientOp.SUB && this.#delivery.size > 0) {
      // One sub per delivery: each carries its symbols' mode and maxRate.
      /** @type {Map<string, string[]>} */
      const groups = new Map()
      for (const s of symbols) {
        const key = deliveryKey(this.#delivery.get(s))
        const group = groups.get(key)
        if (group) group.push(s)
        else groups.set(key, [s])
      }
      for (const group of groups.values()) this.#sendRequest(op, group, this.#delivery.get(group[0]))
      return
    }
    this.#sendRequest(op, symbols)
  }

  /**
   * @param {string} op
   * @param {string[]} symbols
   * @param {Delivery} [delivery]
   */
  #sendRequest (op, symbols, delivery) {
    const id = this.#nextId++
    this.#inflight.set(id, { op, symbols })
    // Requests the rate limiter dropped are never answered; keep only the
    // newest so a long-lived connection does not collect them forever.
    if (this.#inflight.size > MAX_INFLIGHT) this.#inflight.delete(/** @type {number} */ (this.#inflight.keys().next().value))
    this.#send(delivery === undefined ? { op, symbols, id } : { op, symbols, id, ...delivery })
  }

  /** @param {object} frame */
  #send (frame) {
    const ws = this.#socket
    if (ws && ws.readyState === OPEN) ws.send(JSON.stringify(frame))
  }

  /**
   * Drops symbols the server refused from the watch set and tells whoever waits.
   * @param {string[]} symbols
   * @param {ErrorInfo} error
   */
  #reject (symbols, error) {
    const dropped = symbols.filter((s) => this.#wanted.delete(s))
    for (const s of dropped) this.#receiver.forget(s)
    this.#settle(symbols, error)
    if (dropped.length) this.#emit('rejected', { symbols: dropped, error })
  }

  /**
   * @param {string[]} symbols
   * @returns {Promise<{ok: true} | {ok: false, error: ErrorInfo}>}
   */
  #waitHeld (symbols) {
    const pending = new Set(symbols.filter((s) => !(this.#live && this.#serverSubs.has(s))))
    if (pending.size === 0) return Promise.resolve({ ok: true })
    return new Promise((resolve) => this.#waiters.add({ pending, resolve }))
  }

  /**
   * @param {string[]} symbols
   * @param {ErrorInfo} error
   */
  #settle (symbols, error) {
    for (const w of this.#waiters) {
      if (symbols.some((s) => w.pending.has(s))) {
        this.#waiters.delete(w)
        w.resolve({ ok: false, error })
      }
    }
  }

  /** @param {ErrorInfo} error */
  #settleAll (error) {
    for (const w of this.#waiters) w.resolve({ ok: false, error })
    this.#waiters.clear()
  }

  /**
   * @param {StatusState} state
   * @param {Partial<StatusInfo>} changes
   */
  #setStatus (state, changes) {
    this.#status = { ...this.#status, ...changes, state, attempt: changes.attempt ?? this.#attempt }
    this.#emit('status', this.#status)
  }

  /**
   * @template {keyof WspsEvents} K
   * @param {K} type
   * @param {WspsEvents[K]} detail
   */
  #emit (type, detail) {
    const set = this.#listeners.get(type)
    if (!set) return
    for (const fn of [...set]) {
      try {
        fn(detail)
      } catch (err) {
        // A broken listener must not break the connection state machine;
        // report it the way an uncaught error in an event handler would be.
        setTimeout(() => { throw err })
      }
    }
  }
}

/**
 * @param {Delivery | undefined} delivery
 * @returns {string} '' for the default delivery; equal keys mean the same delivery
 */
function deliveryKey (delivery) {
  if (delivery === undefined) return ''
  const mode = delivery.mode ?? 'merge'
  const rate = delivery.maxRate ?? 0
  return mode === 'merge' && rate === 0 ? '' : `${mode}/${rate}`
}
