// Fan-out passes: batching, sharing, slow readers. Hub + Fanout + Connection (and its Outbox)
// over fake sockets; the wire view is checked with the protocol's own rules.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CloseCode, continues } from '@wsps/protocol'
import { diffQuotes } from '../src/delta.js'
import { DISTINCT, FULL_RATE } from '../src/delivery.js'
import { gatewayParts, limits, passStats, quote, tick } from './helper.js'
import { waitFor } from '@wsps/testkit'

/** A hub whose symbols are live with seq 1, and subscribed clients. */
async function live (symbols = ['AAPL', 'MSFT'], n = 1, batchMs = 1000) {
  const parts = gatewayParts({ batchMs })
  for (const s of symbols) parts.broker.latestValues.set(s, quote(1, {}, s))
  const clients = Array.from({ length: n }, () => parts.client())
  for (const { c } of clients) {
    c.subscribe(symbols)
    for (const s of symbols) parts.hub.add(s, c)
  }
  await tick(); await tick()
  for (const { ws } of clients) ws.sent.length = 0 // the initial snapshots
  return { ...parts, clients }
}

/** Replays frames onto held quotes by the receiver rules; returns problems. */
function replay (/** @type {any[]} */ frames, /** @type {Map<string, any>} */ held) {
  const problems = []
  for (const f of frames) {
    for (const q of f.quotes ?? []) {
      if (f.op === 'snap') held.set(q.symbol, { ...q })
      else if (!continues(q, held.get(q.symbol)?.seq)) problems.push(`${q.symbol} ${q.seq} base ${q.base}`)
      else Object.assign(held.get(q.symbol), q)
    }
  }
  return problems
}

/** What a receiver holds after replaying frames that must all continue each other. */
function heldAfter (/** @type {any[]} */ frames) {
  /** @type {Map<string, any>} */
  const held = new Map()
  assert.deepEqual(replay(frames, held), [])
  return held
}

test('updates of several symbols within one window reach a reader as one frame', async () => {
  const { hub, clients: [a], pass } = await live()
  hub.onQuote('AAPL', quote(2, { bid: 1.1 }, 'AAPL'))
  hub.onQuote('MSFT', quote(2, { bid: 2.2 }, 'MSFT'))
  pass()
  assert.equal(a.ws.sent.length, 1)
  assert.deepEqual(a.ws.sent[0].quotes.map((/** @type {any} */ q) => q.symbol), ['AAPL', 'MSFT'])
})

test('several quotes of a symbol within one window merge into one delta naming its base', async () => {
  const { hub, clients: [a], pass } = await live(['AAPL'])
  hub.onQuote('AAPL', quote(2, { bid: 1.1 }, 'AAPL'))
  hub.onQuote('AAPL', quote(3, { bid: 1.1, ask: 2.2 }, 'AAPL'))
  pass()
  const [frame] = a.ws.sent
  assert.deepEqual(frame.quotes, [{ symbol: 'AAPL', seq: 3, ts: frame.quotes[0].ts, bid: 1.1, ask: 2.2, base: 1 }])
})

test('every subscriber of an update gets the same frame buffer', async () => {
  const { hub, clients, pass } = await live(['AAPL'], 3)
  /** @type {unknown[]} */
  const raw = []
  for (const { ws } of clients) ws.write = (/** @type {any} */ d) => { raw.push(d); return d.length }
  hub.onQuote('AAPL', quote(2, { bid: 1.1 }, 'AAPL'))
  pass()
  assert.equal(raw.length, 3)
  assert.ok(raw[0] === raw[1] && raw[1] === raw[2], 'serialized once, one frame')
})

test('a slow reader is skipped, then resynced with the latest quote as a snapshot', async () => {
  const { hub, clients: [a, b], pass, metrics } = await live(['AAPL', 'MSFT'], 2)
  a.ws.bufferedAmount = limits.sendHighWater + 1
  for (let seq = 2; seq <= 5; seq++) {
    hub.onQuote('AAPL', quote(seq, { bid: seq }, 'AAPL'))
    pass()
  }
  assert.equal(a.ws.sent.length, 0, 'nothing written while over the high-water mark')
  assert.equal(b.ws.sent.length, 4, 'the other reader is not held back')
  assert.equal((await metrics.registry.getSingleMetric('wsps_gateway_slow_clients')?.get())?.values[0].value, 1)

  a.ws.bufferedAmount = 0
  hub.onQuote('MSFT', quote(2, { bid: 9 }, 'MSFT'))
  pass()
  assert.deepEqual(a.ws.sent.map((f) => f.op), ['snap', 'q'])
  assert.deepEqual(a.ws.sent[0].quotes.map((/** @type {any} */ q) => [q.symbol, q.seq]), [['AAPL', 5]])
  hub.onQuote('AAPL', quote(6, { bid: 6 }, 'AAPL'))
  pass()
  /** @type {Map<string, any>} */
  const held = new Map([['AAPL', { seq: 1 }], ['MSFT', { seq: 1 }]])
  assert.deepEqual(replay(a.ws.sent, held), [], 'the stream continues the snapshot')
  assert.equal(held.get('AAPL').bid, 6)
  assert.equal((await metrics.registry.getSingleMetric('wsps_gateway_conflated_total')?.get())?.values[0].value, 4)
})

