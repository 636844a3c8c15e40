// The Server-Sent Events transport of a connection: the same frames as on a
// WebSocket, each written as `id:`/`event:`/`data:` lines on one HTTP
// response (docs/protocol.md, "Server-Sent Events"). It has the members a
// connection drives a `ws` socket through (readyState, bufferedAmount, send,
// close, ping, terminate), so sessions, the hub and the fan-out serve it
// unchanged.

/** WebSocket readyState values, which the connection code compares against. */
const OPEN = 1
const CLOSING = 2
const CLOSED = 3

/** `{"op":"` : every frame the gateway writes starts with it. */
const OP_AT = 7

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
  readyState = OPEN
  #res
  #nextId
  /** @type {number | null} the code close() carried, for the close event */
  closeCode = null
  /** Told after every heartbeat written: the connection counts as alive (see ping()). */
  onAlive = () => {}

  /**
   * @param {import('node:http').ServerResponse} res headers already sent
   * @param {number} firstId id of the first event
   */
  constructor (res, firstId) {
    this.#res = res
    this.#nextId = firstId
    res.on('close', () => { this.readyState = CLOSED })
  }

  /** Bytes written but not yet handed to the kernel (response and socket). */
  get bufferedAmount () {
    return this.#res.writableLength
  }

  /**
   * One frame as one event, named by its op.
   *
   * @param {string | Buffer} data a JSON text frame
   */
  send (data) {
    if (this.readyState !== OPEN) return
    const text = typeof data === 'string' ? data : data.toString()
    const op = text.slice(OP_AT, text.indexOf('"', OP_AT))
    // JSON.stringify never emits a raw newline, so one data: line holds it.
    this.#res.write(`id: ${this.#nextId++}\nevent: ${op}\ndata: ${text}\n\n`)
  }

  /**
   * The close code travels as a last `close` event, since HTTP has none;
   * then the response ends.
   *
   * @param {number} code
   * @param {string} reason
   */
  close (code, reason) {
    if (this.readyState !== OPEN) return
    this.readyState = CLOSING
    this.closeCode = code
    this.#res.end(`event: close\ndata: ${JSON.stringify({ code, reason })}\n\n`)
  }

  /**
   * A heartbeat comment: it keeps proxies from timing the stream out and
   * lets the client see that the gateway is there. SSE has no answer to
   * wait for; a dead peer shows as a socket error or a send buffer that
   * never drains (the slow-reader limits close it).
   */
  ping () {
    if (this.readyState !== OPEN) return
    this.#res.write(':\n\n')
    this.onAlive()
  }

  /** A WebSocket ping frame has no SSE counterpart. */
  pong () {}

  terminate () {
    this.readyState = CLOSED
    this.#res.destroy()
  }
}
