// The binary encoding of protocol v1 (wsps.v1.proto, docs/protocol.md
// "Binary encoding"): a frame object of the JSON wire to and from its
// Protobuf bytes. The codecs are generated (gen/, tools/proto-generate.js);
// this module only maps the JSON frame's shape onto the messages, so that
// decoding a frame's bytes gives back the very object its JSON parses to.
// The gateway, the JS client and the tests share it: one wire contract,
// two encodings.
//
// Plain ESM, like the rest of services/protocol: it runs in Node, browsers
// (the page maps @bufbuild/protobuf in its import map) and k6.

import { create, fromBinary, toBinary } from '@bufbuild/protobuf'
import { WireType } from '@bufbuild/protobuf/wire'
import { ClientFrameSchema, QuoteSchema, QuotesSchema, ServerFrameSchema, SnapSchema } from './gen/wsps.v1_pb.js'

/** @typedef {Record<string, any>} FrameObject a frame as its JSON parses: `op` and its fields */

/**
 * The quote fields that are decimal strings on the binary wire and numbers
 * in JSON: prices, sizes, volume.
 */
const DECIMAL_FIELDS = Object.freeze(['bid', 'ask', 'last', 'bidSize', 'askSize', 'volume', 'open', 'high', 'low', 'prevClose'])

/** A bar's decimal fields (docs/protocol.md, Bars); t and n are integers. */
const BAR_DECIMALS = Object.freeze(['o', 'h', 'l', 'c', 'v'])

/**
 * A number as the decimal string of the binary wire: the text JSON holds
 * for it (ECMAScript's shortest round trip), so Number() of it is the same
 * number, bit for bit.
 *
 * @param {unknown} n
 * @returns {string}
 */
const decimal = (n) => String(n)

/**
 * An integer of the JSON wire as a 64-bit field's value. Every such field
 * holds an integer below 2^53 (a seq, ms); anything else is truncated
 * rather than thrown on, so no frame can stop the encoder.
 *
 * @param {unknown} n
 * @returns {bigint}
 */
const big = (n) => (typeof n === 'number' && Number.isFinite(n) ? BigInt(Math.trunc(n)) : 0n)

/** @param {bigint} b a 64-bit field's value, as the JSON number it was */
const num = (b) => Number(b)

/** @param {unknown} id */
function idOut (id) {
  if (typeof id === 'number') return { case: /** @type {const} */ ('idNumber'), value: id }
  if (typeof id === 'string') return { case: /** @type {const} */ ('idString'), value: id }
  return { case: undefined }
}

/**
 * @param {FrameObject} into
 * @param {{case: string | undefined, value?: unknown}} id
 */
function idIn (into, id) {
  if (id.case !== undefined) into.id = id.value
}

/**
 * @param {FrameObject} q a quote or delta
 * @returns {Record<string, unknown>} the Quote message's fields
 */
function quoteOut (q) {
  /** @type {Record<string, unknown>} */
  const m = { symbol: q.symbol, seq: big(q.seq), ts: q.ts }
  if (q.base !== undefined) m.base = big(q.base)
  for (const f of DECIMAL_FIELDS) if (q[f] !== undefined) m[f] = decimal(q[f])
  if (q.epoch !== undefined) m.epoch = q.epoch
  if (q.delayed !== undefined) m.delayed = q.delayed
  return m
}

/**
 * @param {import('./gen/wsps.v1_pb.js').Quote} m
 * @returns {FrameObject}
 */
function quoteIn (m) {
  /** @type {FrameObject} */
  const q = { symbol: m.symbol, seq: num(m.seq), ts: m.ts }
  if (m.base !== undefined) q.base = num(m.base)
  for (const f of DECIMAL_FIELDS) {
    const v = /** @type {string | undefined} */ (/** @type {any} */ (m)[f])
    if (v !== undefined) q[f] = Number(v)
  }
  if (m.epoch !== undefined) q.epoch = m.epoch
  if (m.delayed !== undefined) q.delayed = m.delayed
  return q
}

