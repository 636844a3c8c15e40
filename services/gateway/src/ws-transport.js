// The WebSocket transport of a Connection: a `ws` socket that implements
// the protocol-shaped Transport of connection.js (write a frame with its
// op, close with a Disconnect, bufferedAmount, open, ping, terminate), plus
// the connection it carries and its server's event handlers, so one set of
// handlers serves every socket (six closures per connection were a tenth
// of an idle connection's heap) and `ws`'s events reach them without a
// listener: five listeners filled each socket's `_events` table (a
// dictionary).
//
// write() has a fast path that writes a frame built once for many
// connections to the socket itself, past `ws`'s Sender: it reads `ws`'s
// private fields. `ws` is pinned to an exact version in
// services/gateway/package.json for it, and ws-internals.test.js fails
// loudly when an upgrade changes what the fast path relies on.

import { WebSocket } from 'ws'
import { ReadyState } from '@wsps/protocol'

const TEXT = Object.freeze({ binary: false })

/** `ws`'s Sender state while it sends at once (sender.js: DEFAULT). */
const SENDER_IDLE = 0

/**
 * The `ws` internals write() checks before it writes to the socket itself
 * (ws 8, lib/websocket.js and lib/sender.js). ws-internals.test.js fails
 * if a `ws` upgrade changes them.
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
  #connection = null
  /** @type {SocketEvents | null} */
  #events = null

  /** @returns {import('./connection.js').Connection | null} the connection it carries (null once detached) */
  get connection () {
    return this.#connection
  }

  /**
   * From now on `ws`'s events on this socket go to `events` (those it has
   * no handler for, to listeners as usual).
   *
   * @param {import('./connection.js').Connection} connection
   * @param {SocketEvents} events
   */
  serve (connection, events) {
    this.#connection = connection
    this.#events = events
  }

  /**
   * The socket closed: it carries its connection no more.
   *
   * @returns {import('./connection.js').Connection | null} the connection it carried
   */
  detach () {
    const connection = this.#connection
    this.#connection = null
    return connection
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

  /** Frames may be written. */
  get open () {
    return this.readyState === ReadyState.OPEN
  }

  /**
   * Writes one server frame as a text message. A frame built once for
   * every recipient goes out with one socket write, when that cannot
   * interleave with what `ws` sends itself: the socket is open, it
   * negotiated no per-message compression (the frame would need RSV1 and a
   * compressed payload), and `ws`'s sender is idle with nothing queued and
   * no fragmented message open (a compression or a Blob read in flight
   * queues later sends; a frame written past them would overtake them).
   * A frame whose wire is a string (one reader's ASCII batch) is written as
   * latin1, one byte per char. Otherwise, and for a control frame's text,
   * `ws` frames the payload.
   * Either way the bytes land in the socket's write buffer, which
   * bufferedAmount counts.
   *
   * @param {import('./text-frame.js').TextFrame | string} frame
   * @param {import('@wsps/protocol').ServerOpName} _op every frame is a text message, whatever its op
   */
  write (frame, _op) {
    if (typeof frame === 'string') {
      super.send(frame, TEXT)
      return
    }
    const ws = /** @type {WsInternals} */ (/** @type {unknown} */ (this))
    const sender = ws._sender
    if (this.readyState === ReadyState.OPEN && sender._state === SENDER_IDLE && sender._queue.length === 0 &&
        sender._firstFragment && ws._extensions['permessage-deflate'] === undefined) {
      const wire = frame.wire
      if (typeof wire === 'string') ws._socket.write(wire, 'latin1')
      else ws._socket.write(wire)
    } else {
      super.send(frame.payload, TEXT)
    }
  }

  /**
   * Starts the closing handshake. The Transport's close takes a named
   * Disconnect; `ws` itself calls close(code, reason) (a peer's close
   * frame, a protocol error), which goes through as before.
   *
   * @param {import('@wsps/protocol').Disconnect | number} [disconnect]
   * @param {string | Buffer} [reason]
   */
  close (disconnect, reason) {
    if (typeof disconnect === 'object') super.close(disconnect.code, disconnect.reason)
    else super.close(disconnect, reason)
  }
}
