// A GET /sse stream for tests: every event recorded as sent (id, event name,
// parsed data), heartbeat comments counted, the final `close` event kept.
// It parses with the browser client's own SseParser, so the tests read the
// stream the way the client does. node:http, not fetch: fetch drops a `Host`
// header, and the e2e reaches the chart's Ingress and HTTPRoute by host name
// on 127.0.0.1.

import { request } from 'node:http'
import { SseParser } from '@wsps/client/sse'
import { waitFor } from './wait.js'

export class SseStream {
  /**
   * Opens a stream; resolves once the response headers arrived (any status).
   *
   * @param {string} url full URL, query included (http:)
   * @param {Record<string, string>} [headers] `Host` included
   */
  static async open (url, headers = {}) {
    const s = new SseStream()
    const res = await new Promise((resolve, reject) => {
      const req = request(url, { headers: { accept: 'text/event-stream', ...headers }, signal: s.#abort.signal }, resolve)
      req.on('error', reject)
      req.end()
    })
    s.status = res.statusCode ?? 0
    s.headers = new Headers()
    for (const [k, v] of Object.entries(res.headers)) for (const x of [v ?? ''].flat()) s.headers.append(k, x)
    res.setEncoding('utf8')
    if (s.status < 200 || s.status > 299) {
      for await (const chunk of res) s.body += chunk
      s.ended = true
      return s
    }
    s.#pump(res)
    return s
  }

  #abort = new AbortController()
  #parser = new SseParser()
  status = 0
  /** @type {Headers | null} */
  headers = null
  /** The body of a refused request. */
  body = ''
  /** @type {{id: string, event: string, data: any, at: number}[]} at: Date.now() when it was parsed */
  events = []
  comments = 0
  /** @type {{code: number, reason: string} | null} the `close` event, if one came */
  closed = null
  ended = false

  /** @param {import('node:http').IncomingMessage} res the body, utf8 */
  async #pump (res) {
    try {
      for await (const chunk of res) {
        this.#parser.push(chunk, (ev) => {
          if (ev === null) this.comments++
          else if (ev.event === 'close') this.closed = JSON.parse(ev.data)
          else this.events.push({ id: this.#parser.lastEventId, event: ev.event, data: JSON.parse(ev.data), at: Date.now() })
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