/** @param {FrameObject} b */
function barOut (b) {
  /** @type {Record<string, unknown>} */
  const m = { t: big(b.t), n: b.n }
  for (const f of BAR_DECIMALS) m[f] = decimal(b[f])
  return m
}

/** @param {import('./gen/wsps.v1_pb.js').Bar} m */
function barIn (m) {
  return { t: num(m.t), o: Number(m.o), h: Number(m.h), l: Number(m.l), c: Number(m.c), v: Number(m.v), n: m.n }
}

/** @param {readonly [string, string][]} levels */
const levelsOut = (levels) => levels.map(([price, size]) => ({ price, size }))
/** @param {readonly {price: string, size: string}[]} levels */
const levelsIn = (levels) => levels.map((l) => [l.price, l.size])

/**
 * Copies the optional fields named from a message into a frame object.
 *
 * @param {FrameObject} into
 * @param {Record<string, any>} from
 * @param {readonly string[]} names
 */
function optionals (into, from, names) {
  for (const n of names) if (from[n] !== undefined) into[n] = from[n]
}

/**
 * The ServerFrame message of a server frame object, by its op.
 *
 * @param {FrameObject} f
 * @returns {{case: string, value: Record<string, unknown>}}
 */
function serverOut (f) {
  switch (f.op) {
    case 'hello': {
      /** @type {Record<string, unknown>} */
      const m = { v: f.v, node: f.node, heartbeatMs: f.heartbeatMs, limits: f.limits ?? {} }
      if (f.expiresInMs !== undefined) m.expiresInMs = big(f.expiresInMs)
      return { case: 'hello', value: m }
    }
    case 'ack': {
      /** @type {Record<string, unknown>} */
      const m = { id: idOut(f.id), symbols: f.symbols ?? [] }
      optionals(m, f, ['mode', 'maxRate', 'bars', 'book'])
      if (f.expiresInMs !== undefined) m.expiresInMs = big(f.expiresInMs)
      if (f.delayMs !== undefined) m.delayMs = big(f.delayMs)
      if (f.recovered !== undefined) m.recovered = { symbols: f.recovered }
      if (f.delayed !== undefined) m.delayed = { symbols: f.delayed }
      return { case: 'ack', value: m }
    }
    case 'error': {
      /** @type {Record<string, unknown>} */
      const m = { id: idOut(f.id), code: f.code }
      optionals(m, f, ['message', 'bars'])
      if (f.symbols !== undefined) m.symbols = { symbols: f.symbols }
      return { case: 'error', value: m }
    }
    case 'snap': {
      /** @type {Record<string, unknown>} */
      const m = { quotes: f.quotes.map(quoteOut) }
      if (f.recovered !== undefined) m.recovered = f.recovered
      return { case: 'snap', value: m }
    }
    case 'q':
      return { case: 'q', value: { quotes: f.quotes.map(quoteOut) } }
    case 'bars': {
      /** @type {Record<string, unknown>} */
      const m = { symbol: f.symbol, interval: f.interval, bars: f.bars.map(barOut), complete: f.complete }
      if (f.current !== undefined) m.current = barOut(f.current)
      if (f.delayed !== undefined) m.delayed = f.delayed
      return { case: 'bars', value: m }
    }
    case 'bar': {
      /** @type {Record<string, unknown>} */
      const m = { symbol: f.symbol, interval: f.interval, bar: barOut(f.bar), closed: f.closed }
      if (f.delayed !== undefined) m.delayed = f.delayed
      return { case: 'bar', value: m }
    }
    case 'book': {
      /** @type {Record<string, unknown>} */
      const m = { symbol: f.symbol, depth: f.depth, seq: big(f.seq), ts: f.ts, bids: levelsOut(f.bids), asks: levelsOut(f.asks), checksum: f.checksum }
      optionals(m, f, ['epoch', 'sync'])
      return { case: 'book', value: m }
    }
    case 'levels':
      return {
        case: 'levels',
        value: { symbol: f.symbol, depth: f.depth, seq: big(f.seq), prev: big(f.prev), ts: f.ts, bids: levelsOut(f.bids), asks: levelsOut(f.asks), checksum: f.checksum }
      }
    case 'pong':
      return { case: 'pong', value: { id: idOut(f.id) } }
    case 'stale':
      return { case: 'stale', value: { symbols: f.symbols, since: f.since } }
    case 'fresh':
      return { case: 'fresh', value: { symbols: f.symbols } }
    default:
      throw new TypeError(`no binary encoding for server op ${JSON.stringify(f.op)}`)
  }
}

