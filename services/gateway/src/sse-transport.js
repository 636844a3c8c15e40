// The Server-Sent Events transport of a connection: the same frames as on a
// WebSocket, each written as `id:`/`event:`/`data:` lines on one HTTP
// response (docs/protocol.md, "Server-Sent Events"), the event named by the
// frame's op. It implements the protocol-shaped Transport of connection.js
// (write, close, bufferedAmount, open, ping, terminate), so sessions, the
// hub and the fan-out serve it unchanged.

/**
 * The event id an SSE client resumes from: `Last-Event-ID` is a decimal
 * count; anything else starts over.
 *
 * @param {string | string[] | undefined} header
 * @returns {number} the id of the first event of the new stream
 */
export function firstEventId (header) {
  const last = Array.isArray(header) ? header[0] : header
  if (last === undefined || !/^\d{1,15}$/.test(last)) return 1
  return Number(last) + 1
}

export class SseTransport {
  #res
  #nextId
  /** Frames may be written: until close(), terminate() or the response closed. */
  #open = true
  /** @type {import('./connection.js').Connection | null} the connection it carries: alive after every heartbeat (see ping()) */
  #connection = null

  /**
   * @param {import('node:http').ServerResponse} res headers already sent
   * @param {number} firstId id of the first event
   */
  constructor (res, firstId) {
    this.#res = res
    this.#nextId = firstId
    res.on('close', () => { this.#open = false })
  }

  /**
   * From now on it carries this connection.
   *
   * @param {import('./connection.js').Connection} connection
   */
  serve (connection) {
    this.#connection = connection
  }

  /** SSE frames are JSON text, always. */
  get binary () {
    return false
  }

  get open () {
    return this.#open
  }

  /** Bytes written but not yet handed to the kernel (response and socket). */
  get bufferedAmount () {
    return this.#res.writableLength
  }

  /**
   * One frame as one event, named by its op.
   *
   * @param {import('./text-frame.js').TextFrame | string} frame a frame or its JSON text
   * @param {import('@wsps/protocol').ServerOpName} op
   * @returns {number} the frame's bytes (its JSON)
   */
  write (frame, op) {
    if (!this.#open) return 0
    const text = typeof frame === 'string' ? frame : frame.payload.toString()
    // JSON.stringify never emits a raw newline, so one data: line holds it.
    this.#res.write(`id: ${this.#nextId++}\nevent: ${op}\ndata: ${text}\n\n`)
    return typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length
  }

  /**
   * The close code travels as a last `close` event, since HTTP has none;
   * then the response ends.
   *
   * @param {import('@wsps/protocol').Disconnect} disconnect
   */
  close ({ code, reason }) {
    if (!this.#open) return
    this.#open = false
    this.#res.end(`event: close\ndata: ${JSON.stringify({ code, reason })}\n\n`)
  }

  /**
   * A heartbeat comment: it keeps proxies from timing the stream out and
   * lets the client see that the gateway is there. SSE has no answer to
   * wait for; a dead peer shows as a socket error or a send buffer that
   * never drains (the slow-reader limits close it).
   */
  ping () {
    if (!this.#open) return
    this.#res.write(':\n\n')
    this.#connection?.markAlive()
  }

  terminate () {
    this.#open = false
    this.#res.destroy()
  }
}
