// wsps client: one connection to a wsps gateway that stays connected by
// itself and keeps a consistent quote per watched symbol. WebSocket first;
// Server-Sent Events (GET /sse) when there is no WebSocket or its upgrade
// fails. With `getToken` it authenticates every connection and refreshes
// the token before it expires.
//
// Plain ESM with no Node-only or DOM-only APIs: the package's entry points
// (index.js for browsers, node.js for Node, which brings `ws`) export it.
// See the package README and docs/client.md.
//
// This module is the state machine that joins the client's parts: which
// transport (transports.js), when to retry (backoff.js), the token
// (token.js), the watch set (subscriptions.js), the silence check
// (liveness.js), the bar subscriptions and series (bars.js), the order
// books (books.js, held by the protocol's BookReceiver), which symbols
// must not be shown as live (staleness.js) and the listeners (events.js);
// the quotes are held by the protocol's QuoteReceiver.

import { AUTH_CLOSE_CODES, ClientCloseCode, ClientOp, CloseCode, ErrorCode, Limits, NO_RECONNECT_CODES, Outcome, PROTOCOL_VERSION, QuoteReceiver, ReadyState, ServerOp, Subprotocol } from './protocol.js'
import { ENCODINGS, readFrame, subprotocols, writeFrame } from './encoding.js'
import { Retry } from './backoff.js'
import { BarSubscriptions } from './bars.js'
import { BOOK_DEPTHS } from './book.js'
import { BookVerdict } from './book-receiver.js'
import { BookSubscriptions, bookError } from './books.js'
import { Emitter } from './events.js'
import { Liveness } from './liveness.js'
import { Staleness } from './staleness.js'
import { Subscriptions } from './subscriptions.js'
import { TokenSource } from './token.js'
import { Transports } from './transports.js'
import { Status, Transport } from './types.js'

export { backoffDelay } from './backoff.js'
export { Status, Transport } from './types.js'

/**
 * @typedef {import('./types.js').StatusState} StatusState
 * @typedef {import('./types.js').Quote} Quote
 * @typedef {import('./types.js').Delta} Delta
 * @typedef {import('./types.js').Hello} Hello
 * @typedef {import('./types.js').StatusInfo} StatusInfo
 * @typedef {import('./types.js').ErrorInfo} ErrorInfo
 * @typedef {import('./types.js').QuoteEvent} QuoteEvent
 * @typedef {import('./types.js').GapEvent} GapEvent
 * @typedef {import('./types.js').WspsEvents} WspsEvents
 * @typedef {import('./types.js').SocketLike} SocketLike
 * @typedef {import('./types.js').SocketConstructor} SocketConstructor
 * @typedef {import('./types.js').Delivery} Delivery
 * @typedef {import('./types.js').WspsClientOptions} WspsClientOptions
 * @typedef {import('./types.js').Bar} Bar
 * @typedef {import('./types.js').BarSeries} BarSeries
 * @typedef {import('./types.js').BarOptions} BarOptions
 * @typedef {import('./types.js').HeldBook} HeldBook
 * @typedef {import('./types.js').BookSubscribed} BookSubscribed
 */

/** The gateway rejects sub/unsub requests with more symbols than this (docs/protocol.md). */
const { MAX_SYMBOLS_PER_REQUEST } = Limits
/** Unanswered requests remembered per connection. */
const MAX_INFLIGHT = 256
/** @type {ReadonlyMap<string, {seq: number, epoch: string, held?: false}>} */
const NO_CURSORS = new Map()

/** Errors whose `symbols` leave the watch set even when they answer no request of ours (see #onError). */
const DROPS_NAMED = Object.freeze(/** @type {string[]} */ ([ErrorCode.GRANT_REVOKED, ErrorCode.BAD_SYMBOL, ErrorCode.NOT_ENTITLED, ErrorCode.TOO_MANY_SUBSCRIPTIONS]))

/** Refusals of a bars sub that name the symbols at fault: the rest of the request is asked for again. */
const BARS_DROP_NAMED = Object.freeze(/** @type {string[]} */ ([ErrorCode.BAD_SYMBOL, ErrorCode.NOT_ENTITLED, ErrorCode.DELAYED_ONLY]))
/** Refusals of a bars sub as a whole. */
const BARS_DROP_ALL = Object.freeze(/** @type {string[]} */ ([ErrorCode.TOO_MANY_SUBSCRIPTIONS, ErrorCode.BAD_INTERVAL, ErrorCode.BAD_BARS, ErrorCode.BAD_REQUEST]))
/** Refusals of a book sub that name the symbols at fault: the rest of the request is asked for again. */
const BOOK_DROP_NAMED = Object.freeze(/** @type {string[]} */ ([ErrorCode.BAD_SYMBOL, ErrorCode.NOT_ENTITLED]))
/** Refusals of a book sub as a whole. */
const BOOK_DROP_ALL = Object.freeze(/** @type {string[]} */ ([ErrorCode.TOO_MANY_SUBSCRIPTIONS, ErrorCode.BAD_BOOK, ErrorCode.BAD_REQUEST]))

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
 * @param {string[]} a
 * @param {string[]} b
 * @returns {boolean} the same symbols, in any order
 */
function sameSymbols (a, b) {
  const set = new Set(a)
  return set.size === b.length && b.every((s) => set.has(s))
}

/**
 * @param {import('./sse-socket.js').StreamBooks | null} a
 * @param {import('./sse-socket.js').StreamBooks | null} b
 * @returns {boolean} the same books
 */
function sameStreamBooks (a, b) {
  if (a === null || b === null) return a === b
  return a.depth === b.depth && a.delivery.mode === b.delivery.mode && a.delivery.maxRate === b.delivery.maxRate && sameSymbols(a.symbols, b.symbols)
}

/**
 * @param {import('./sse-socket.js').StreamBars | null} a
 * @param {import('./sse-socket.js').StreamBars | null} b
 * @returns {boolean} the same series (a backfill alone asks for no new one, as over WebSocket)
 */
function sameStreamBars (a, b) {
  if (a === null || b === null) return a === b
  return a.interval === b.interval && a.delayed === b.delayed && sameSymbols(a.symbols, b.symbols)
}

export class WspsClient {
  /** @type {string[]} */
  urls
  #opts
  #transports
  #retry
  #token
  #subs
  #liveness
  /** WebSocket: a connection that received nothing this long is probed; no answer this long more and its symbols are stale (0: never) */
  #quietMs
  /** @type {Emitter<WspsEvents>} */
  #events = new Emitter()
  /** Held quotes by the receiver rules; a resync's `since` is when its snapshot was asked for (deltas before it are expected gaps). */
  #receiver = new QuoteReceiver()
  /** @type {Map<number, {op: string, symbols: string[], bars?: string, book?: number}>} requests awaiting ack/error, by id (bars: a bars request's interval; book: a book request's depth) */
  #inflight = new Map()
  /** Bar subscriptions and the series held. */
  #bars = new BarSubscriptions()
  /** Order books wanted and held. */
  #books = new BookSubscriptions()
  /** Symbols not to be shown as live: the gateway said so, or the connection was lost. */
  #stale = new Staleness()