/**
 * @param {import('./gen/wsps.v1_pb.js').ServerFrame} frame
 * @returns {FrameObject}
 */
function serverIn ({ frame }) {
  switch (frame.case) {
    case 'hello': {
      const m = frame.value
      /** @type {FrameObject} */
      const f = { op: 'hello', v: m.v, node: m.node, heartbeatMs: m.heartbeatMs, limits: { ...m.limits } }
      if (m.expiresInMs !== undefined) f.expiresInMs = num(m.expiresInMs)
      return f
    }
    case 'ack': {
      const m = frame.value
      /** @type {FrameObject} */
      const f = { op: 'ack' }
      idIn(f, m.id)
      f.symbols = m.symbols
      optionals(f, m, ['mode', 'maxRate', 'bars', 'book'])
      if (m.expiresInMs !== undefined) f.expiresInMs = num(m.expiresInMs)
      if (m.delayMs !== undefined) f.delayMs = num(m.delayMs)
      if (m.recovered !== undefined) f.recovered = { ...m.recovered.symbols }
      if (m.delayed !== undefined) f.delayed = m.delayed.symbols
      return f
    }
    case 'error': {
      const m = frame.value
      /** @type {FrameObject} */
      const f = { op: 'error' }
      idIn(f, m.id)
      f.code = m.code
      optionals(f, m, ['message', 'bars'])
      if (m.symbols !== undefined) f.symbols = m.symbols.symbols
      return f
    }
    case 'snap': {
      const m = frame.value
      /** @type {FrameObject} */
      const f = { op: 'snap', quotes: m.quotes.map(quoteIn) }
      if (m.recovered !== undefined) f.recovered = m.recovered
      return f
    }
    case 'q':
      return { op: 'q', quotes: frame.value.quotes.map(quoteIn) }
    case 'bars': {
      const m = frame.value
      /** @type {FrameObject} */
      const f = { op: 'bars', symbol: m.symbol, interval: m.interval, bars: m.bars.map(barIn) }
      if (m.current !== undefined) f.current = barIn(m.current)
      f.complete = m.complete
      if (m.delayed !== undefined) f.delayed = m.delayed
      return f
    }
    case 'bar': {
      const m = frame.value
      /** @type {FrameObject} */
      const f = { op: 'bar', symbol: m.symbol, interval: m.interval, bar: m.bar === undefined ? undefined : barIn(m.bar), closed: m.closed }
      if (m.delayed !== undefined) f.delayed = m.delayed
      return f
    }
    case 'book': {
      const m = frame.value
      /** @type {FrameObject} */
      const f = { op: 'book', symbol: m.symbol, depth: m.depth, seq: num(m.seq) }
      optionals(f, m, ['epoch'])
      f.ts = m.ts
      optionals(f, m, ['sync'])
      Object.assign(f, { bids: levelsIn(m.bids), asks: levelsIn(m.asks), checksum: m.checksum })
      return f
    }
    case 'levels': {
      const m = frame.value
      return { op: 'levels', symbol: m.symbol, depth: m.depth, seq: num(m.seq), prev: num(m.prev), ts: m.ts, bids: levelsIn(m.bids), asks: levelsIn(m.asks), checksum: m.checksum }
    }
    case 'pong': {
      /** @type {FrameObject} */
      const f = { op: 'pong' }
      idIn(f, frame.value.id)
      return f
    }
    case 'stale':
      return { op: 'stale', symbols: frame.value.symbols, since: frame.value.since }
    case 'fresh':
      return { op: 'fresh', symbols: frame.value.symbols }
    default:
      // A frame of a case this client does not know (a newer gateway's):
      // no op, as a JSON frame with an unknown op is to an older client.
      return { op: undefined }
  }
}

