// The gateway's reading of binary client frames (`wsps.v1.proto`): random
// and mutated bytes get a coded error of the registry and never throw, and
// a frame says the same in Protobuf as in JSON: the same request, or the
// same code.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { ErrorCode } from '@wsps/protocol'
import { encodeClientFrame } from '@wsps/protocol/proto-codec'
import { parseClientFrame } from '../src/protocol.js'

const CODES = new Set(Object.values(ErrorCode))
const RUNS = 2000

/** @param {Uint8Array} bytes */
const readBinary = (bytes) => parseClientFrame(Buffer.from(bytes), true, true)

/**
 * @param {import('../src/protocol.js').ParseResult} r
 */
function assertCoded (r) {
  if (!r.ok) assert.ok(CODES.has(/** @type {any} */ (r.error.code)), r.error.code)
}

const VALID = [
  { op: 'sub', symbols: ['AAPL', 'MSFT'], id: 1 },
  { op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: { seq: 1042, epoch: 'hohrttbiv1', held: false } } },
  { op: 'sub', symbols: ['AAPL'], bars: '1m', backfill: 50, id: 'x' },
  { op: 'unsub', symbols: ['BTC-USD'], book: 10 },
  { op: 'ping', id: 3 },
  { op: 'auth', token: 'a.b.c' }
].map((f) => encodeClientFrame(f))

test('random bytes get a coded error or a request, never a throw', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
    assertCoded(readBinary(bytes))
  }), { numRuns: RUNS })
})

test('valid frames with bytes flipped, cut or inserted get a coded error or a request, never a throw', () => {
  const mutation = fc.record({
    frame: fc.constantFrom(...VALID),
    at: fc.nat(),
    kind: fc.constantFrom('flip', 'cut', 'insert', 'truncate'),
    byte: fc.integer({ min: 0, max: 255 })
  })
  fc.assert(fc.property(mutation, ({ frame, at, kind, byte }) => {
    const b = [...frame]
    const i = at % (b.length + 1)
    if (kind === 'flip') b[i % b.length] ^= byte || 1
    else if (kind === 'cut') b.splice(i, 1)
    else if (kind === 'insert') b.splice(i, 0, byte)
    else b.length = i
    assertCoded(readBinary(new Uint8Array(b)))
  }), { numRuns: RUNS })
})

test('a frame in Protobuf is read as its JSON: the same request, or the same code', () => {
  const symbol = fc.oneof(fc.constantFrom('AAPL', 'MSFT', 'BTC-USD', 'aapl', '', 'TOO-LONG-SYMBOL-XYZ'), fc.string({ maxLength: 20 }))
  const frame = fc.record({
    op: fc.constantFrom('sub', 'unsub', 'ping', 'auth', 'nope'),
    id: fc.option(fc.oneof(fc.integer(), fc.string({ maxLength: 70 })), { nil: undefined }),
    symbols: fc.array(symbol, { maxLength: 5 }),
    mode: fc.option(fc.constantFrom('merge', 'distinct', 'fast', ''), { nil: undefined }),
    maxRate: fc.option(fc.double({ min: -1, max: 2000, noNaN: true }), { nil: undefined }),
    delayed: fc.option(fc.boolean(), { nil: undefined }),
    bars: fc.option(fc.constantFrom('1s', '1m', '5m', '2h'), { nil: undefined }),
    backfill: fc.option(fc.integer({ min: -5, max: 600 }), { nil: undefined }),
    book: fc.option(fc.constantFrom(0, 10, 25, 11), { nil: undefined }),
    since: fc.option(fc.dictionary(symbol, fc.record({
      seq: fc.integer({ min: -2, max: 2 ** 31 }),
      epoch: fc.constantFrom('hohrttbiv1', '', 'bad epoch'),
      held: fc.option(fc.boolean(), { nil: undefined })
    }, { requiredKeys: ['seq', 'epoch'] }), { maxKeys: 3 }), { nil: undefined }),
    token: fc.option(fc.string({ maxLength: 20 }), { nil: undefined })
  }, { requiredKeys: ['op'] })
  fc.assert(fc.property(frame, (f) => {
    // Only what the frame's op carries goes into either encoding.
    const msg = /** @type {Record<string, any>} */ ({ ...f })
    for (const k of Object.keys(msg)) if (msg[k] === undefined) delete msg[k]
    if (msg.op === 'nope') {
      assert.equal(/** @type {any} */ (parseClientFrame(Buffer.from(JSON.stringify(msg)), false)).error.code, ErrorCode.BAD_OP)
      return
    }
    if (msg.op === 'ping') for (const k of Object.keys(msg)) if (k !== 'op' && k !== 'id') delete msg[k]
    if (msg.op === 'auth') for (const k of Object.keys(msg)) if (k !== 'op' && k !== 'id' && k !== 'token') delete msg[k]
    if (msg.op === 'auth' && msg.token === undefined) msg.token = ''
    if (msg.op === 'sub' || msg.op === 'unsub') delete msg.token
    if (msg.since !== undefined) {
      for (const c of Object.values(msg.since)) if (c.held === undefined) delete c.held
    }
    const json = parseClientFrame(Buffer.from(JSON.stringify(msg)), false)
    const binary = readBinary(encodeClientFrame(msg))
    assert.equal(binary.ok, json.ok)
    if (json.ok && binary.ok) assert.deepStrictEqual(binary.request, json.request)
    else if (!json.ok && !binary.ok) assert.equal(binary.error.code, json.error.code)
  }), { numRuns: RUNS })
})

test('a binary frame on a JSON connection is BAD_FRAME; JSON text on a Protobuf one is read as JSON', () => {
  const text = parseClientFrame(Buffer.from('{"op":"ping","id":1}'), false, true)
  assert.deepStrictEqual(text, { ok: true, request: { op: 'ping', id: 1 } })
  const binary = parseClientFrame(Buffer.from(encodeClientFrame({ op: 'ping' })), true, false)
  assert.equal(!binary.ok && binary.error.code, ErrorCode.BAD_FRAME)
  const ok = readBinary(encodeClientFrame({ op: 'ping', id: 7 }))
  assert.deepStrictEqual(ok, { ok: true, request: { op: 'ping', id: 7 } })
})

test('a fragmented binary message (Buffer[]) is read whole', () => {
  const bytes = Buffer.from(encodeClientFrame({ op: 'sub', symbols: ['AAPL'], id: 1 }))
  const r = parseClientFrame([bytes.subarray(0, 3), bytes.subarray(3)], true, true)
  assert.deepStrictEqual(r, { ok: true, request: { op: 'sub', symbols: ['AAPL'], id: 1 } })
})
