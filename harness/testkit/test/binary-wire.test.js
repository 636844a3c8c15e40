// The binary encoding end to end (docs/protocol.md, Binary encoding): a
// real gateway process, a real fetcher and redis-server; a JSON client and a
// Protobuf client (`wsps.v1.proto`, Protobuf both ways) of the same symbols
// receive the same ticks, seq for seq, values identical; and the real JS
// client gives the same quote events in both encodings.

import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import WebSocket from 'ws'
import { WspsClient } from '@wsps/client'
import { ErrorCode } from '@wsps/protocol'
import { TestClient, setUp, useStack, waitFor } from '../src/index.js'

const SYMBOLS = ['BW1', 'BW2', 'BW3']
/** Ticks of each symbol both clients must have seen in common. */
const COMMON = 30

const stack = useStack()
const on = setUp(async () => {
  const fetcher = await stack.fetcher({ WSPS_FETCH_INTERVAL_MS: 50 })
  const gw = await stack.gateway()
  return { fetcher, gw }
})

/** @type {(() => void)[]} */
const closers = []
after(() => { for (const c of closers) c() })

/**
 * The quotes of `q` frames a client received, per symbol, in order.
 *
 * @param {TestClient} c
 * @returns {Map<string, any[]>}
 */
function deltas (c) {
  /** @type {Map<string, any[]>} */
  const by = new Map(SYMBOLS.map((s) => [s, []]))
  for (const f of c.frames) if (f.op === 'q') for (const q of f.quotes) by.get(q.symbol)?.push(q)
  return by
}

/**
 * The part of two lists of per-seq items both hold (by seq).
 *
 * @template {{seq: number}} T
 * @param {T[]} a
 * @param {T[]} b
 * @returns {[T[], T[]]}
 */
function overlap (a, b) {
  if (!a.length || !b.length) return [[], []]
  const from = Math.max(a[0].seq, b[0].seq)
  const to = Math.min(/** @type {T} */ (a.at(-1)).seq, /** @type {T} */ (b.at(-1)).seq)
  const within = (/** @type {T} */ x) => x.seq >= from && x.seq <= to
  return [a.filter(within), b.filter(within)]
}

test('a JSON and a Protobuf client receive the same ticks, seq for seq, values identical', async () => {
  const json = await TestClient.connect(on.gw.wsUrl)
  const proto = await TestClient.connect(on.gw.wsUrl, {}, { binary: true })
  closers.push(() => json.ws.terminate(), () => proto.ws.terminate())
  assert.equal(proto.ws.protocol, 'wsps.v1.proto')
  assert.equal(json.ws.protocol, '')
  for (const c of [json, proto]) {
    c.subscribed = new Set(SYMBOLS)
    c.send({ op: 'sub', symbols: SYMBOLS, mode: 'distinct', id: 1 })
    assert.deepEqual((await c.next((f) => f.op === 'ack')).symbols.sort(), SYMBOLS)
  }
  await waitFor(() => SYMBOLS.every((s) => overlap(/** @type {any[]} */ (deltas(json).get(s)), /** @type {any[]} */ (deltas(proto).get(s)))[0].length >= COMMON),
    { timeout: 20_000, message: `${COMMON} ticks of each symbol in common` })
  for (const s of SYMBOLS) {
    const [a, b] = overlap(/** @type {any[]} */ (deltas(json).get(s)), /** @type {any[]} */ (deltas(proto).get(s)))
    assert.deepStrictEqual(b, a, s)
    assert.deepEqual(b.map((q) => q.seq), Array.from({ length: b.length }, (_, i) => b[0].seq + i), `${s}: every tick, in order`)
    assert.ok(b.some((q) => typeof q.bid === 'number' && !Number.isInteger(q.bid)), `${s}: prices came through as numbers`)
  }
  assert.deepEqual([json.problems, proto.problems], [[], []])
  assert.ok(proto.kinds.every((k) => k === 'binary') && json.kinds.every((k) => k === 'text'))
  // A request the gateway refuses is refused with the same code either way.
  for (const c of [json, proto]) c.send({ op: 'sub', symbols: ['bad symbol'], id: 9 })
  const refusals = await Promise.all([json, proto].map((c) => c.next((f) => f.op === 'error' && f.id === 9)))
  assert.deepStrictEqual(refusals[1], refusals[0])
  assert.equal(refusals[0].code, ErrorCode.BAD_SYMBOL)
  // Bytes that are no ClientFrame: a coded error, and the connection stays.
  proto.ws.send(Buffer.from([0xff, 0xff, 0xff]))
  assert.equal((await proto.next((f) => f.op === 'error' && f.code === ErrorCode.BAD_FRAME)).code, ErrorCode.BAD_FRAME)
  proto.send({ op: 'ping', id: 'still-here' })
  await proto.next((f) => f.op === 'pong' && f.id === 'still-here')
})

/**
 * A `ws` WebSocket that counts its messages by kind, the subprotocols asked
 * passed on (the client's own handler is `onmessage`).
 *
 * @param {{text: number, binary: number}} counts
 */
function countingWebSocket (counts) {
  return class extends WebSocket {
    /** @param {string} url @param {string[]} [protocols] */
    constructor (url, protocols) {
      super(url, protocols)
      this.on('message', (_data, isBinary) => { counts[isBinary ? 'binary' : 'text']++ })
    }
  }
}

test('the JS client gives the same quote events over Protobuf (its default) and JSON (encoding: json)', async () => {
  /** @type {Record<string, {counts: {text: number, binary: number}, quotes: Map<string, any[]>}>} */
  const seen = {}
  for (const encoding of /** @type {const} */ (['auto', 'json'])) {
    const counts = { text: 0, binary: 0 }
    /** @type {Map<string, any[]>} */
    const quotes = new Map(SYMBOLS.map((s) => [s, []]))
    const client = new WspsClient({ url: on.gw.wsUrl, encoding, WebSocket: countingWebSocket(counts), symbols: [] })
    closers.push(() => client.close())
    client.on('quote', (e) => { if (!e.snapshot) quotes.get(e.symbol)?.push(structuredClone(e.quote)) })
    client.connect()
    const r = await client.subscribe(SYMBOLS, { mode: 'distinct' })
    assert.ok(r.ok)
    seen[encoding] = { counts, quotes }
  }
  const { auto, json } = seen
  await waitFor(() => SYMBOLS.every((s) => overlap(/** @type {any[]} */ (auto.quotes.get(s)), /** @type {any[]} */ (json.quotes.get(s)))[0].length >= COMMON),
    { timeout: 20_000, message: `${COMMON} quote events of each symbol in common` })
  for (const s of SYMBOLS) {
    const [a, b] = overlap(/** @type {any[]} */ (json.quotes.get(s)), /** @type {any[]} */ (auto.quotes.get(s)))
    assert.deepStrictEqual(b, a, s)
  }
  assert.equal(auto.counts.text, 0, 'the default client speaks Protobuf with a gateway that does')
  assert.ok(auto.counts.binary > COMMON)
  assert.equal(json.counts.binary, 0, 'encoding json: text only')
})
