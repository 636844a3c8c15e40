// The SSE fallback transport (GET /sse, docs/protocol.md) behind the same
// small socket shape WspsClient drives a WebSocket through: readyState,
// send, close, onopen/onmessage/onclose/onerror.
//
// It reads the stream with fetch() rather than EventSource: fetch can send
// the token in an `Authorization` header (EventSource can only put it in the
// URL, which lands in access logs), it sees the heartbeat comments (so the
// client's silence check works), and it exists in Node 20 as well.
//
// Subscriptions are part of the URL: a change of the watch set is a new
// stream (WspsClient reopens it), so send() carries nothing.

import { ClientCloseCode, CloseCode, ErrorCode, ReadyState } from './protocol.js'

/**
 * `ws://host/ws` -> `http://host/sse`: the SSE endpoint beside a gateway's
 * WebSocket endpoint.
 *
 * @param {string} wsUrl
 * @returns {string}
 */
export function sseUrlFor (wsUrl) {
  const u = new URL(wsUrl)
  u.protocol = u.protocol === 'wss:' ? 'https:' : u.protocol === 'ws:' ? 'http:' : u.protocol
  u.pathname = u.pathname.replace(/\/ws$/, '') + '/sse'
  u.search = ''
  return u.href
}

/**
 * The events of an SSE byte stream, as they complete (WHATWG "event stream
 * interpretation", minus `retry:`, which this client does not use).
 */
export class SseParser {
  #buf = ''
  #data = /** @type {string[]} */ ([])
  #event = ''
  /** The last `id:` seen, sent back as Last-Event-ID on the next stream. */
  lastEventId = ''