/**
 * A server frame's bytes on the binary wire.
 *
 * @param {FrameObject} frame
 * @returns {Uint8Array}
 */
export function encodeServerFrame (frame) {
  return toBinary(ServerFrameSchema, create(ServerFrameSchema, /** @type {any} */ ({ frame: serverOut(frame) })))
}

/**
 * A server frame from its bytes, as the object its JSON would parse to.
 * Throws on bytes that are not a ServerFrame.
 *
 * @param {Uint8Array} bytes
 * @returns {FrameObject}
 */
export function decodeServerFrame (bytes) {
  return serverIn(fromBinary(ServerFrameSchema, bytes))
}

/**
 * @param {FrameObject} f a `sub` or `unsub`
 * @returns {Record<string, unknown>} its SymbolsRequest message's fields
 */
function symbolsRequestOut (f) {
  /** @type {Record<string, unknown>} */
  const m = { id: idOut(f.id), symbols: f.symbols ?? [] }
  optionals(m, f, ['mode', 'maxRate', 'delayed', 'bars', 'backfill', 'book'])
  if (f.since !== undefined) {
    m.since = Object.fromEntries(Object.entries(f.since).map(([s, c]) => [s, { ...c, seq: big(c.seq) }]))
  }
  return m
}

/**
 * A client frame's bytes on the binary wire (what the JS client sends).
 *
 * @param {FrameObject} f
 * @returns {Uint8Array}
 */
export function encodeClientFrame (f) {
  /** @type {{case: string, value: Record<string, unknown>}} */
  let frame
  switch (f.op) {
    case 'sub':
    case 'unsub':
      frame = { case: f.op, value: symbolsRequestOut(f) }
      break
    case 'ping':
      frame = { case: 'ping', value: { id: idOut(f.id) } }
      break
    case 'auth':
      frame = { case: 'auth', value: { id: idOut(f.id), token: f.token } }
      break
    default:
      throw new TypeError(`no binary encoding for client op ${JSON.stringify(f.op)}`)
  }
  return toBinary(ClientFrameSchema, create(ClientFrameSchema, /** @type {any} */ ({ frame })))
}

/**
 * A client frame from its bytes, as the object its JSON would parse to:
 * the gateway validates it by the same rules (and codes) as a JSON frame.
 * A frame with no case known has no `op` (BAD_OP). Throws on bytes that
 * are not a ClientFrame.
 *
 * @param {Uint8Array} bytes
 * @returns {FrameObject}
 */
export function decodeClientFrame (bytes) {
  const { frame } = fromBinary(ClientFrameSchema, bytes)
  /** @type {FrameObject} */
  const f = { op: frame.case }
  switch (frame.case) {
    case 'sub':
    case 'unsub': {
      const m = frame.value
      idIn(f, m.id)
      f.symbols = m.symbols
      optionals(f, m, ['mode', 'maxRate', 'delayed', 'bars', 'backfill', 'book'])
      const since = Object.entries(m.since)
      if (since.length) {
        f.since = Object.fromEntries(since.map(([s, c]) => [s, c.held === undefined ? { seq: num(c.seq), epoch: c.epoch } : { seq: num(c.seq), epoch: c.epoch, held: c.held }]))
      }
      break
    }
    case 'ping':
      idIn(f, frame.value.id)
      break
    case 'auth':
      idIn(f, frame.value.id)
      f.token = frame.value.token
      break
  }
  return f
}

// ---------------------------------------------------------------- the gateway's hot path

/**
 * One quote's (or delta's) Quote message bytes, encoded once for every
 * subscriber: quotesBytes() joins them into a frame.
 *
 * @param {FrameObject} quote
 * @returns {Uint8Array}
 */
export function encodeQuote (quote) {
  return toBinary(QuoteSchema, create(QuoteSchema, /** @type {any} */ (quoteOut(quote))))
}

