// A text message framed once, header and payload in one Buffer, written
// as is to every WebSocket it goes to. Server frames are unmasked (RFC 6455
// 5.1), so without per-message compression the bytes on the wire are the
// same for every recipient: an update's frame is built once and each of its
// subscribers costs one socket write of the shared Buffer, instead of `ws`
// framing the payload again per connection (an options object and a header
// per send, cork, two writes, a writev). A frame for one connection alone
// gains the single write too. Measured in docs/benchmarks/analysis.md
// ("Cheaper writes").
//
// A frame can also be joined from pieces that are bytes already (a reader's
// batch of updates, each encoded once for all its subscribers): copying
// them costs a quarter to a half of joining their strings and encoding the
// result per reader (docs/benchmarks/experiments.md#fanout-shape-2026-11-26,
// "frames joined from bytes"; record in commit f66fdc2).
//
// A frame written to one reader alone (a reader's batch) whose text is
// ASCII keeps its wire as a string instead: each byte one char, written
// with the latin1 encoding. Node encodes a string of up to 16 KiB into
// stack memory when the socket takes it at once, so such a frame costs the
// V8 heap a short-lived string and no ArrayBuffer. A Buffer per reader per
// pass is external memory, which V8 counts towards its next mark-compact:
// at the fan-out's bound those Buffers drove half to three quarters of the
// major GCs (docs/benchmarks/experiments.md#frame-strings-2026-11-26, record
// in commit d58bb62: with strings, 1.6-2x the deliveries at p99 <= 100 ms). A frame shared
// by many readers stays a Buffer: written as is, with no copy per reader.
//
// A connection that negotiated the binary encoding (`wsps.v1.proto`,
// docs/protocol.md "Binary encoding") gets the same frame as a binary
// message of Protobuf bytes: its twin, made from the JSON when the first
// such connection needs it and kept with the frame, so an update shared by
// many readers is encoded once per encoding, and not at all in Protobuf
// while nobody reads Protobuf. Quote updates build their binary frames
// from bytes encoded once per update (delta.js), without the JSON.

import { encodeServerFrame } from '@wsps/protocol/proto-codec'

/** FIN + opcode 1 (text): the first byte of every text frame built here. */
const FIN_TEXT = 0x81
/** FIN + opcode 2 (binary): the first byte of a binary (Protobuf) frame. */
const FIN_BINARY = 0x82
const COMMA = 0x2c

export class TextFrame {
  /**
   * @type {Buffer | string} the whole WebSocket frame: header, then payload;
   *   a string holds one byte per char (TextFrame.ascii: write it as latin1)
   */
  wire
  /** @type {number} the payload's length in bytes */
  length
  /** Where the payload starts in `wire`. */
  #head
  /** A binary message (Protobuf bytes), not a text one (JSON). */
  binary = false
  /** @type {TextFrame | null} this text frame as a binary one, made when first asked */
  #twin = null

  /**
   * @param {string | number} text the frame's JSON text, or (TextFrame.join)
   *   the payload's length, its bytes to be filled in by the caller
   * @param {boolean} [asText] (TextFrame.ascii) `text` is ASCII: the wire is
   *   a string
   */
  constructor (text, asText = false) {
    if (asText && typeof text === 'string') {
      const n = text.length
      this.wire = headerText(n) + text
      this.length = n
      this.#head = headLength(n)
      return
    }
    const n = typeof text === 'string' ? Buffer.byteLength(text) : text
    const head = headLength(n)
    const wire = Buffer.allocUnsafe(head + n)
    wire[0] = FIN_TEXT
    if (head === 2) {
      wire[1] = n
    } else if (head === 4) {
      wire[1] = 126
      wire.writeUInt16BE(n, 2)
    } else {
      wire[1] = 127
      wire.writeUInt32BE(0, 2)
      wire.writeUInt32BE(n, 6)
    }
    if (typeof text === 'string') wire.write(text, head)
    this.wire = wire
    this.length = n
    this.#head = head
  }

  /**
   * A frame whose payload is `open`, the parts separated by commas, then
   * `close`: a JSON array's members, each encoded already.
   *
   * @param {Buffer} open
   * @param {readonly Buffer[]} parts at least one
   * @param {Buffer} close
   * @returns {TextFrame}
   */
  static join (open, parts, close) {
    let n = open.length + close.length + parts.length - 1
    for (const p of parts) n += p.length
    const frame = new TextFrame(n)
    // A frame made from a length has a Buffer wire.
    const wire = /** @type {Buffer} */ (frame.wire)
    let at = frame.#head
    wire.set(open, at)
    at += open.length
    for (let i = 0; i < parts.length; i++) {
      if (i > 0) wire[at++] = COMMA
      const p = parts[i]
      wire.set(p, at)
      at += p.length
    }
    wire.set(close, at)
    return frame
  }

  /**
   * A frame for one reader, its wire a string: `text` must be ASCII (each
   * char one byte in UTF-8 and in latin1), or its bytes on the wire would
   * not be its UTF-8.
   *
   * @param {string} text the frame's JSON text, ASCII only
   * @returns {TextFrame}
   */
  static ascii (text) {
    return new TextFrame(text, true)
  }

  /**
   * A binary frame of Protobuf bytes (proto-codec.js).
   *
   * @param {Uint8Array} bytes
   * @returns {TextFrame}
   */
  static binary (bytes) {
    const frame = new TextFrame(bytes.length)
    const wire = /** @type {Buffer} */ (frame.wire)
    wire[0] = FIN_BINARY
    wire.set(bytes, frame.#head)
    frame.binary = true
    return frame
  }

  /**
   * A binary frame of `n` payload bytes that `fill` writes in place (no
   * copy: a reader's batch, joined from bytes encoded once).
   *
   * @param {number} n
   * @param {(wire: Buffer, at: number) => void} fill writes the payload into `wire` from `at`
   * @returns {TextFrame}
   */
  static binaryFilled (n, fill) {
    const frame = new TextFrame(n)
    const wire = /** @type {Buffer} */ (frame.wire)
    wire[0] = FIN_BINARY
    fill(wire, frame.#head)
    frame.binary = true
    return frame
  }

  /**
   * @returns {TextFrame} the frame for a connection of the binary
   *   encoding: itself when binary already, else its JSON encoded in
   *   Protobuf once, on the first call, and kept
   */
  get binaryTwin () {
    if (this.binary) return this
    return this.#twin ??= TextFrame.binary(encodeServerFrame(JSON.parse(String(this.payload))))
  }

  /**
   * @returns {Buffer | string} the payload alone (a view into `wire`, made
   *   when asked; a string for an ASCII frame, whose UTF-8 is its bytes):
   *   what other transports write
   */
  get payload () {
    const wire = this.wire
    return typeof wire === 'string' ? wire.slice(this.#head) : wire.subarray(this.#head)
  }
}

/**
 * @param {number} n payload bytes
 * @returns {number} the header's length (RFC 6455 5.2)
 */
function headLength (n) {
  return n < 126 ? 2 : n < 65536 ? 4 : 10
}

/**
 * The header of a text frame of `n` payload bytes, one char per byte.
 *
 * @param {number} n
 * @returns {string}
 */
function headerText (n) {
  if (n < 126) return String.fromCharCode(FIN_TEXT, n)
  if (n < 65536) return String.fromCharCode(FIN_TEXT, 126, n >>> 8, n & 0xff)
  // A text frame's length never reaches 2^32 (far over any send cap).
  return String.fromCharCode(FIN_TEXT, 127, 0, 0, 0, 0, n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff)
}