  /**
   * @param {string} chunk decoded text
   * @param {(ev: {event: string, data: string} | null) => void} emit null for a comment (heartbeat)
   */
  push (chunk, emit) {
    this.#buf += chunk
    let nl
    while ((nl = this.#buf.search(/\r\n|\r|\n/)) !== -1) {
      const line = this.#buf.slice(0, nl)
      this.#buf = this.#buf.slice(nl + (this.#buf.startsWith('\r\n', nl) ? 2 : 1))
      if (line === '') {
        if (this.#data.length) emit({ event: this.#event || 'message', data: this.#data.join('\n') })
        this.#data = []
        this.#event = ''
        continue
      }
      if (line.startsWith(':')) {
        emit(null)
        continue
      }
      const colon = line.indexOf(':')
      const field = colon === -1 ? line : line.slice(0, colon)
      let value = colon === -1 ? '' : line.slice(colon + 1)
      if (value.startsWith(' ')) value = value.slice(1)
      if (field === 'data') this.#data.push(value)
      else if (field === 'event') this.#event = value
      else if (field === 'id' && !value.includes('\0')) this.lastEventId = value
    }
  }
}

/**
 * @typedef {{symbols: string[], interval: string, backfill: number, delayed?: boolean}} StreamBars
 *   a bars `sub` as a stream's `bars`, `barSymbols`, `backfill` and `barDelayed`
 */

/**
 * @typedef {{symbols: string[], depth: number, delivery: {mode?: 'distinct', maxRate?: number}}} StreamBooks
 *   a book `sub` as a stream's `book`, `bookSymbols`, `bookMode` and `bookMaxRate`
 */

/**
 * @typedef {object} SseSocketOptions
 * @property {string[]} symbols the watch set of this stream
 * @property {'merge' | 'distinct'} [mode] delivery of every symbol of the stream (default merge)
 * @property {ReadonlyMap<string, {seq: number, epoch: string}>} [since] symbols it resumes (docs/protocol.md, Recovery)
 * @property {StreamBars | null} [bars] the bar series it carries besides the quotes: one interval
 * @property {StreamBooks | null} [books] the order books it carries: one depth and mode
 * @property {string | null} [token] sent as `Authorization: Bearer`
 * @property {string} [lastEventId] sent as `Last-Event-ID`
 * @property {typeof fetch} [fetch]
 */

export class SseSocket {
  /** @type {number} one of ReadyState */
  readyState = ReadyState.CONNECTING
  /**
   * The gateway answered: the stream opened, or was refused with a coded
   * error. False for a network failure or a server without /sse (a 404
   * page): then this was no better than a failed WebSocket upgrade.
   */
  answered = false
  /** @type {any} */ onopen = null
  /** @type {any} */ onmessage = null
  /** @type {any} */ onclose = null
  /** @type {any} */ onerror = null
  /** @type {(() => void) | null} called on every heartbeat comment */
  onheartbeat = null
  #abort = new AbortController()
  #parser = new SseParser()
  #closed = false

  /**
   * @param {string} url the gateway's WebSocket URL (`/ws`); the stream is at `/sse` beside it
   * @param {SseSocketOptions} options
   */
  constructor (url, { symbols, mode = 'merge', since, bars = null, books = null, token = null, lastEventId = '', fetch: fetchFn = globalThis.fetch }) {
    const u = new URL(sseUrlFor(url))
    u.searchParams.set('symbols', symbols.join(','))
    if (mode !== 'merge') u.searchParams.set('mode', mode)
    if (since?.size) u.searchParams.set('since', [...since].map(([s, c]) => `${s}:${c.seq}:${c.epoch}`).join(','))
    if (bars?.symbols.length) {
      u.searchParams.set('bars', bars.interval)
      u.searchParams.set('barSymbols', bars.symbols.join(','))
      u.searchParams.set('backfill', String(bars.backfill))
      if (bars.delayed !== undefined) u.searchParams.set('barDelayed', String(bars.delayed))
    }
    if (books?.symbols.length) {
      u.searchParams.set('book', String(books.depth))
      u.searchParams.set('bookSymbols', books.symbols.join(','))
      if (books.delivery.mode) u.searchParams.set('bookMode', books.delivery.mode)
      if (books.delivery.maxRate !== undefined) u.searchParams.set('bookMaxRate', String(books.delivery.maxRate))
    }
    this.url = u.href
    this.#parser.lastEventId = lastEventId
    /** @type {Record<string, string>} */
    const headers = { accept: 'text/event-stream' }
    if (token) headers.authorization = `Bearer ${token}`
    if (lastEventId) headers['last-event-id'] = lastEventId
    fetchFn(u.href, { headers, signal: this.#abort.signal, cache: 'no-store' })
      .then((res) => this.#read(res))
      .catch((err) => this.#finish(ClientCloseCode.ABNORMAL, String(err?.message ?? err)))
  }

  /** The `id:` of the last event received. */
  get lastEventId () { return this.#parser.lastEventId }

  /** Nothing to send: requests of an SSE client are made by reopening the stream. */
  send () {}

  /**
   * @param {number} [code]
   * @param {string} [reason]
   */
  close (code = 1000, reason = '') {
    this.#abort.abort()
    this.#finish(code, reason)
  }

  terminate () {
    this.close(ClientCloseCode.ABNORMAL, 'terminated')
  }

  /** @param {Response} res */
  async #read (res) {
    if (!res.ok || !res.body) {
      // A refused stream carries a protocol error frame as its JSON body.
      const text = await res.text().catch(() => '')
      if (text.startsWith('{"op":"error"')) {
        this.answered = true
        this.#deliver(text)
      }
      // The close a WebSocket would have seen for the same refusal.
      const code = res.status === 401
        ? CloseCode.UNAUTHORIZED
        : res.status === 503 ? (text.includes(`"${ErrorCode.DRAINING}"`) ? CloseCode.SERVICE_RESTART : CloseCode.TRY_AGAIN_LATER) : ClientCloseCode.ABNORMAL
      this.#finish(code, `HTTP ${res.status}`)
      return
    }
    this.answered = true
    this.readyState = ReadyState.OPEN
    this.onopen?.({})
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
    let closeFrame = /** @type {{code: number, reason: string} | null} */ (null)
    for (;;) {
      const { value, done } = await reader.read()
      if (done || this.#closed) break
      this.#parser.push(value, (ev) => {
        if (ev === null) this.onheartbeat?.()
        else if (ev.event === 'close') closeFrame = parseClose(ev.data)
        else this.#deliver(ev.data)
      })
    }
    this.#finish(closeFrame?.code ?? ClientCloseCode.ABNORMAL, closeFrame?.reason ?? 'stream ended')
  }

  /** @param {string} data */
  #deliver (data) {
    if (!this.#closed) this.onmessage?.({ data })
  }

  /**
   * @param {number} code
   * @param {string} reason
   */
  #finish (code, reason) {
    if (this.#closed) return
    this.#closed = true
    this.readyState = ReadyState.CLOSED
    this.#abort.abort()
    this.onclose?.({ code, reason })
  }
}

/**
 * @param {string} data
 * @returns {{code: number, reason: string} | null}
 */
function parseClose (data) {
  try {
    const { code, reason } = JSON.parse(data)
    return typeof code === 'number' ? { code, reason: String(reason ?? '') } : null
  } catch {
    return null
  }
}
