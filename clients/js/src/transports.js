// Which transport the next connection uses, and opening it: WebSocket
// first; SSE when there is no WebSocket or its upgrade fails, and back to
// WebSocket when SSE fails the same way (a gateway that was only down is
// not left on SSE). An SSE stream resumes the event ids of the last one.

import { SseSocket } from './sse-socket.js'
import { Transport } from './types.js'

/**
 * @typedef {import('./types.js').SocketLike} SocketLike
 * @typedef {import('./types.js').SocketConstructor} SocketConstructor
 */

export class Transports {
  #mode
  /** The subprotocols a WebSocket asks for (encoding.js), best first. */
  #protocols
  /** @type {SocketConstructor | null} */
  #WebSocket
  #fetch
  /** The next attempt uses SSE: no WebSocket here, or its last upgrade failed. */
  #useSse
  /** `id:` of the last SSE event, resumed from by the next stream. */
  #lastEventId = ''

  /**
   * @param {object} options
   * @param {'auto' | 'websocket' | 'sse'} options.mode
   * @param {string[]} options.protocols what a WebSocket asks for as its subprotocol, best first
   * @param {SocketConstructor | null} options.WebSocket null: none here
   * @param {typeof fetch | undefined} options.fetch for SSE; default globalThis.fetch
   */
  constructor ({ mode, protocols, WebSocket, fetch }) {
    if (!WebSocket && mode === 'websocket') throw new TypeError('WspsClient: no WebSocket here; pass options.WebSocket (in Node: the ws package)')
    this.#mode = mode
    this.#protocols = protocols
    this.#WebSocket = WebSocket
    this.#fetch = fetch
    this.#useSse = mode === 'sse' || !WebSocket
  }

  /** @returns {'websocket' | 'sse'} the transport of the next attempt */
  get next () {
    return this.#useSse ? Transport.SSE : Transport.WEBSOCKET
  }

  /**
   * Opens the next attempt's socket. Throws on a malformed URL.
   *
   * @param {string} url the WebSocket URL (SSE: `/sse` beside it)
   * @param {object} request
   * @param {string[]} request.symbols SSE: the watch set is part of the request
   * @param {'merge' | 'distinct'} [request.mode] SSE: the stream's delivery
   * @param {ReadonlyMap<string, {seq: number, epoch: string}>} [request.since] SSE: the symbols it resumes
   * @param {import('./sse-socket.js').StreamBars | null} [request.bars] SSE: the bar series it carries
   * @param {import('./sse-socket.js').StreamBooks | null} [request.books] SSE: the books it carries
   * @param {string | null} request.token SSE: sent as a header
   * @param {() => void} request.onheartbeat SSE: a heartbeat comment arrived
   * @returns {SocketLike}
   */
  open (url, { symbols, mode, since, bars, books, token, onheartbeat }) {
    if (!this.#useSse) {
      const ws = new /** @type {SocketConstructor} */ (this.#WebSocket)(url, this.#protocols)
      // Binary messages as bytes at once (a browser's default, a Blob, is read asynchronously).
      ws.binaryType = 'arraybuffer'
      return ws
    }
    const stream = new SseSocket(url, { symbols, mode, since, bars, books, token, lastEventId: this.#lastEventId, fetch: this.#fetch })
    stream.onheartbeat = onheartbeat
    return stream
  }

  /**
   * A socket from open() closed.
   *
   * @param {SocketLike} socket
   * @returns {boolean} whether a gateway answered it (an SSE stream's coded
   *   4xx refusal is an answer: not a failed upgrade)
   */
  closed (socket) {
    if (!(socket instanceof SseSocket)) return false
    this.#lastEventId = socket.lastEventId
    return socket.answered
  }

  /**
   * Fallback: a WebSocket whose upgrade failed (it never opened) makes the
   * next attempt SSE; an SSE stream that failed the same way sends the next
   * attempt back to WebSocket.
   *
   * @param {boolean} opened whether the socket that closed had opened
   */
  pick (opened) {
    if (this.#mode !== 'auto' || opened || this.#WebSocket === null) return
    this.#useSse = !this.#useSse
  }
}