  /** @type {SocketLike | null} */
  #socket = null
  /** The current socket opened (a WebSocket upgrade that never opens makes the next attempt SSE). */
  #opened = false
  /** SSE: the watch set the current stream was asked for (it cannot change on the stream). */
  #streamed = /** @type {string[]} */ ([])
  /** @type {ReadonlyMap<string, {seq: number, epoch: string}>} the cursors the current SSE stream resumes */
  #streamedSince = NO_CURSORS
  /** @type {import('./sse-socket.js').StreamBars | null} SSE: the bar series the current stream was asked for */
  #streamedBars = null
  /** @type {import('./sse-socket.js').StreamBooks | null} SSE: the books the current stream was asked for */
  #streamedBooks = null
  /** @type {number | null} how old delayed quotes are, from the last ack that said (`delayMs`) */
  #delayMs = null
  /** Bumped per socket: events of an abandoned socket are ignored. */
  #gen = 0
  /**
   * The current socket's frames go out in Protobuf: it negotiated
   * `wsps.v1.proto` and the gateway's first binary frame came (encoding.js).
   */
  #binaryOut = false
  #nextId = 1
  #stopped = true
  #live = false
  #everConnected = false
  /** @type {Hello | null} */
  #hello = null
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #helloTimer
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #reconcileTimer
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #restartTimer
  /** @type {StatusInfo} */
  #status

