// The WebSocket transport of a Connection: it wraps a `ws` socket and gives
// it the protocol-shaped Transport of connection.js (write a frame with its
// op, close with a Disconnect, bufferedAmount, open, ping, terminate).
//
// The socket's events go to handlers its server shares among all its
// sockets, as `ws` does with a net.Socket in setSocket: they are not
// closures per connection (six closures per connection were a tenth of an
// idle connection's heap), and find the transport under a symbol on the
// socket (transportOf).
//
// write() has a fast path that writes a frame built once for many
// connections to the socket itself, past `ws`'s Sender: it reads `ws`'s
// private fields. `ws` is pinned to an exact version in
// services/gateway/package.json for it, and ws-internals.test.js fails
// loudly when an upgrade changes what the fast path relies on.
//
// The socket's subprotocol decides the encoding of every frame it gets
// (docs/protocol.md, Binary encoding): a socket of `wsps.v1.proto` gets
// each frame's binary twin (text-frame.js), shared like the text one, and
// a connection's own reply (an ack, an error: JSON text of one connection)
// encoded in Protobuf here.

import { ReadyState, Subprotocol } from '@wsps/protocol'
import { encodeServerFrame } from '@wsps/protocol/proto-codec'

const TEXT = Object.freeze({ binary: false })
const BINARY = Object.freeze({ binary: true })

/** `ws`'s Sender state while it sends at once (sender.js: DEFAULT). */
const SENDER_IDLE = 0

const kTransport = Symbol('wsps.transport')

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
 * is the `ws` socket (transportOf(this) its transport).
 *
 * @typedef {Readonly<Record<string, (this: import('ws').WebSocket, ...args: any[]) => void>>} SocketEvents
 */

/**
 * @param {import('ws').WebSocket} ws
 * @returns {WsTransport | undefined} the transport wrapping the socket
 */
export function transportOf (ws) {
  return /** @type {any} */ (ws)[kTransport]
}

export class WsTransport {
  #ws
  /** Frames go as Protobuf binary messages: the socket negotiated `wsps.v1.proto`. */
  #binary
  /** @type {import('./connection.js').Connection | null} */
  #connection = null

  /**
   * Wraps `ws`; its events go to `events` from now on.
   *
   * @param {import('ws').WebSocket} ws
   * @param {SocketEvents} events
   */
  constructor (ws, events) {
    this.#ws = ws
    this.#binary = ws.protocol === Subprotocol.PROTO
    Object.defineProperty(ws, kTransport, { value: this })
    for (const [event, handler] of Object.entries(events)) ws.on(event, handler)
  }

  /** @returns {import('./connection.js').Connection | null} the connection it carries (null before serve and once detached) */
  get connection () {
    return this.#connection
  }

  /** @returns {import('ws').WebSocket} the socket it wraps */
  get socket () {
    return this.#ws
  }

  /** @param {import('./connection.js').Connection} connection the connection it carries from now on */
  serve (connection) {
    this.#connection = connection
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

  /** Frames go as Protobuf binary messages (`wsps.v1.proto`), not JSON text. */
  get binary () {
    return this.#binary
  }

  /** Frames may be written. */
  get open () {
    return this.#ws.readyState === ReadyState.OPEN
  }

  /** Bytes written and not yet sent, as `ws` counts them (its socket's write buffer included). */
  get bufferedAmount () {
    return this.#ws.bufferedAmount
  }

  /**
   * Writes one server frame as a text message, or as a binary one when
   * the socket speaks Protobuf (its twin, text-frame.js). A frame built once for
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
   * @param {import('@wsps/protocol').ServerOpName} _op every frame is one message of the socket's encoding, whatever its op
   * @returns {number} the payload's bytes
   */
  write (frame, _op) {
    const ws = this.#ws
    if (typeof frame === 'string') {
      if (!this.#binary) {
        ws.send(frame, TEXT)
        return Buffer.byteLength(frame)
      }
      const bytes = encodeServerFrame(JSON.parse(frame))
      ws.send(bytes, BINARY)
      return bytes.length
    }
    if (this.#binary) frame = frame.binaryTwin
    const internals = /** @type {WsInternals} */ (/** @type {unknown} */ (ws))
    const sender = internals._sender
    if (ws.readyState === ReadyState.OPEN && sender._state === SENDER_IDLE && sender._queue.length === 0 &&
        sender._firstFragment && internals._extensions['permessage-deflate'] === undefined) {
      const wire = frame.wire
      if (typeof wire === 'string') internals._socket.write(wire, 'latin1')
      else internals._socket.write(wire)
    } else {
      ws.send(frame.payload, frame.binary ? BINARY : TEXT)
    }
    return frame.length
  }

  /** @param {import('@wsps/protocol').Disconnect} disconnect starts the closing handshake with its code and reason */
  close (disconnect) {
    this.#ws.close(disconnect.code, disconnect.reason)
  }

  ping () {
    this.#ws.ping()
  }

  terminate () {
    this.#ws.terminate()
  }
}
