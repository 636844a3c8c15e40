// The encoding of a WebSocket's frames (docs/protocol.md, Binary encoding):
// which subprotocols the client asks for, and reading and writing frames.
// The gateway chooses; the client reads whatever each message is (text is
// JSON, binary is Protobuf of wsps.v1.proto) into the same objects, so
// nothing past this module knows which encoding the connection speaks.

import { Subprotocol } from './protocol.js'
import { decodeServerFrame, encodeClientFrame } from './proto-codec.js'

/** The client's `encoding` option: auto (Protobuf where the gateway speaks it, else JSON), or JSON only. */
export const ENCODINGS = Object.freeze(['auto', 'json'])

/**
 * The subprotocols a WebSocket asks for, best first.
 *
 * @param {'auto' | 'json'} encoding
 * @returns {string[]}
 */
export function subprotocols (encoding) {
  return encoding === 'json' ? [Subprotocol.JSON] : [Subprotocol.PROTO, Subprotocol.JSON]
}

/**
 * A server frame from a message: the object its JSON parses to, whichever
 * encoding it came in. Throws on one that is neither JSON nor a
 * ServerFrame.
 *
 * @param {unknown} data a string (text), or an ArrayBuffer or a view of one (binary)
 * @returns {any}
 */
export function readFrame (data) {
  if (typeof data === 'string') return JSON.parse(data)
  if (data instanceof ArrayBuffer) return decodeServerFrame(new Uint8Array(data))
  if (ArrayBuffer.isView(data)) return decodeServerFrame(new Uint8Array(data.buffer, data.byteOffset, data.byteLength))
  throw new TypeError('a message that is neither text nor bytes')
}

/**
 * A client frame as a message: Protobuf bytes once the gateway showed it
 * speaks them (its first binary frame on a `wsps.v1.proto` socket), JSON
 * text before and otherwise. A gateway that knows no subprotocols echoes
 * the first one asked and speaks JSON: the client keeps to JSON with it.
 *
 * @param {object} frame
 * @param {boolean} binary
 * @returns {string | Uint8Array}
 */
export function writeFrame (frame, binary) {
  return binary ? encodeClientFrame(frame) : JSON.stringify(frame)
}
