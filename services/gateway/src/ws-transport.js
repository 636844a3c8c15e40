// The WebSocket transport of a Connection: a `ws` socket that already has
// the members a Transport needs (connection.js), plus the connection it
// carries and its server's event handlers, so one set of handlers serves
// every socket (six closures per connection were a tenth of an idle
// connection's heap) and `ws`'s events reach them without a listener:
// five listeners filled each socket's `_events` table (a dictionary).

import { WebSocket } from 'ws'

const TEXT = Object.freeze({ binary: false })

/** `ws`'s Sender state while it sends at once (sender.js: DEFAULT). */
const SENDER_IDLE = 0

/**
 * The `ws` internals sendFrame() checks before it writes to the socket
 * itself (ws 8, lib/websocket.js and lib/sender.js). The unit tests
 * (ws-transport.test.js) fail if a `ws` upgrade changes them.
 *
 * @typedef {object} WsInternals
 * @property {import('node:net').Socket} _socket
 * @property {Record<string, unknown>} _extensions negotiated extensions by name
 * @property {{_state: number, _queue: unknown[], _firstFragment: boolean}} _sender
 */

/**
 * Handlers by `ws` event name, shared by every socket of a server; `this`
 * is the socket.
 *
 * @typedef {Readonly<Record<string, (this: WsTransport, ...args: any[]) => void>>} SocketEvents
 */

export class WsTransport extends WebSocket {
  /** @type {import('./connection.js').Connection | null} */
  connection = null
  /** @type {SocketEvents | null} */
  #events = null

  /**
   * From now on `ws`'s events on this socket go to `events` (those it has
   * no handler for, to listeners as usual).
   *
   * @param {import('./connection.js').Connection} connection
   * @param {SocketEvents} events
   */
  serve (connection, events) {
    this.connection = connection
    this.#events = events
  }

  /**
   * @param {string | symbol} event
   * @param {any[]} args
   */
  emit (event, ...args) {
    const events = this.#events
    if (events === null || typeof event !== 'string' || !Object.hasOwn(events, event)) return super.emit(event, ...args)
    events[event].apply(this, args)
    return true
  }

  /**
   * Every frame the gateway writes is text; `ws` would send a Buffer as
   * binary.
   *
   * @param {string | Buffer} data
   */
  send (data) {
    super.send(data, TEXT)
  }

  /**
   * Writes a frame built once for every recipient with one socket write,
   * when that cannot interleave with what `ws` sends itself: the socket is
   * open, it negotiated no per-message compression (the frame would need
   * RSV1 and a compressed payload), and `ws`'s sender is idle with nothing
   * queued and no fragmented message open (a compression or a Blob read in
   * flight queues later sends; a frame written past them would overtake
   * them). Otherwise `ws` frames the payload as send() does. Either way the
   * bytes land in the socket's write buffer, which bufferedAmount counts.
   *
   * @param {import('./text-frame.js').TextFrame} frame
   */
  sendFrame (frame) {
    const ws = /** @type {WsInternals} */ (/** @type {unknown} */ (this))
    const sender = ws._sender
    if (this.readyState === WebSocket.OPEN && sender._state === SENDER_IDLE && sender._queue.length === 0 &&
        sender._firstFragment && ws._extensions['permessage-deflate'] === undefined) {
      ws._socket.write(frame.wire)
    } else {
      super.send(frame.payload, TEXT)
    }
  }
}
