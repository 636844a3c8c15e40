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
// result per reader (docs/benchmarks/experiments/fanout-shape-2026-11-26.md,
// "frames joined from bytes").

/** FIN + opcode 1 (text): the first byte of every frame built here. */
const FIN_TEXT = 0x81
const COMMA = 0x2c

export class TextFrame {
  /** @type {Buffer} the whole WebSocket frame: header, then payload */
  wire
  /** @type {number} the payload's length in bytes */
  length
  /** Where the payload starts in `wire`. */
  #head

  /**
   * @param {string | number} text the frame's JSON text, or (TextFrame.join)
   *   the payload's length, its bytes to be filled in by the caller
   */
  constructor (text) {
    const n = typeof text === 'string' ? Buffer.byteLength(text) : text
    const head = n < 126 ? 2 : n < 65536 ? 4 : 10
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
    const wire = frame.wire
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

  /** @returns {Buffer} the payload alone (a view into `wire`, made when asked): what other transports write */
  get payload () {
    return this.wire.subarray(this.#head)
  }
}
