// A text message framed once, header and payload in one Buffer, written
// as is to every WebSocket it goes to. Server frames are unmasked (RFC 6455
// 5.1), so without per-message compression the bytes on the wire are the
// same for every recipient: an update's frame is built once and each of its
// subscribers costs one socket write of the shared Buffer, instead of `ws`
// framing the payload again per connection (an options object and a header
// per send, cork, two writes, a writev). A frame for one connection alone
// gains the single write too. Measured in docs/benchmarks/analysis.md
// ("Cheaper writes").

/** FIN + opcode 1 (text): the first byte of every frame built here. */
const FIN_TEXT = 0x81

export class TextFrame {
  /** @type {Buffer} the whole WebSocket frame: header, then payload */
  wire
  /** @type {Buffer} the payload alone (a view into `wire`): what other transports write */
  payload

  /** @param {string} text the frame's JSON text */
  constructor (text) {
    const n = Buffer.byteLength(text)
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
    wire.write(text, head)
    this.wire = wire
    this.payload = wire.subarray(head)
  }
}
