// A GET /sse stream for tests: every event recorded as sent (id, event name,
// parsed data), heartbeat comments counted, the final `close` event kept.
// It parses with the browser client's own SseParser, so the tests read the
// stream the way the client does.

import { SseParser } from '../../../services/gateway/public/sse-socket.js'
import { waitFor } from './index.js'

export class SseStream {
  /**
   * Opens a stream; resolves once the response headers arrived (any status).
   *
   * @param {string} url full URL, query included
   * @param {Record<string, string>} [headers]
   */
  static async open (url, headers = {}) {
    const s = new SseStream()
    const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: s.#abort.signal })
    s.status = res.status
    s.headers = res.headers
    if (!res.ok || !res.body) {
      s.body = await res.text()
      s.ended = true
      return s
    }
    s.#pump(res.body)
    return s
  }

  #abort = new AbortController()
  #parser = new SseParser()
  status = 0
  /** @type {Headers | null} */
  headers = null
  /** The body of a refused request. */
  body = ''
  /** @type {{id: string, event: string, data: any}[]} */
  events = []
  comments = 0
  /** @type {{code: number, reason: string} | null} the `close` event, if one came */
  closed = null
  ended = false

  /** @param {ReadableStream<Uint8Array>} body */
  async #pump (body) {
    const reader = body.getReader()
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        this.#parser.push(decoder.decode(value, { stream: true }), (ev) => {
          if (ev === null) this.comments++
          else if (ev.event === 'close') this.closed = JSON.parse(ev.data)
          else this.events.push({ id: this.#parser.lastEventId, event: ev.event, data: JSON.parse(ev.data) })
        })
      }
    } catch {
      // aborted by close()
    } finally {
      this.ended = true
    }
  }

  /** @param {string} op */
  ofOp (op) {
    return this.events.filter((e) => e.event === op).map((e) => e.data)
  }

  /**
   * @param {(ev: {id: string, event: string, data: any}) => boolean} match
   * @param {number} [timeout]
   */
  next (match, timeout = 10_000) {
    return waitFor(() => this.events.find(match), { timeout, message: 'a matching SSE event' })
  }

  /**
   * Quote entries (snap and q) of a symbol received so far.
   * @param {string} symbol
   */
  quotesOf (symbol) {
    return this.events.filter((e) => e.event === 'snap' || e.event === 'q').flatMap((e) => e.data.quotes).filter((q) => q.symbol === symbol)
  }

  /** Resolves when the stream ended (the server closed it). */
  whenEnded (timeout = 15_000) {
    return waitFor(() => this.ended, { timeout, message: 'the stream to end' })
  }

  close () {
    this.#abort.abort()
  }
}