/** A length-delimited field's tag (field number, wire type 2), encoded. */
const lenTag = (/** @type {number} */ field) => Uint8Array.from(varint((field << 3) | WireType.LengthDelimited))
const Q_TAG = lenTag(ServerFrameSchema.field.q.number)
const SNAP_TAG = lenTag(ServerFrameSchema.field.snap.number)
const QUOTES_TAG = lenTag(QuotesSchema.field.quotes.number)
const SNAP_QUOTES_TAG = lenTag(SnapSchema.field.quotes.number)
/** `recovered: false` of a snap: the field's varint tag, then 0. */
const LOST = Uint8Array.of(...varint((SnapSchema.field.recovered.number << 3) | WireType.Varint), 0)

/**
 * @param {number} n a non-negative integer below 2^31
 * @returns {number[]} its base-128 varint bytes
 */
function varint (n) {
  const out = []
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80)
    n >>>= 7
  }
  out.push(n)
  return out
}

/**
 * Writes a varint into `to` at `at`.
 *
 * @param {Uint8Array} to
 * @param {number} at
 * @param {number} n
 * @returns {number} where it ends
 */
function putVarint (to, at, n) {
  while (n > 0x7f) {
    to[at++] = (n & 0x7f) | 0x80
    n >>>= 7
  }
  to[at++] = n
  return at
}

/** @param {number} n @returns {number} the bytes of its varint */
const varintLength = (n) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5)

/**
 * A `q` (or `snap`) frame's bytes joined from quotes encoded already
 * (encodeQuote): a repeated message field is its members one after the
 * other, each behind its tag and length, and the envelope's field is the
 * same around them (the Protobuf encoding), so the frame is the bytes
 * encodeServerFrame makes from the objects (proto-codec.test.js checks it),
 * with no quote encoded again per reader, and one allocation.
 *
 * @param {'q' | 'snap'} op
 * @param {readonly Uint8Array[]} quotes
 * @param {boolean} [lost] a snap replacing lost ticks (`"recovered":false`)
 * @returns {Uint8Array}
 */
export function quotesBytes (op, quotes, lost = false) {
  const out = new Uint8Array(quotesLength(op, quotes, lost))
  writeQuotes(out, 0, op, quotes, lost)
  return out
}

/**
 * The bytes quotesBytes() makes, counted (to write them into a buffer of
 * one's own with writeQuotes()).
 *
 * @param {'q' | 'snap'} op
 * @param {readonly Uint8Array[]} quotes
 * @param {boolean} [lost]
 * @returns {number}
 */
export function quotesLength (op, quotes, lost = false) {
  const body = quotesBody(op, quotes, lost)
  return (op === 'q' ? Q_TAG : SNAP_TAG).length + varintLength(body) + body
}

/**
 * @param {'q' | 'snap'} op
 * @param {readonly Uint8Array[]} quotes
 * @param {boolean} lost
 * @returns {number} the envelope field's payload length
 */
function quotesBody (op, quotes, lost) {
  const inner = op === 'q' ? QUOTES_TAG.length : SNAP_QUOTES_TAG.length
  let body = lost ? LOST.length : 0
  for (let i = 0; i < quotes.length; i++) {
    const n = quotes[i].length
    body += inner + varintLength(n) + n
  }
  return body
}

/**
 * Writes quotesBytes()'s bytes into `into` from `at` (quotesLength() of them).
 *
 * @param {Uint8Array} into
 * @param {number} at
 * @param {'q' | 'snap'} op
 * @param {readonly Uint8Array[]} quotes
 * @param {boolean} [lost]
 */
export function writeQuotes (into, at, op, quotes, lost = false) {
  const outer = op === 'q' ? Q_TAG : SNAP_TAG
  const inner = op === 'q' ? QUOTES_TAG : SNAP_QUOTES_TAG
  for (let i = 0; i < outer.length; i++) into[at++] = outer[i]
  at = putVarint(into, at, quotesBody(op, quotes, lost))
  for (let i = 0; i < quotes.length; i++) {
    const q = quotes[i]
    for (let j = 0; j < inner.length; j++) into[at++] = inner[j]
    at = putVarint(into, at, q.length)
    into.set(q, at)
    at += q.length
  }
  if (lost) into.set(LOST, at)
}