test('a reader slow for longer than slowCloseMs is closed with 4008', async () => {
  const { hub, clients: [a], pass } = await live(['AAPL'])
  a.ws.bufferedAmount = limits.sendHighWater + 1
  hub.onQuote('AAPL', quote(2, {}, 'AAPL'))
  pass()
  await new Promise((resolve) => setTimeout(resolve, limits.slowCloseMs + 20))
  pass()
  assert.equal(a.ws.closedWith?.code, CloseCode.SLOW_CONSUMER)
})

test('a send buffer at the hard cap closes with 4008 at once', async () => {
  const { hub, clients: [a], pass } = await live(['AAPL'])
  a.ws.bufferedAmount = limits.sendMax
  hub.onQuote('AAPL', quote(2, {}, 'AAPL'))
  pass()
  assert.equal(a.ws.closedWith?.code, CloseCode.SLOW_CONSUMER)
})

test('an unsubscribed symbol queued in this window is not sent', async () => {
  const { clients: [a] } = await live()
  const stats = passStats()
  // Queued without writing, as by a pass that was interrupted mid-way.
  const held = { seq: 1, ts: 0, bid: 1 }
  assert.equal(a.c.push(diffQuotes({ symbol: 'AAPL', ...held }, { symbol: 'AAPL', ...held, seq: 2, bid: 2 }), stats), true, 'first update queues the outbox')
  assert.equal(a.c.push(diffQuotes({ symbol: 'MSFT', ...held }, { symbol: 'MSFT', ...held, seq: 2, bid: 2 }), stats), false, 'queued once')
  a.c.unsubscribe(['AAPL'], () => {})
  assert.equal(a.c.flush(Date.now(), 99, stats), false)
  assert.deepEqual(a.ws.sent[0].quotes.map((/** @type {any} */ q) => q.symbol), ['MSFT'])
  assert.deepEqual(a.c.subscriptions.symbols, ['MSFT'])
})

test('a reader joining between a quote and the next pass gets a snapshot the pending update continues', async () => {
  const { hub, client, pass } = await live(['AAPL'])
  hub.onQuote('AAPL', quote(2, { bid: 2 }, 'AAPL'))
  hub.onQuote('AAPL', quote(3, { bid: 3 }, 'AAPL'))
  const late = client()
  const raw = /** @type {string} */ (hub.add('AAPL', late.c))
  late.ws.sent.push({ op: 'snap', quotes: [JSON.parse(raw)] })
  hub.onQuote('AAPL', quote(4, { bid: 4 }, 'AAPL'))
  pass()
  hub.onQuote('AAPL', quote(5, { bid: 5 }, 'AAPL'))
  pass()
  const held = heldAfter(late.ws.sent)
  assert.deepEqual([held.get('AAPL').seq, held.get('AAPL').bid], [5, 5])
})

test('a reader returning to a symbol nobody watched for a while starts from the latest quote', async () => {
  const { hub, clients: [a], client, pass } = await live(['AAPL'])
  hub.remove('AAPL', a.c)
  hub.onQuote('AAPL', quote(2, { bid: 2 }, 'AAPL'))
  pass()
  const b = client()
  const raw = /** @type {string} */ (hub.add('AAPL', b.c))
  b.ws.sent.push({ op: 'snap', quotes: [JSON.parse(raw)] })
  hub.onQuote('AAPL', quote(3, { bid: 3 }, 'AAPL'))
  pass()
  assert.equal(heldAfter(b.ws.sent).get('AAPL').seq, 3)
})

/**
 * A new client subscribed to symbols with a delivery, as Sessions does it.
 * @param {ReturnType<typeof gatewayParts>} parts
 * @param {string[]} symbols
 * @param {number} delivery
 */
function subscribed (parts, symbols, delivery) {
  const client = parts.client()
  client.c.subscribe(symbols, delivery)
  for (const s of symbols) {
    const raw = parts.hub.add(s, client.c, delivery)
    if (raw !== null) client.ws.sent.push({ op: 'snap', quotes: [JSON.parse(raw)] })
  }
  return client
}

