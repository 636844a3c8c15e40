// The fan-out to readers of both encodings: a JSON reader and a Protobuf
// reader (`wsps.v1.proto`) of the same symbols read the same frames, and
// quote frames reach Protobuf readers built in Protobuf once per update
// (shared), not re-encoded from JSON per reader.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { gatewayParts, limits, quote, tick } from './helper.js'

/** A hub whose symbols are live with seq 1, a JSON reader and `n` binary ones. */
async function live (symbols = ['AAPL', 'MSFT'], n = 1) {
  const parts = gatewayParts()
  for (const s of symbols) parts.broker.latestValues.set(s, quote(1, { volume: 1000.5 }, s))
  const json = parts.client()
  const binary = Array.from({ length: n }, () => parts.client({ binary: true }))
  for (const { c } of [json, ...binary]) {
    c.subscribe(symbols)
    for (const s of symbols) parts.hub.add(s, c)
  }
  await tick(); await tick()
  return { ...parts, json, binary }
}

test('a JSON and a Protobuf reader read the same frames: snapshots, single updates, batches, merges, catch-up', async () => {
  const { hub, json, binary: [b], pass } = await live()
  assert.ok(json.ws.sent.length > 0, 'the initial snapshots came')
  // One update: the frame every subscriber shares.
  hub.onQuote('AAPL', quote(2, { bid: 1.1 }, 'AAPL'))
  pass()
  // Two symbols in one window: each reader's own batch.
  hub.onQuote('AAPL', quote(3, { bid: 1.2, last: 0.30000000000000004 }, 'AAPL'))
  hub.onQuote('MSFT', quote(2, { ask: 2.5 }, 'MSFT'))
  pass()
  // Two ticks of one symbol in one window: one delta naming its base.
  hub.onQuote('AAPL', quote(4, { bid: 1.3 }, 'AAPL'))
  hub.onQuote('AAPL', quote(5, { bid: 1.3, ask: 9 }, 'AAPL'))
  pass()
  // Both slow, then caught up with a snapshot of what they skipped.
  json.ws.bufferedAmount = b.ws.bufferedAmount = limits.sendHighWater + 1
  hub.onQuote('MSFT', quote(3, { ask: 2.6 }, 'MSFT'))
  pass()
  json.ws.bufferedAmount = b.ws.bufferedAmount = 0
  hub.onQuote('AAPL', quote(6, { bid: 1.4 }, 'AAPL'))
  pass()
  assert.deepEqual(json.ws.sent.map((f) => f.op), ['snap', 'snap', 'q', 'q', 'q', 'snap', 'q'])
  assert.deepStrictEqual(b.ws.sent, json.ws.sent)
  assert.ok(json.ws.kinds.every((k) => k === 'text'))
  // Quote frames are built in Protobuf; the snapshots are twins of shared text frames.
  assert.deepEqual(b.ws.kinds.filter((_k, i) => b.ws.sent[i].op === 'q'), ['binary', 'binary', 'binary', 'binary'])
})

test('Protobuf readers of an update share one binary frame, and JSON readers one text frame', async () => {
  const { hub, json, binary, pass } = await live(['AAPL'], 3)
  /** @type {any[]} */
  const raw = []
  for (const { ws } of [json, ...binary]) ws.write = (/** @type {any} */ d) => { raw.push(d); return d.length }
  hub.onQuote('AAPL', quote(2, { bid: 1.1 }, 'AAPL'))
  pass()
  assert.equal(raw.length, 4)
  const [text, ...bin] = raw
  assert.equal(text.binary, false)
  assert.ok(bin.every((f) => f === bin[0] && f.binary), 'encoded once, one frame for every binary reader')
  // A binary frame goes on the wire as a binary message (opcode 2).
  assert.equal(bin[0].wire[0], 0x82)
  assert.equal(text.wire[0], 0x81)
})

test('a Protobuf reader gets its own replies encoded: ack, error, pong as on JSON', () => {
  const { client } = gatewayParts()
  const json = client()
  const b = client({ binary: true })
  for (const { c } of [json, b]) {
    c.send('{"op":"ack","id":1,"symbols":["AAPL"],"recovered":{"AAPL":true}}', 'ack')
    c.send('{"op":"error","code":"BAD_SYMBOL","message":"bad","symbols":["aapl"]}', 'error')
    c.send('{"op":"pong","id":"p"}', 'pong')
  }
  assert.deepStrictEqual(b.ws.sent, json.ws.sent)
  assert.deepEqual(b.ws.kinds, ['encoded', 'encoded', 'encoded'])
})