  /** @param {WspsClientOptions} [options] */
  constructor (options = {}) {
    this.urls = options.url === undefined ? defaultUrls() : [options.url].flat()
    if (this.urls.length === 0) throw new TypeError('WspsClient: options.url is empty')
    const encoding = options.encoding ?? 'auto'
    if (!ENCODINGS.includes(encoding)) throw new TypeError(`WspsClient: options.encoding must be one of ${ENCODINGS.join(', ')}`)
    this.#transports = new Transports({
      mode: options.transport ?? 'auto',
      protocols: subprotocols(encoding),
      WebSocket: options.WebSocket ?? /** @type {SocketConstructor | undefined} */ (globalThis.WebSocket) ?? null,
      fetch: options.fetch
    })
    this.#opts = {
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      resyncGraceMs: options.resyncGraceMs ?? 5000,
      retryRejectedMs: options.retryRejectedMs ?? 1000
    }
    this.#retry = new Retry(this.urls, {
      initialBackoffMs: options.initialBackoffMs ?? 500,
      maxBackoffMs: options.maxBackoffMs ?? 30_000,
      restartJitterMs: options.restartJitterMs ?? 500,
      stableMs: options.stableMs ?? 5000,
      random: options.random ?? Math.random
    })
    this.#token = new TokenSource(options.getToken ?? null)
    this.#liveness = new Liveness(options.heartbeatMs ?? 15_000)
    this.#quietMs = options.quietMs ?? 1500
    this.#subs = new Subscriptions(options.symbols ?? [])
    this.#status = { state: Status.IDLE, url: this.urls[0], node: null, attempt: 0, retryAt: null, retryInMs: null, closeCode: null, closeReason: '', transport: null }
  }

  // ---- public API ----------------------------------------------------------

  /** @returns {Readonly<StatusInfo>} */
  get status () { return this.#status }
  /** @returns {Hello | null} the `hello` of the current connection */
  get hello () { return this.#live ? this.#hello : null }
  /** @returns {string[]} the watch set, in the order added */
  get symbols () { return this.#subs.list }
  /** @returns {number | null} round trip of the last answered ping, ms */
  get rttMs () { return this.#liveness.rttMs }
  /**
   * @returns {number | null} how old the gateway serves delayed quotes, ms
   *   (e.g. 900000: "delayed 15 min"), once an ack has said; null before
   *   (no delayed symbol held yet)
   */
  get delayMs () { return this.#delayMs }
  /**
   * @param {string} symbol
   * @returns {boolean} the gateway serves its quotes delayed (the last ack's
   *   `delayed`): known from the ack on, before any quote of it arrives
   */
  isDelayed (symbol) { return this.#subs.isDelayed(symbol) }
  /**
   * @param {string} symbol
   * @returns {boolean} what is held of it must not be shown as live: the
   *   gateway's feed of it is interrupted (a `stale` frame, until `fresh`),
   *   or the connection was lost and it is not restored on a new one yet
   */
  isStale (symbol) { return this.#stale.isStale(symbol) }
  /**
   * @param {string} symbol
   * @returns {number | null} while isStale(symbol): the quote held is from
   *   this moment (ms since the epoch) or before; null when fresh
   */
  staleSince (symbol) { return this.#stale.since(symbol) }
  /**
   * @param {string} symbol
   * @returns {Quote | undefined} the latest full quote held
   */
  quote (symbol) { return /** @type {Quote | undefined} */ (this.#receiver.quote(symbol)) }

  /**
   * @param {string} symbol
   * @param {string} interval
   * @returns {BarSeries | undefined} the bars held of a bar subscription
   *   (closed ones oldest first, and the open one), once its backfill came
   */
  bars (symbol, interval) { return this.#bars.series(symbol, interval) }

  /**
   * @param {string} symbol
   * @returns {HeldBook | undefined} the order book held of a book
   *   subscription (`bids` and `asks` best first, at most its depth), once
   *   its snapshot came; `sync: false`: the gateway does not know the book
   *   (shown empty) until its next snapshot
   */
  book (symbol) { return this.#books.receiver.book(symbol) }

  /** @returns {number} books resubscribed by the client itself after a lost update or a checksum mismatch */
  get bookResyncs () { return this.#books.resyncs }

  /**
   * Listens to an event; returns a function that stops listening. A
   * listener that throws does not break the client.
   * @template {keyof WspsEvents} K
   * @param {K} type
   * @param {(detail: WspsEvents[K]) => void} listener
   * @returns {() => void}
   */
  on (type, listener) {
    return this.#events.on(type, listener)
  }

  /** Starts connecting (and staying connected). Idempotent. */
  connect () {
    if (!this.#stopped) return
    this.#stopped = false
    this.#retry.reset()
    this.#open()
  }

  /** Skips the wait of a pending retry (e.g. when the browser goes online again). */
  reconnectNow () {
    if (this.#live || (this.#socket && !this.#stopped)) return
    this.#retry.cancel()
    this.#stopped = false
    this.#open()
  }

  /** Closes for good (1000); no reconnect until connect() is called again. */
  close () {
    this.#stopped = true
    this.#retry.cancel()
    const ws = this.#socket
    this.#connectionLost()
    this.#dropConnection()
    if (ws) {
      try { ws.close(CloseCode.NORMAL) } catch {}
    }
    this.#subs.settleAll({ code: 'CLOSED', message: 'client closed' })
    this.#bars.settleAll({ code: 'CLOSED', message: 'client closed' })
    this.#books.settleAll({ code: 'CLOSED', message: 'client closed' })
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
   * `since` starts symbols from positions kept elsewhere (`{AAPL: {seq,
   * epoch}}`, e.g. saved across a page load, or an operator's cursor): with
   * distinct delivery the first quote is the one at `seq`, then every tick
   * after it; a `recovery` event says whether history still held them.
   * Only for symbols not watched yet; over SSE they start from a snapshot.
   *
   * @param {string[]} symbols upper-case tickers (the server validates them)
   * @param {Delivery} [delivery] e.g. `{mode: 'distinct'}` for every tick, or
   *   `{maxRate: 1}` for rows out of view (WebSocket only; SSE streams merge)
   * @param {{since?: Record<string, {seq: number, epoch: string}>}} [options]
   * @returns {Promise<{ok: true} | {ok: false, error: ErrorInfo}>}
   */
  subscribe (symbols, delivery = {}, { since = {} } = {}) {
    const list = [...new Set(symbols)]
    const started = list.filter((s) => Object.hasOwn(since, s) && !this.#subs.wants(s))
    for (const s of started) this.#receiver.hold(s, since[s])
    const send = this.#subs.watch(list, delivery)
    const result = this.#subs.held(list, this.#live)
    if (this.#live) this.#requestAll(ClientOp.SUB, send, this.#cursors(started))
    return result
  }

  /**
   * Removes symbols from the watch set; their quotes stop at once (late
   * frames for them are ignored).
   *
   * @param {string[]} symbols
   */
  unsubscribe (symbols) {
    const removed = this.#subs.unwatch(symbols)
    for (const s of removed) this.#receiver.forget(s)
    this.#stale.forget(removed)
    if (this.#live) this.#requestAll(ClientOp.UNSUB, removed)
  }

  /**
   * Subscribes to live bars of these symbols (docs/protocol.md, Bars): a
   * `bars` event with the backfill (the last `backfill` closed bars and the
   * open one), then a `bar` event per update of the open bar and once per
   * bar closed. Apart from the quotes of the same symbols. Sent now when
   * live, else on (re)connect; every reconnect asks for the backfill again,
   * which replaces the series held. Over SSE the stream is reopened with
   * them; a stream carries the bars of one interval and timeline (those of
   * the first one wanted): the others wait (an `error` BAD_BARS says so)
   * until a WebSocket connection. Resolves like subscribe(); never rejects.
   *
   * @param {string[]} symbols
   * @param {string} interval `1s`, `1m` or `5m`
   * @param {BarOptions} [options]
   * @returns {Promise<{ok: true} | {ok: false, error: ErrorInfo}>}
   */
  subscribeBars (symbols, interval, { backfill = Limits.DEFAULT_BACKFILL, delayed } = {}) {
    const list = [...new Set(symbols)]
    const send = this.#bars.watch(list, interval, delayed === undefined ? { backfill } : { backfill, delayed })
    const result = this.#bars.held(list, interval, this.#live)
    if (this.#live && send.length) {
      if (this.#status.transport === Transport.SSE) this.#restartStream()
      else for (const r of this.#bars.requests({ symbols: send, interval })) this.#requestBars(ClientOp.SUB, r)
    }
    return result
  }

  /**
   * Ends bar subscriptions; their series are forgotten at once (late
   * frames for them are ignored).
   *
   * @param {string[]} symbols
   * @param {string} interval
   */
  unsubscribeBars (symbols, interval) {
    const removed = this.#bars.unwatch(symbols, interval)
    if (!this.#live || !removed.length) return
    if (this.#status.transport === Transport.SSE) this.#restartStream()
    else this.#requestBars(ClientOp.UNSUB, { symbols: removed, interval })
  }

  /**
   * Subscribes to the order books of these symbols at a depth
   * (docs/protocol.md, Order books): a `book` event per change of each,
   * book() reads it. Apart from their quotes and bars; one depth per symbol
   * (a new depth replaces the old one). A lost update or a checksum that
   * differs makes the client resubscribe that book by itself (counted in
   * bookResyncs); a reconnect asks for every book again (a fresh snapshot,
   * books are not resumed). Over SSE the stream carries the books of one
   * depth and mode (the first wanted); the others wait for a WebSocket.
   *
   * @param {string[]} symbols
   * @param {number} depth one of BOOK_DEPTHS (10, 25, 100, 500)
   * @param {{mode?: 'merge' | 'distinct', maxRate?: number}} [options] distinct: every change of the book
   *   its own frame (default merge: the changes of a batching window in one); maxRate (merge):
   *   at most that many frames a second (0.1 to 1000), the changes in between merged
   * @returns {Promise<BookSubscribed>} once the gateway holds them (those it
   *   has no book of, NO_BOOK, are in `noBook` and no longer wanted); rejects
   *   with an Error whose `code` is the ErrorCode when it refused them
   *   (BAD_BOOK, TOO_MANY_SUBSCRIPTIONS...)
   */
  subscribeBook (symbols, depth, { mode = 'merge', maxRate } = {}) {
    const refuse = (/** @type {string} */ message) => Promise.reject(bookError({ code: ErrorCode.BAD_BOOK, message, symbols: [...symbols] }))
    if (!BOOK_DEPTHS.includes(depth)) return refuse(`book must be one of ${BOOK_DEPTHS.join(', ')}`)
    if (mode !== 'merge' && mode !== 'distinct') return refuse('mode must be "merge" or "distinct"')
    if (maxRate !== undefined && (mode === 'distinct' || typeof maxRate !== 'number' || !(maxRate >= 0.1 && maxRate <= 1000))) {
      return refuse('maxRate must be a number from 0.1 to 1000, with mode "merge"')
    }
    const list = [...new Set(symbols)]
    const { send, moved } = this.#books.watch(list, depth, mode === 'distinct' ? { mode } : maxRate === undefined ? {} : { maxRate })
    const result = this.#books.wait(list, depth, this.#live)
    if (this.#live && this.#status.transport === Transport.WEBSOCKET) {
      for (const [d, group] of moved) this.#requestBook(ClientOp.UNSUB, group, d)
      this.#requestBook(ClientOp.SUB, send, depth)
    } else if (this.#live && send.length) {
      this.#restartStream()
    }
    return result
  }

  /**
   * Ends book subscriptions; their books are forgotten at once (late frames
   * for them are ignored).
   *
   * @param {string[]} symbols
   */
  unsubscribeBook (symbols) {
    const removed = this.#books.unwatch(symbols)
    if (!this.#live) return
    if (this.#status.transport === Transport.SSE) {
      if (removed.size) this.#restartStream()
      return
    }
    for (const [depth, group] of removed) this.#requestBook(ClientOp.UNSUB, group, depth)
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
    this.#retry.cancel()
    const url = this.#retry.url
    if (!quiet) this.#setStatus(this.#everConnected || this.#retry.attempt > 0 ? Status.RECONNECTING : Status.CONNECTING, { url, retryAt: null, retryInMs: null })
    const gen = ++this.#gen
    // Until the socket exists, the hello timeout also bounds getToken().
    this.#helloTimer = setTimeout(() => { if (gen === this.#gen) this.#abandon('no hello from the server') }, this.#opts.connectTimeoutMs)
    if (!this.#token.enabled) {
      this.#connectSocket(url, gen, null)
      return
    }
    this.#token.get().then(
      (token) => { if (gen === this.#gen) this.#connectSocket(url, gen, String(token)) },
      (err) => {
        if (gen !== this.#gen) return
        this.#tokenFailed(err)
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
    const transport = this.#transports.next
    /** @type {SocketLike} */
    let ws
    try {
      this.#streamed = transport === Transport.SSE ? this.#subs.list.slice(0, this.#maxSubscriptions) : []
      // A stream carries one delivery: distinct when every symbol wants it.
      const distinct = this.#streamed.length > 0 && this.#streamed.every((s) => this.#subs.deliveryOf(s)?.mode === 'distinct')
      // SSE cursors are always held (docs/protocol.md): one held without its quote starts from a snapshot.
      this.#streamedSince = new Map([...this.#cursors(this.#streamed)].filter(([, c]) => c.held !== false))
      this.#streamedBars = transport === Transport.SSE ? this.#bars.forStream() : null
      this.#streamedBooks = transport === Transport.SSE ? this.#books.forStream() : null
      ws = this.#transports.open(url, {
        symbols: this.#streamed,
        mode: distinct ? 'distinct' : 'merge',
        since: this.#streamedSince,
        bars: this.#streamedBars,
        books: this.#streamedBooks,
        token,
        onheartbeat: () => { if (gen === this.#gen) this.#liveness.frame() }
      })
    } catch (err) {
      // A malformed URL throws synchronously; treat it like a refused connection.
      this.#events.emit('error', { code: 'CONNECT_FAILED', message: String(/** @type {Error} */ (err).message ?? err) })
      this.#dropConnection()
      this.#scheduleReconnect(null, '')
      return
    }
    this.#socket = ws
    this.#opened = false
    this.#binaryOut = false
    this.#status = { ...this.#status, transport }
    ws.onmessage = (/** @type {{data: unknown}} */ ev) => {
      if (gen !== this.#gen) return
      if (!this.#binaryOut && typeof ev.data !== 'string' && ws.protocol === Subprotocol.PROTO) this.#binaryOut = true
      this.#onFrame(ev.data)
    }
    ws.onclose = (/** @type {{code: number, reason: string}} */ ev) => {
      // Even a stream dropped on purpose (reopened for a new watch set, or
      // abandoned) has the event id the next one resumes from. Sockets are
      // dropped before the next one opens, so this never goes backwards.
      const answered = this.#transports.closed(ws)
      if (gen !== this.#gen) return
      if (answered) this.#opened = true
      this.#onClose(ev.code, String(ev.reason ?? ''))
    }
    // The close event that follows an error carries everything we act on; an
    // error listener must still exist or `ws` (an EventEmitter) would throw.
    ws.onerror = () => {}
    ws.onopen = () => {
      if (gen !== this.#gen) return
      this.#opened = true
      // Browsers cannot set headers on a WebSocket: the token is the first frame.
      if (token !== null && transport === Transport.WEBSOCKET) this.#send({ op: ClientOp.AUTH, token })
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
    this.#connectionLost()
    this.#dropConnection()
    if (ws) {
      this.#transports.pick(opened)
      try {
        if (typeof ws.terminate === 'function') ws.terminate()
        else ws.close(ClientCloseCode.ABANDONED, reason)
      } catch {}
    }
    this.#scheduleReconnect(ClientCloseCode.ABNORMAL, reason)
  }

  /**
   * @param {number} code
   * @param {string} reason
   */
  #onClose (code, reason) {
    const opened = this.#opened
    this.#connectionLost()
    this.#dropConnection()
    if (this.#stopped) return
    this.#transports.pick(opened)
    // With a token source, "get a new token first" is what every connection does anyway.
    const needsToken = /** @type {readonly number[]} */ (AUTH_CLOSE_CODES).includes(code)
    if (!(needsToken && this.#token.enabled) && /** @type {readonly number[]} */ (NO_RECONNECT_CODES).includes(code)) {
      this.#stopped = true
      this.#subs.settleAll({ code: 'CLOSED', message: `server closed the connection (${code})` })
      this.#bars.settleAll({ code: 'CLOSED', message: `server closed the connection (${code})` })
      this.#books.settleAll({ code: 'CLOSED', message: `server closed the connection (${code})` })
      this.#setStatus(Status.OFFLINE, { closeCode: code, closeReason: reason, retryAt: null, retryInMs: null })
      return
    }
    this.#scheduleReconnect(code, reason)
  }

  /**
   * A live connection is gone (any close, 1006 included): every watched
   * symbol is stale from the last frame received until it is restored on
   * a new connection. Call before #dropConnection().
   */
  #connectionLost () {
    if (!this.#live) return
    const since = this.#liveness.lastFrameAt
    const flipped = this.#stale.lost(this.#subs.list, since)
    if (flipped.length) this.#events.emit('stale', { symbols: flipped, since })
    this.#booksInterrupted()
  }

  /**
   * The link is lost or silent: no book held may be shown as live (held
   * out of sync until its next snapshot). A silent link that still holds
   * is asked for the snapshots at once; a lost one asks on reconnecting.
   *
   * @param {boolean} [ask] the socket is still open
   */
  #booksInterrupted (ask = false) {
    const books = this.#books.receiver
    const now = Date.now()
    for (const symbol of books.interrupt()) {
      this.#events.emit('book', { symbol, book: /** @type {HeldBook} */ (books.book(symbol)), snapshot: false })
      if (ask) this.#askBookAgain(symbol, now)
    }
  }

  /**
   * Starts a book over: `unsub` + `sub` (a fresh snapshot); its `levels`
   * are dropped until it comes.
   *
   * @param {string} symbol
   * @param {number} now
   */
  #askBookAgain (symbol, now) {
    const books = this.#books.receiver
    const depth = /** @type {number} */ (books.depthOf(symbol))
    books.resync(symbol, now)
    this.#requestBook(ClientOp.UNSUB, [symbol], depth)
    this.#requestBook(ClientOp.SUB, [symbol], depth)
  }

  /** Forgets the current socket and everything tied to it; keeps the watch set and quotes. */
  #dropConnection () {
    this.#gen++
    this.#opened = false
    this.#socket = null
    this.#live = false
    this.#subs.clearHeld()
    this.#bars.clearHeld()
    this.#books.clearHeld()
    this.#inflight.clear()
    this.#liveness.stop()
    this.#token.cancel()
    clearTimeout(this.#helloTimer)
    clearTimeout(this.#reconcileTimer)
    clearTimeout(this.#restartTimer)
    this.#restartTimer = undefined
  }

  /**
   * @param {number | null} code
   * @param {string} reason
   */
  #scheduleReconnect (code, reason) {
    const delay = this.#retry.next(code)
    const retryAt = Date.now() + delay
    this.#setStatus(Status.RECONNECTING, { url: this.#retry.url, retryAt, retryInMs: delay, closeCode: code, closeReason: reason })
    this.#retry.after(delay, () => this.#open())
  }

  // ---- frames ----------------------------------------------------------------

  /** @param {unknown} data a message's: JSON text, or Protobuf bytes (encoding.js) */
  #onFrame (data) {
    this.#liveness.frame()
    let msg
    try {
      msg = readFrame(data)
    } catch {
      const what = typeof data === 'string' ? 'not JSON' : 'not a wsps.v1 ServerFrame'
      this.#events.emit('error', { code: 'BAD_SERVER_FRAME', message: `the server sent a frame that is ${what}` })
      return
    }
    switch (msg?.op) {
      case ServerOp.HELLO: return this.#onHello(msg)
      case ServerOp.QUOTES: return this.#onDeltas(msg.quotes ?? [])
      case ServerOp.SNAP: return this.#onSnap(msg.quotes ?? [], msg.recovered === false)
      case ServerOp.ACK: return this.#onAck(msg)
      case ServerOp.ERROR: return this.#onError(msg)
      case ServerOp.PONG: return this.#liveness.pong(msg.id)
      case ServerOp.BARS: return this.#onBars(msg)
      case ServerOp.BAR: return this.#onBar(msg)
      case ServerOp.BOOK:
      case ServerOp.LEVELS: return this.#onBook(msg)
      case ServerOp.STALE: return this.#onStale(msg)
      case ServerOp.FRESH: return this.#onFresh(msg)
    }
  }

  /**
   * The gateway's feed of these symbols is interrupted: what is held of
   * them is from `since` or before. A frame without a `since` is taken as
   * news of now (what is held is older, whatever it is).
   *
   * @param {{symbols?: unknown, since?: unknown}} msg a `stale` frame
   */
  #onStale (msg) {
    const since = typeof msg.since === 'number' && Number.isFinite(msg.since) ? msg.since : Date.now()
    const flipped = this.#stale.serverStale(this.#watched(msg.symbols), since)
    if (flipped.length) this.#events.emit('stale', { symbols: flipped, since })
  }

  /** @param {{symbols?: unknown}} msg a `fresh` frame: live again (what was missed came before it) */
  #onFresh (msg) {
    this.#fresh(this.#stale.serverFresh(this.#watched(msg.symbols)))
  }

  /**
   * @param {unknown} symbols a frame's `symbols`
   * @returns {string[]} those of them in the watch set (late frames for others are ignored)
   */
  #watched (symbols) {
    return Array.isArray(symbols) ? symbols.filter((s) => typeof s === 'string' && this.#subs.wants(s)) : []
  }

  /** @param {string[]} symbols just became fresh */
  #fresh (symbols) {
    if (symbols.length) this.#events.emit('fresh', { symbols })
  }

  /** @param {any} msg a `bars` frame */
  #onBars (msg) {
    const series = this.#bars.backfill(msg)
    if (series !== null) this.#events.emit('bars', { symbol: series.symbol, interval: series.interval, series, delayed: series.delayed })
  }

  /** @param {any} msg a `bar` frame */
  #onBar (msg) {
    const series = this.#bars.bar(msg)
    if (series !== null) this.#events.emit('bar', { symbol: series.symbol, interval: series.interval, bar: msg.bar, closed: msg.closed === true, series, delayed: series.delayed })
  }

  /**
   * A `book` or `levels` frame, judged by the receiver rules. A lost update
   * or a checksum that differs starts the book over (unsub + sub: a fresh
   * snapshot); `levels` that arrive meanwhile are expected and dropped,
   * unless the snapshot is overdue.
   *
   * @param {any} msg
   */
  #onBook (msg) {
    const books = this.#books.receiver
    const verdict = books.frame(msg)
    const symbol = msg.symbol
    if (verdict === BookVerdict.IGNORED) return
    if (verdict === BookVerdict.APPLIED || verdict === BookVerdict.OUT_OF_SYNC) {
      this.#events.emit('book', { symbol, book: /** @type {HeldBook} */ (books.book(symbol)), snapshot: msg.op === ServerOp.BOOK })
      return
    }
    const now = Date.now()
    if (verdict === BookVerdict.RESYNCING && now - /** @type {number} */ (books.resyncingSince(symbol)) < this.#opts.resyncGraceMs) return
    this.#books.resyncs++
    this.#askBookAgain(symbol, now)
  }

  /** @param {Hello} hello */
  #onHello (hello) {
    clearTimeout(this.#helloTimer)
    if (hello.v !== PROTOCOL_VERSION) {
      this.#events.emit('error', { code: 'BAD_SERVER_FRAME', message: `server speaks protocol v${hello.v}, this client v${PROTOCOL_VERSION}` })
    }
    this.#hello = hello
    this.#live = true
    this.#everConnected = true
    this.#retry.live()
    if (hello.heartbeatMs > 0) this.#liveness.heartbeatMs = hello.heartbeatMs
    const gen = this.#gen
    this.#liveness.start(
      () => { if (gen === this.#gen) this.#ping() },
      (reason) => { if (gen === this.#gen) this.#abandon(reason) },
      // Over SSE nothing can be asked: only the server's heartbeats come.
      this.#status.transport === Transport.WEBSOCKET && this.#quietMs > 0
        ? {
          quietMs: this.#quietMs,
          watching: () => this.#subs.list.length > 0 || this.#books.size > 0,
          quiet: (since) => {
            if (gen !== this.#gen) return
            const flipped = this.#stale.quiet(this.#subs.list, since)
            if (flipped.length) this.#events.emit('stale', { symbols: flipped, since })
            this.#booksInterrupted(true)
          },
          answered: () => { if (gen === this.#gen) this.#fresh(this.#stale.answered()) }
        }
        : undefined)
    this.#setStatus(Status.LIVE, { node: hello.node ?? null, retryAt: null, retryInMs: null, attempt: 0 })
    this.#events.emit('hello', hello)
    this.#scheduleRefresh(hello.expiresInMs)
    this.#resubscribeAll()
  }

  /**
   * @param {Quote[]} quotes
   * @param {boolean} lost they replace ticks the gateway could not recover
   *   (its history did not cover a hole): told as a `recovery` event
   */
  #onSnap (quotes, lost) {
    const now = Date.now()
    /** @type {string[]} */
    const snapped = []
    for (const q of quotes) {
      if (!this.#subs.wants(q.symbol)) continue // a late answer for a symbol since removed
      if (lost) this.#events.emit('recovery', { symbol: q.symbol, recovered: false })
      const previous = this.quote(q.symbol) ?? null
      this.#receiver.snap(q)
      snapped.push(q.symbol)
      const quote = /** @type {Quote} */ (this.quote(q.symbol))
      this.#events.emit('quote', { symbol: q.symbol, quote, previous, snapshot: true, delayed: quote.delayed === true, latencyMs: now - q.ts })
    }
    // A snapshot on the new connection restores what a lost one left stale.
    this.#fresh(this.#stale.restored(snapped))
  }

  /** @param {Delta[]} deltas */
  #onDeltas (deltas) {
    const now = Date.now()
    /** @type {string[]} */
    const gaps = []
    for (const d of deltas) {
      const symbol = d.symbol
      if (!this.#subs.wants(symbol)) continue
      const held = this.quote(symbol)
      const outcome = this.#receiver.delta(d)
      if (outcome === Outcome.APPLIED) {
        const quote = /** @type {Quote} */ (this.quote(symbol))
        this.#events.emit('quote', { symbol, quote, previous: held ?? null, snapshot: false, delayed: quote.delayed === true, latencyMs: now - d.ts })
        continue
      }
      // Not applicable (receiver rule 3). Right after a (re)subscribe that
      // is expected until the snapshot arrives; otherwise it is a gap: drop
      // it and ask again.
      const since = this.#receiver.resyncingSince(symbol)
      if (outcome === Outcome.RESYNCING && now - /** @type {number} */ (since) < this.#opts.resyncGraceMs) continue
      gaps.push(symbol)
      this.#events.emit('gap', { symbol, heldSeq: held?.seq ?? null, seq: d.seq, base: d.base ?? d.seq - 1 })
    }
    if (gaps.length === 0) return
    for (const s of gaps) this.#receiver.resync(s, now)
    // unsub + sub: a plain sub of a held symbol is a no-op and sends no snapshot.
    this.#request(ClientOp.UNSUB, gaps)
    this.#request(ClientOp.SUB, gaps)
  }

  /** @param {{id?: number, symbols?: string[], expiresInMs?: number, recovered?: Record<string, boolean>, delayed?: string[], delayMs?: number, bars?: string, book?: number}} ack */
  #onAck (ack) {
    if (typeof ack.delayMs === 'number') this.#delayMs = ack.delayMs
    if (typeof ack.book === 'number') {
      // The answer to a book request: the book subscriptions of its depth.
      if (typeof ack.id === 'number') this.#inflight.delete(ack.id)
      if (Array.isArray(ack.symbols)) this.#books.acked(ack.book, ack.symbols)
      return
    }
    if (typeof ack.bars === 'string') {
      // The answer to a bars request: the bar subscriptions of its interval.
      if (typeof ack.id === 'number') this.#inflight.delete(ack.id)
      if (Array.isArray(ack.symbols)) this.#bars.acked(ack.bars, ack.symbols)
      return
    }
    // The answer to a resumed sub: which symbols continued without a loss.
    if (ack.recovered !== null && typeof ack.recovered === 'object') {
      /** @type {string[]} */
      const resumed = []
      for (const [symbol, recovered] of Object.entries(ack.recovered)) {
        if (!this.#subs.wants(symbol)) continue
        this.#events.emit('recovery', { symbol, recovered: recovered === true })
        if (recovered === true) resumed.push(symbol)
      }
      // Nothing was lost on them: what a lost connection left stale is live again.
      this.#fresh(this.#stale.restored(resumed))
    }
    const req = typeof ack.id === 'number' ? this.#inflight.get(ack.id) : undefined
    if (typeof ack.id === 'number') this.#inflight.delete(ack.id)
    if (req?.op === ClientOp.AUTH) this.#scheduleRefresh(ack.expiresInMs)
    // The ack lists the connection's full subscription set after the
    // request, and which of it is served delayed.
    if (Array.isArray(ack.symbols) && this.#subs.acked(ack.symbols, Array.isArray(ack.delayed) ? ack.delayed : [])) {
      this.#events.emit('delayed', { symbols: this.#subs.delayed, delayMs: this.#delayMs })
    }
  }

  /** @param {{id?: number | string, code: string, message: string, symbols?: string[], bars?: string, book?: number}} msg */
  #onError (msg) {
    const req = typeof msg.id === 'number' ? this.#inflight.get(msg.id) : undefined
    if (req) this.#inflight.delete(/** @type {number} */ (msg.id))
    /** @type {ErrorInfo} */
    const error = { code: msg.code, message: msg.message ?? '' }
    if (msg.symbols) error.symbols = msg.symbols
    if (msg.id !== undefined) error.id = msg.id
    if (typeof msg.bars === 'string') error.bars = msg.bars
    if (typeof msg.book === 'number') error.book = msg.book
    this.#events.emit('error', error)

    // An SSE stream's books: refused (the error names their depth), or some without a book.
    const streamBooks = this.#streamedBooks
    if (!req && streamBooks !== null && (msg.book === streamBooks.depth || msg.code === ErrorCode.NO_BOOK)) {
      const named = msg.symbols?.length ? msg.symbols : streamBooks.symbols
      const dropped = msg.code === ErrorCode.NO_BOOK ? this.#books.noBook(named, streamBooks.depth) : this.#books.refuse(named, streamBooks.depth, error)
      if (dropped.length) this.#events.emit('rejected', { symbols: dropped, error, book: true })
      return
    }
    // An SSE stream refused for its bars (the error names their interval).
    const streamBars = this.#streamedBars
    if (!req && typeof msg.bars === 'string' && streamBars !== null && msg.bars === streamBars.interval) {
      if (BARS_DROP_NAMED.includes(msg.code) && msg.symbols?.length) this.#rejectBars(msg.symbols, msg.bars, error)
      else if (BARS_DROP_NAMED.includes(msg.code) || BARS_DROP_ALL.includes(msg.code)) this.#rejectBars(streamBars.symbols, msg.bars, error)
      return
    }
    if (req?.op === ClientOp.SUB && req.bars !== undefined) {
      const interval = req.bars
      if (BARS_DROP_NAMED.includes(msg.code)) {
        const bad = msg.symbols?.length ? msg.symbols : req.symbols
        this.#rejectBars(bad, interval, error)
        const rest = req.symbols.filter((s) => !bad.includes(s) && this.#bars.wants(s, interval))
        for (const r of this.#bars.requests({ symbols: rest, interval })) this.#requestBars(ClientOp.SUB, r)
        return
      }
      if (BARS_DROP_ALL.includes(msg.code)) {
        this.#rejectBars(req.symbols, interval, error)
        return
      }
    }
    if (req?.book !== undefined) {
      if (this.#onBookError(req, msg, error)) return
    } else if (req?.op === ClientOp.SUB && req.bars === undefined) {
      switch (msg.code) {
        case ErrorCode.BAD_SYMBOL:
        case ErrorCode.NOT_ENTITLED: {
          // The whole request was refused: drop the named symbols and ask
          // again for the others that came with them.
          const bad = msg.symbols?.length ? msg.symbols : req.symbols
          this.#reject(bad, error)
          const rest = req.symbols.filter((s) => this.#subs.wants(s) && !this.#subs.serverHolds(s))
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
      // A revoked grant ends the symbol's bars and book too.
      if (msg.code === ErrorCode.GRANT_REVOKED) {
        this.#rejectBars(msg.symbols, null, error)
        const dropped = this.#books.refuse(msg.symbols, null, error)
        if (dropped.length) this.#events.emit('rejected', { symbols: dropped, error, book: true })
      }
      return
    }
    // RATE_LIMITED has no id (the dropped message is unknown) and INTERNAL is
    // retryable: bring the server in line with the watch set a bit later.
    if (msg.code === ErrorCode.RATE_LIMITED || msg.code === ErrorCode.INTERNAL) this.#scheduleReconcile()
  }

  /**
   * A refusal of a book request.
   *
   * @param {{op: string, symbols: string[], book?: number}} req
   * @param {{code: string, symbols?: string[]}} msg
   * @param {ErrorInfo} error
   * @returns {boolean} handled
   */
  #onBookError (req, msg, error) {
    const depth = /** @type {number} */ (req.book)
    if (req.op !== ClientOp.SUB) return msg.code !== ErrorCode.RATE_LIMITED && msg.code !== ErrorCode.INTERNAL
    /** @type {string[]} */
    let dropped = []
    if (msg.code === ErrorCode.NO_BOOK) {
      // The others of the request are subscribed; their ack follows.
      dropped = this.#books.noBook(msg.symbols ?? [], depth)
    } else if (BOOK_DROP_NAMED.includes(msg.code)) {
      const bad = msg.symbols?.length ? msg.symbols : req.symbols
      dropped = this.#books.refuse(bad, depth, error)
      this.#requestBook(ClientOp.SUB, req.symbols.filter((s) => !bad.includes(s) && this.#books.receiver.depthOf(s) === depth), depth)
    } else if (BOOK_DROP_ALL.includes(msg.code)) {
      dropped = this.#books.refuse(req.symbols, depth, error)
    } else {
      return msg.code === ErrorCode.DRAINING // a 1012 close follows; the next connection asks again
    }
    if (dropped.length) this.#events.emit('rejected', { symbols: dropped, error, book: true })
    return true
  }

  #scheduleReconcile () {
    clearTimeout(this.#reconcileTimer)
    this.#reconcileTimer = setTimeout(() => {
      if (!this.#live) return
      // Both are idempotent on the server, so re-sending what it may already hold is safe.
      const { remove, add } = this.#subs.diff()
      this.#requestAll(ClientOp.UNSUB, remove)
      this.#requestAll(ClientOp.SUB, add)
      if (this.#status.transport !== Transport.SSE) {
        for (const r of this.#bars.missing()) this.#requestBars(ClientOp.SUB, r)
        for (const [depth, symbols] of this.#books.missing()) this.#requestBook(ClientOp.SUB, symbols, depth)
      }
    }, this.#opts.retryRejectedMs)
  }

  /** The gateway's limit on symbols per connection (none known before its hello). */
  get #maxSubscriptions () {
    return this.#hello?.limits?.maxSubscriptions ?? Infinity
  }

  /**
   * @param {string[]} symbols
   * @returns {Map<string, {seq: number, epoch: string, held?: false}>} the held seq and epoch of those that have
   *   both and are not waiting for a snapshot (after a gap: that one comes by a plain `sub`)
   */
  #cursors (symbols) {
    const out = new Map()
    for (const s of symbols) {
      const c = this.#receiver.current(s) ? this.#receiver.cursor(s) : undefined
      if (c !== undefined) out.set(s, c)
    }
    return out
  }

  /**
   * A new connection holds nothing: ask for the whole watch set again.
   * Symbols whose quote carries an epoch resume from it (`since`): the
   * server replays the ticks missed meanwhile (distinct) or confirms the
   * state continues (merge), else answers with a fresh snapshot; the
   * others resync from their snapshots.
   */
  #resubscribeAll () {
    const all = this.#subs.list
    const max = this.#maxSubscriptions
    const over = all.slice(max)
    if (over.length) this.#reject(over, { code: ErrorCode.TOO_MANY_SUBSCRIPTIONS, message: `this gateway allows ${max} subscriptions` })
    const keep = all.slice(0, max)
    const now = Date.now()
    // An SSE stream resumed what its URL named (#connectSocket).
    const since = this.#status.transport === Transport.SSE ? this.#streamedSince : this.#cursors(keep)
    for (const s of keep) {
      // A resumed symbol's replay continues what is held: its deltas must
      // apply, not wait for a snapshot.
      if (!since.has(s)) this.#receiver.resync(s, now)
    }
    if (this.#status.transport === Transport.SSE) {
      // The stream was asked for with the watch set of the moment it was
      // opened: its ack and snap follow. Symbols added or removed while it
      // was opening (e.g. a retry after a stream the network cut) are not
      // on it: reopen it with the current set.
      const bars = this.#bars.forStream()
      const books = this.#books.forStream()
      if (!sameSymbols(keep, this.#streamed) || !sameStreamBars(bars, this.#streamedBars) || !sameStreamBooks(books, this.#streamedBooks)) {
        this.#restartStream()
        return
      }
      if (bars !== null && bars.symbols.length < this.#bars.size) this.#barsOverSse()
      if (books !== null && books.symbols.length < this.#books.size) {
        this.#events.emit('error', { code: ErrorCode.BAD_BOOK, message: 'an SSE stream carries the books of one depth and mode; the others start once the client is on a WebSocket' })
      }
      // A stream's books start from their snapshots.
      for (const s of books?.symbols ?? []) this.#books.receiver.resync(s, now)
      return
    }
    if (keep.length) this.#requestAll(ClientOp.SUB, keep, since)
    // Every bar series starts over from its backfill, every book from a
    // snapshot (books are not resumed): levels before it are expected.
    for (const r of this.#bars.requests()) this.#requestBars(ClientOp.SUB, r)
    for (const [depth, symbols] of this.#books.byDepth()) {
      for (const s of symbols) this.#books.receiver.resync(s, now)
      this.#requestBook(ClientOp.SUB, symbols, depth)
    }
  }

  /** Bars of more than one interval (or timeline) are wanted on an SSE stream, which carries one: say so (the others start on a WebSocket). */
  #barsOverSse () {
    this.#events.emit('error', { code: ErrorCode.BAD_BARS, message: 'an SSE stream carries the bars of one interval; the others start once the client is on a WebSocket' })
  }

  // ---- token refresh ---------------------------------------------------------

  /**
   * The token expires in `expiresInMs` (from `hello`, or the `ack` of a
   * refresh): ask getToken() for a new one a bit before.
   *
   * @param {number | undefined} expiresInMs
   */
  #scheduleRefresh (expiresInMs) {
    const gen = this.#gen
    this.#token.refreshBefore(expiresInMs, () => { if (gen === this.#gen) this.#refresh() })
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
    this.#token.get().then(
      (token) => {
        if (gen !== this.#gen) return
        const id = this.#nextId++
        this.#inflight.set(id, { op: ClientOp.AUTH, symbols: [] })
        this.#send({ op: ClientOp.AUTH, token: String(token), id })
      },
      (err) => {
        if (gen !== this.#gen) return
        // The connection lives until exp (then 4002 and a reconnect); try again before that.
        this.#tokenFailed(err)
        this.#token.retry(this.#opts.retryRejectedMs, () => { if (gen === this.#gen) this.#refresh() })
      })
  }

  /** @param {any} err what getToken() threw */
  #tokenFailed (err) {
    this.#events.emit('error', { code: 'TOKEN_FAILED', message: `getToken() failed: ${String(err?.message ?? err)}` })
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
      // Not a loss: the next stream's gateway says again what is stale.
      this.#stale.handOver()
      this.#dropConnection()
      try { ws?.close(CloseCode.NORMAL) } catch {}
      this.#open({ quiet: true })
    }, 0)
  }

  // ---- sending ---------------------------------------------------------------

  #ping () {
    const id = this.#nextId++
    this.#liveness.pinged(id)
    this.#send({ op: ClientOp.PING, id })
  }

  /**
   * `symbols` in requests of at most MAX_SYMBOLS_PER_REQUEST (none when empty).
   *
   * @param {string} op
   * @param {string[]} symbols
   */
  #requestAll (op, symbols, since = NO_CURSORS) {
    for (let i = 0; i < symbols.length; i += MAX_SYMBOLS_PER_REQUEST) this.#request(op, symbols.slice(i, i + MAX_SYMBOLS_PER_REQUEST), since)
  }

  /**
   * @param {string} op
   * @param {string[]} symbols
   * @param {ReadonlyMap<string, {seq: number, epoch: string, held?: false}>} [since] cursors of symbols resumed
   */
  #request (op, symbols, since = NO_CURSORS) {
    if (this.#status.transport === Transport.SSE) {
      this.#restartStream()
      return
    }
    if (op !== ClientOp.SUB) return this.#sendRequest(op, symbols)
    for (const [group, delivery] of this.#subs.byDelivery(symbols)) this.#sendRequest(op, group, delivery, since)
  }

  /**
   * @param {string} op
   * @param {string[]} symbols
   * @param {Delivery} [delivery]
   * @param {ReadonlyMap<string, {seq: number, epoch: string, held?: false}>} [since] cursors; those of `symbols` go with the request
   */
  #sendRequest (op, symbols, delivery, since = NO_CURSORS) {
    const id = this.#nextId++
    this.#inflight.set(id, { op, symbols })
    // Requests the rate limiter dropped are never answered; keep only the
    // newest so a long-lived connection does not collect them forever.
    if (this.#inflight.size > MAX_INFLIGHT) this.#inflight.delete(/** @type {number} */ (this.#inflight.keys().next().value))
    /** @type {Record<string, unknown>} */
    const frame = delivery === undefined ? { op, symbols, id } : { op, symbols, id, ...delivery }
    /** @type {Record<string, {seq: number, epoch: string, held?: false}>} */
    const cursors = {}
    for (const s of symbols) {
      const c = since.get(s)
      if (c !== undefined) cursors[s] = c
    }
    if (Object.keys(cursors).length) frame.since = cursors
    this.#send(frame)
  }

  /**
   * A bars `sub` or `unsub`, in requests of at most MAX_SYMBOLS_PER_REQUEST.
   *
   * @param {string} op
   * @param {{symbols: string[], interval: string, backfill?: number, delayed?: boolean}} request
   */
  #requestBars (op, { symbols, interval, backfill, delayed }) {
    for (let i = 0; i < symbols.length; i += MAX_SYMBOLS_PER_REQUEST) {
      const group = symbols.slice(i, i + MAX_SYMBOLS_PER_REQUEST)
      const id = this.#nextId++
      this.#inflight.set(id, { op, symbols: group, bars: interval })
      if (this.#inflight.size > MAX_INFLIGHT) this.#inflight.delete(/** @type {number} */ (this.#inflight.keys().next().value))
      /** @type {Record<string, unknown>} */
      const frame = { op, symbols: group, bars: interval, id }
      if (op === ClientOp.SUB) {
        frame.backfill = backfill
        if (delayed !== undefined) frame.delayed = delayed
      }
      this.#send(frame)
    }
  }

  /**
   * A book `sub` or `unsub` at one depth, in requests of at most
   * MAX_SYMBOLS_PER_REQUEST (none when empty); a sub of those wanted
   * distinct says so.
   *
   * @param {string} op
   * @param {string[]} symbols
   * @param {number} depth
   */
  #requestBook (op, symbols, depth) {
    if (symbols.length === 0) return
    // Over SSE a stream carries its books: a new one is opened for them.
    if (this.#status.transport === Transport.SSE) {
      this.#restartStream()
      return
    }
    if (op !== ClientOp.SUB) {
      this.#sendBook(op, symbols, depth, {})
      return
    }
    for (const [delivery, group] of this.#books.byDelivery(symbols)) this.#sendBook(op, group, depth, delivery)
  }

  /**
   * @param {string} op
   * @param {string[]} symbols
   * @param {number} depth
   * @param {import('./books.js').BookDelivery} delivery a sub's mode and maxRate ({}: none)
   */
  #sendBook (op, symbols, depth, delivery) {
    for (let i = 0; i < symbols.length; i += MAX_SYMBOLS_PER_REQUEST) {
      const group = symbols.slice(i, i + MAX_SYMBOLS_PER_REQUEST)
      const id = this.#nextId++
      this.#inflight.set(id, { op, symbols: group, book: depth })
      if (this.#inflight.size > MAX_INFLIGHT) this.#inflight.delete(/** @type {number} */ (this.#inflight.keys().next().value))
      this.#send({ op, symbols: group, book: depth, ...delivery, id })
    }
  }

  /**
   * Drops bar subscriptions the server refused (or stopped granting) and
   * tells whoever waits, one `rejected` event per interval.
   *
   * @param {string[]} symbols
   * @param {string | null} interval null: every interval of them
   * @param {ErrorInfo} error
   */
  #rejectBars (symbols, interval, error) {
    /** @type {Map<string, string[]>} */
    const byInterval = new Map()
    for (const d of this.#bars.refuse(symbols, interval, error)) {
      const list = byInterval.get(d.interval)
      if (list) list.push(d.symbol)
      else byInterval.set(d.interval, [d.symbol])
    }
    for (const [iv, dropped] of byInterval) this.#events.emit('rejected', { symbols: dropped, error, interval: iv })
  }

  /** @param {object} frame */
  #send (frame) {
    const ws = this.#socket
    if (ws && ws.readyState === ReadyState.OPEN) ws.send(writeFrame(frame, this.#binaryOut))
  }

  /**
   * Drops symbols the server refused from the watch set and tells whoever waits.
   * @param {string[]} symbols
   * @param {ErrorInfo} error
   */
  #reject (symbols, error) {
    const dropped = this.#subs.refuse(symbols, error)
    for (const s of dropped) this.#receiver.forget(s)
    this.#stale.forget(dropped)
    if (dropped.length) this.#events.emit('rejected', { symbols: dropped, error })
  }

  /**
   * @param {StatusState} state
   * @param {Partial<StatusInfo>} changes
   */
  #setStatus (state, changes) {
    this.#status = { ...this.#status, ...changes, state, attempt: changes.attempt ?? this.#retry.attempt }
    this.#events.emit('status', this.#status)
  }
}