test('distinct mode: every tick of a window, in seq order and without base; merge readers get one merged delta', async () => {
  const parts = await live(['AAPL'])
  const { hub, clients: [m], pass } = parts
  const d = subscribed(parts, ['AAPL'], DISTINCT)
  for (let seq = 2; seq <= 6; seq++) hub.onQuote('AAPL', quote(seq, { bid: seq }, 'AAPL'))
  pass()
  const q = d.ws.sent.filter((f) => f.op === 'q')
  assert.equal(q.length, 1, 'ticks of one pass share a frame')
  assert.deepEqual(q[0].quotes.map((/** @type {any} */ x) => [x.seq, x.base, x.bid]), [[2, undefined, 2], [3, undefined, 3], [4, undefined, 4], [5, undefined, 5], [6, undefined, 6]])
  assert.deepEqual(m.ws.sent[0].quotes.map((/** @type {any} */ x) => [x.seq, x.base]), [[6, 1]])
  assert.deepEqual(replay(d.ws.sent, new Map()), [])
})

test('distinct mode: a reader joining mid-window starts from a snapshot the ticks continue', async () => {
  const parts = await live(['AAPL'])
  const { hub, pass } = parts
  hub.onQuote('AAPL', quote(2, { bid: 2 }, 'AAPL'))
  const d = subscribed(parts, ['AAPL'], DISTINCT)
  hub.onQuote('AAPL', quote(3, { bid: 3 }, 'AAPL'))
  const e = subscribed(parts, ['AAPL'], DISTINCT)
  hub.onQuote('AAPL', quote(4, { bid: 4 }, 'AAPL'))
  pass()
  hub.onQuote('AAPL', quote(5, { bid: 5 }, 'AAPL'))
  pass()
  for (const r of [d, e]) assert.equal(heldAfter(r.ws.sent).get('AAPL').seq, 5)
})

test('distinct mode: a slow reader is not conflated; it is written until the send cap closes it with 4008', async () => {
  const parts = await live(['AAPL'])
  const { hub, pass, metrics } = parts
  const d = subscribed(parts, ['AAPL'], DISTINCT)
  d.ws.bufferedAmount = limits.sendHighWater + 1
  hub.onQuote('AAPL', quote(2, {}, 'AAPL'))
  hub.onQuote('AAPL', quote(3, {}, 'AAPL'))
  pass()
  assert.deepEqual(d.ws.sent.filter((f) => f.op === 'q').flatMap((f) => f.quotes.map((/** @type {any} */ x) => x.seq)), [2, 3])
  assert.equal((await metrics.registry.getSingleMetric('wsps_gateway_conflated_total')?.get())?.values[0]?.value ?? 0, 0)
  d.ws.bufferedAmount = limits.sendMax
  hub.onQuote('AAPL', quote(4, {}, 'AAPL'))
  pass()
  assert.equal(d.ws.closedWith?.code, CloseCode.SLOW_CONSUMER)
})

test('maxRate: updates between two deliveries merge into one, held back until the interval has passed', async () => {
  const parts = await live(['AAPL'])
  const { hub, pass } = parts
  const r = subscribed(parts, ['AAPL'], 20) // one update per 50 ms
  hub.onQuote('AAPL', quote(2, { bid: 2 }, 'AAPL'))
  await tick()
  pass()
  hub.onQuote('AAPL', quote(3, { bid: 3 }, 'AAPL'))
  hub.onQuote('AAPL', quote(4, { bid: 4 }, 'AAPL'))
  pass()
  const q = () => r.ws.sent.filter((f) => f.op === 'q').flatMap((f) => f.quotes.map((/** @type {any} */ x) => [x.seq, x.base]))
  assert.deepEqual(q(), [[2, undefined]], 'within the interval nothing more is written')
  await new Promise((resolve) => setTimeout(resolve, 80))
  pass()
  assert.deepEqual(q(), [[2, undefined], [4, 2]], 'then one delta merging what waited')
  assert.equal(heldAfter(r.ws.sent).get('AAPL').bid, 4)
})

test('maxRate: a reader joining a lane gets the lane\'s state, which its next update continues', async () => {
  const parts = await live(['AAPL'])
  const { hub, pass } = parts
  const a = subscribed(parts, ['AAPL'], 20)
  hub.onQuote('AAPL', quote(2, { bid: 2 }, 'AAPL'))
  pass()
  hub.onQuote('AAPL', quote(3, { bid: 3 }, 'AAPL'))
  const b = subscribed(parts, ['AAPL'], 20)
  await new Promise((resolve) => setTimeout(resolve, 80))
  pass()
  for (const r of [a, b]) assert.equal(heldAfter(r.ws.sent).get('AAPL').seq, 3)
})

