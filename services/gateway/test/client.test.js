import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CloseCode } from '../public/protocol.js'
import { Client } from '../src/client.js'
import { diffQuotes } from '../src/delta.js'
import { context, fakeSocket, limits } from './helper.js'

const q = (/** @type {string} */ symbol, /** @type {number} */ seq, /** @type {number} */ bid) => ({ symbol, seq, ts: Date.now(), bid, ask: 100, last: 50 })
const update = (/** @type {string} */ symbol, /** @type {number} */ seq, /** @type {number} */ bid) => diffQuotes(q(symbol, seq - 1, bid - 1), q(symbol, seq, bid))

function setup () {
  const ctx = context()
  const ws = fakeSocket()
  const client = new Client(/** @type {any} */ (ws), ctx, { id: 1, ip: '', grants: null })
  return { ctx, ws, client }
}

test('updates within one window go out as one frame', () => {
  const { ctx, ws, client } = setup()
  client.enqueue(update('AAPL', 2, 10))
  client.enqueue(update('MSFT', 7, 20))
  ctx.fanout.flush()
  assert.equal(ws.sent.length, 1)
  assert.deepEqual(ws.sent[0].quotes.map((/** @type {any} */ x) => x.symbol), ['AAPL', 'MSFT'])
})

test('subscribers of the same single update share one frame buffer', () => {
  const ctx = context()
  const u = update('AAPL', 2, 10)
  const frames = []
  for (let i = 0; i < 3; i++) {
    const ws = fakeSocket()
    ws.send = (/** @type {any} */ data) => frames.push(data)
    new Client(/** @type {any} */ (ws), ctx, { id: i, ip: '', grants: null }).enqueue(u)
  }
  ctx.fanout.flush()
  assert.equal(frames.length, 3)
  assert.ok(frames[0] === frames[1] && frames[1] === frames[2], 'same Buffer, serialized once')
})

test('a slow reader gets conflated updates: the latest per symbol, with base', () => {
  const { ctx, ws, client } = setup()
  ws.bufferedAmount = limits.sendHighWater + 1
  client.enqueue(update('AAPL', 2, 10))
  ctx.fanout.flush()
  client.enqueue(update('AAPL', 3, 11))
  client.enqueue(update('AAPL', 4, 12))
  ctx.fanout.flush()
  assert.equal(ws.sent.length, 0, 'nothing written while over the high-water mark')
  ws.bufferedAmount = 0
  ctx.fanout.flush()
  assert.equal(ws.sent.length, 1)
  assert.deepEqual(ws.sent[0].quotes, [{ symbol: 'AAPL', seq: 4, ts: ws.sent[0].quotes[0].ts, bid: 12, base: 1 }])
})

test('a reader slow for longer than slowCloseMs is closed with 4008', async () => {
  const { ctx, ws, client } = setup()
  ws.bufferedAmount = limits.sendHighWater + 1
  client.enqueue(update('AAPL', 2, 10))
  ctx.fanout.flush()
  await new Promise((resolve) => setTimeout(resolve, limits.slowCloseMs + 20))
  ctx.fanout.flush()
  assert.equal(ws.closedWith?.code, CloseCode.SLOW_CONSUMER)
})

test('a send buffer at the hard cap closes with 4008 at once', () => {
  const { ctx, ws, client } = setup()
  ws.bufferedAmount = limits.sendMax
  client.enqueue(update('AAPL', 2, 10))
  ctx.fanout.flush()
  assert.equal(ws.closedWith?.code, CloseCode.SLOW_CONSUMER)
})

test('a snapshot drops pending deltas of its symbols', () => {
  const { ctx, ws, client } = setup()
  client.enqueue(update('AAPL', 2, 10))
  client.enqueue(update('MSFT', 2, 10))
  client.sendSnap(['AAPL'], JSON.stringify({ op: 'snap', quotes: [q('AAPL', 9, 1)] }))
  ctx.fanout.flush()
  assert.equal(ws.sent[0].op, 'snap')
  assert.deepEqual(ws.sent[1].quotes.map((/** @type {any} */ x) => x.symbol), ['MSFT'])
})
