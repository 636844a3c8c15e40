// Conformance of the two encodings: one recorded session (every frame type
// of docs/protocol.md, both directions: fixtures/session.json) goes through
// JSON and through Protobuf (wsps.v1.proto), and each frame must decode to
// the same object both ways. Every leaf of every frame is then changed in
// turn: the Protobuf copy must differ from the original, so a field the
// binary encoding dropped or bent cannot pass.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { ClientOp, ServerOp } from '@wsps/protocol'
import { decodeClientFrame, decodeServerFrame, encodeClientFrame, encodeQuote, encodeServerFrame, quotesBytes } from '@wsps/protocol/proto-codec'
import { ClientFrameSchema, ServerFrameSchema } from '@wsps/protocol/gen/wsps.v1_pb'

/** @type {{client: Record<string, any>[], server: Record<string, any>[]}} */
const session = JSON.parse(readFileSync(new URL('./fixtures/session.json', import.meta.url), 'utf8'))

/** @param {unknown} frame */
const viaJson = (frame) => JSON.parse(JSON.stringify(frame))
/** @param {Record<string, any>} frame */
const viaProtoServer = (frame) => decodeServerFrame(encodeServerFrame(frame))
/** @param {Record<string, any>} frame */
const viaProtoClient = (frame) => decodeClientFrame(encodeClientFrame(frame))

test('the session names every op and every case of both envelopes', () => {
  const serverOps = new Set(session.server.map((f) => f.op))
  const clientOps = new Set(session.client.map((f) => f.op))
  assert.deepEqual([...serverOps].sort(), Object.values(ServerOp).sort())
  assert.deepEqual([...clientOps].sort(), Object.values(ClientOp).sort())
  // The .proto's envelopes have a case per op (unsub shares sub's message).
  const cases = (/** @type {any} */ schema) => schema.oneofs[0].fields.map((/** @type {any} */ f) => f.name).sort()
  assert.deepEqual(cases(ServerFrameSchema), Object.values(ServerOp).sort())
  assert.deepEqual(cases(ClientFrameSchema), Object.values(ClientOp).sort())
})

test('every server frame decodes the same from JSON and from Protobuf', () => {
  for (const frame of session.server) assert.deepStrictEqual(viaProtoServer(frame), viaJson(frame), JSON.stringify(frame))
})

test('every client frame decodes the same from JSON and from Protobuf', () => {
  for (const frame of session.client) assert.deepStrictEqual(viaProtoClient(frame), viaJson(frame), JSON.stringify(frame))
})

/**
 * Every leaf (a number, string or boolean, `op` aside) of a frame, as the
 * path of keys to it.
 *
 * @param {unknown} value
 * @param {(string | number)[]} [path]
 * @returns {(string | number)[][]}
 */
function leaves (value, path = []) {
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => (path.length === 0 && k === 'op' ? [] : leaves(v, [...path, Array.isArray(value) ? Number(k) : k])))
  }
  return [path]
}

/**
 * A copy of a frame with one leaf changed, to another value of its type.
 *
 * @param {Record<string, any>} frame
 * @param {(string | number)[]} path
 */
function mutate (frame, path) {
  const copy = viaJson(frame)
  let at = copy
  for (const k of path.slice(0, -1)) at = at[k]
  const k = /** @type {string | number} */ (path.at(-1))
  const v = at[k]
  at[k] = typeof v === 'number' ? v + 1 : typeof v === 'boolean' ? !v : `${v}X`
  return copy
}

test('changing any one field of any frame is seen through Protobuf', () => {
  let changed = 0
  for (const [frames, via] of /** @type {const} */ ([[session.server, viaProtoServer], [session.client, viaProtoClient]])) {
    for (const frame of frames) {
      for (const path of leaves(frame)) {
        const mutant = mutate(frame, path)
        assert.notDeepStrictEqual(via(mutant), viaJson(frame), `${frame.op} ${path.join('.')}`)
        assert.deepStrictEqual(via(mutant), viaJson(mutant), `${frame.op} ${path.join('.')}`)
        changed++
      }
    }
  }
  assert.ok(changed > 200, `${changed} fields changed`)
})

test('a key the binary encoding does not carry fails the comparison', () => {
  const frame = { op: 'q', quotes: [{ symbol: 'AAPL', seq: 2, ts: 1, bid: 1, spread: 0.1 }] }
  assert.notDeepStrictEqual(viaProtoServer(frame), viaJson(frame))
})

test('a q or snap joined from quotes encoded once is the frame encoded whole', () => {
  for (const frame of session.server.filter((f) => f.op === ServerOp.QUOTES || f.op === ServerOp.SNAP)) {
    const joined = quotesBytes(frame.op, frame.quotes.map(encodeQuote), frame.recovered === false)
    assert.deepStrictEqual(Buffer.from(joined), Buffer.from(encodeServerFrame(frame)), JSON.stringify(frame))
  }
})

test('a frame of a case this side does not know decodes with no op', () => {
  // Field 99, length-delimited, empty: a case a newer party added.
  assert.deepStrictEqual(decodeServerFrame(new Uint8Array([0x9a, 0x06, 0x00])), { op: undefined })
  assert.deepStrictEqual(decodeClientFrame(new Uint8Array([])), { op: undefined })
})

test('a value past 2^53 or a wrong type cannot stop the encoder', () => {
  const bytes = encodeServerFrame({ op: 'q', quotes: [{ symbol: 'AAPL', seq: 'soon', ts: 1 }] })
  assert.deepStrictEqual(decodeServerFrame(bytes), { op: 'q', quotes: [{ symbol: 'AAPL', seq: 0, ts: 1 }] })
  assert.throws(() => encodeServerFrame({ op: 'nope' }), TypeError)
})