test('a held symbol moved to another delivery gets a fresh snapshot and then that delivery only', async () => {
  const parts = await live(['AAPL'])
  const { hub, clients: [a], pass } = parts
  hub.onQuote('AAPL', quote(2, { bid: 2 }, 'AAPL'))
  hub.remove('AAPL', a.c, FULL_RATE)
  a.c.redeliver('AAPL', DISTINCT)
  a.ws.sent.push({ op: 'snap', quotes: [JSON.parse(/** @type {string} */ (hub.add('AAPL', a.c, DISTINCT)))] })
  hub.onQuote('AAPL', quote(3, { bid: 3 }, 'AAPL'))
  hub.onQuote('AAPL', quote(4, { bid: 4 }, 'AAPL'))
  pass()
  assert.equal(a.c.subscriptions.deliveryOf('AAPL'), DISTINCT)
  assert.deepEqual(replay(a.ws.sent, new Map()), [])
  assert.deepEqual(a.ws.sent.filter((f) => f.op === 'q').flatMap((f) => f.quotes.map((/** @type {any} */ x) => x.seq)), [3, 4])
})

test('one-pass freshness: a quote arriving while a pass is written reaches the connections not yet written in the same write, and the others in the pass right after', async () => {
  const n = 1100 // more than two chunks of 512
  const { hub, clients, pass } = await live(['AAPL'], n, 0)
  hub.onQuote('AAPL', quote(2, { bid: 2 }, 'AAPL'))
  pass() // writes the first chunk now, the rest on later event-loop turns
  const written = clients.filter((c) => c.ws.sent.length > 0).length
  assert.ok(written > 0 && written < n, `${written} of ${n} written in the first chunk`)
  hub.onQuote('AAPL', quote(3, { bid: 3 }, 'AAPL'))
  for (let i = 0; i < 10; i++) await tick()
  const seqs = (/** @type {any} */ c) => c.ws.sent.flatMap((/** @type {any} */ f) => f.quotes.map((/** @type {any} */ q) => q.seq))
  const last = clients[n - 1]
  assert.equal(last.ws.sent.length, 1, 'a connection not yet written gets both in one write')
  assert.deepEqual(seqs(last), [2, 3])
  assert.deepEqual(seqs(clients[0]), [2, 3], 'a connection written before it arrived gets it in the next pass')
  for (const c of clients) assert.deepEqual(replay(c.ws.sent, new Map([['AAPL', { seq: 1 }]])), [])
})

test('under a load that keeps every connection busy, passes still end: a pass never outgrows the connections it started with', async () => {
  // Before, what arrived during a pass re-queued the connections already
  // written at the end of the same pass: with a quote before every chunk
  // the pass never ended, and its connection list and latency samples (each
  // holding an update and its frame) grew for as long as the load lasted.
  const n = 1100 // three chunks of 512
  const { hub, clients, pass, metrics } = await live(['AAPL'], n, 0)
  let seq = 2
  hub.onQuote('AAPL', quote(seq++, { bid: 2 }, 'AAPL'))
  pass()
  for (let i = 0; i < 24; i++) {
    hub.onQuote('AAPL', quote(seq++, { bid: 2 + i / 100 }, 'AAPL'))
    await tick()
  }
  const samples = async () => (await metrics.publishToSend.get()).values.find((v) => v.metricName === 'wsps_gateway_publish_to_send_seconds_count')?.value ?? 0
  const during = await samples()
  assert.ok(during >= 4, `passes ended while the load went on (a pass samples when it ends): ${during} samples`)
  for (let i = 0; i < 12; i++) await tick()
  for (const c of clients) {
    const held = new Map([['AAPL', { seq: 1 }]])
    assert.deepEqual(replay(c.ws.sent, held), [])
    assert.equal(held.get('AAPL')?.seq, seq - 1, 'every connection ends on the last quote')
  }
})

test('a pass takes one latency sample per update, at its last subscriber\'s write: the worst case, not the first chunk\'s', async () => {
  // 600 subscribers: two chunks of one pass (512 per chunk); the last
  // socket's write takes 30 ms, so the second chunk ends that much later.
  const { hub, clients, pass, metrics } = await live(['AAPL'], 600)
  const slow = clients[599].ws
  const write = slow.write.bind(slow)
  slow.write = (frame, op) => { const end = Date.now() + 30; while (Date.now() < end); return write(frame, op) }
  hub.onQuote('AAPL', quote(2, { bid: 1.1 }, 'AAPL'))
  pass()
  await waitFor(() => slow.sent.length === 1, { message: 'the second chunk' })
  await tick()
  const { values } = await metrics.publishToSend.get()
  const count = values.find((v) => v.metricName === 'wsps_gateway_publish_to_send_seconds_count')?.value
  const under25 = values.find((v) => v.labels.le === 0.025)?.value
  assert.equal(count, 1, 'one sample for the update, though two chunks wrote it')
  assert.equal(under25, 0, 'the sample is at the second chunk, 30 ms later: not under 25 ms')
})
