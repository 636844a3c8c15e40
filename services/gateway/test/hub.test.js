import assert from 'node:assert/strict'
import { test } from 'node:test'
import { RECEIVE_LAG_SAMPLE } from '../src/metrics.js'
import { gatewayParts as setup, quote, tick } from './helper.js'

test('one channel per symbol however many local subscribers, dropped after the last leaves', async (t) => {
  const { broker, hub, client } = setup({ unsubscribeDelayMs: 20 })
  hub.start()
  t.after(() => hub.stop())
  const a = client()
  const b = client()
  hub.add('AAPL', a.c)
  hub.add('AAPL', b.c)
  await tick()
  assert.deepEqual([...broker.channels], ['AAPL'])
  assert.equal(broker.calls.filter((c) => c[0] === 'subscribe').length, 1)
  hub.remove('AAPL', a.c)
  await new Promise((resolve) => setTimeout(resolve, 60))
  assert.deepEqual([...broker.channels], ['AAPL'], 'still one local subscriber')
  hub.remove('AAPL', b.c)
  await new Promise((resolve) => setTimeout(resolve, 60))
  assert.deepEqual([...broker.channels], [])
  assert.equal(hub.symbolCount, 0)
})

test('a subscriber returning within the unsubscribe delay keeps the channel', async (t) => {
  const { broker, hub, client } = setup({ unsubscribeDelayMs: 200 })
  hub.start()
  t.after(() => hub.stop())
  const a = client()
  hub.add('MSFT', a.c)
  await tick()
  hub.remove('MSFT', a.c)
  hub.add('MSFT', a.c)
  await new Promise((resolve) => setTimeout(resolve, 250))
  assert.deepEqual(broker.calls.filter((c) => c[0] !== 'demand').map((c) => c[0]), ['subscribe'])
})

test('a new symbol goes live with the stored latest quote as snapshot, then deltas', async () => {
  const { broker, hub, client, pass } = setup()
  broker.latestValues.set('AAPL', quote(5))
  const a = client()
  assert.equal(hub.add('AAPL', a.c), null, 'not live yet')
  await tick(); await tick()
  assert.equal(a.ws.sent[0].op, 'snap')
  assert.equal(a.ws.sent[0].quotes[0].seq, 5)
  hub.onQuote('AAPL', quote(6, { bid: 1.1 }))
  pass()
  assert.deepEqual(a.ws.sent[1].quotes, [{ symbol: 'AAPL', seq: 6, ts: a.ws.sent[1].quotes[0].ts, bid: 1.1 }])
  // A later subscriber gets the held quote at once.
  const b = client()
  assert.equal(JSON.parse(/** @type {string} */ (hub.add('AAPL', b.c))).seq, 6)
})

test('quotes arriving while pending are held, stale ones dropped', async () => {
  const { broker, hub, client } = setup()
  broker.latestValues.set('AAPL', quote(5))
  const a = client()
  hub.add('AAPL', a.c)
  hub.onQuote('AAPL', quote(6))
  await tick(); await tick()
  assert.equal(a.ws.sent.length, 1)
  assert.equal(a.ws.sent[0].quotes[0].seq, 6, 'snapshot is the newer of stored and received')
  hub.onQuote('AAPL', quote(6))
  hub.onQuote('AAPL', quote(4))
  await tick()
  assert.equal(a.ws.sent.length, 1, 'duplicates and old quotes are not sent')
})

test('a symbol with no stored quote sends its first quote as a snapshot', async () => {
  const { hub, client } = setup()
  const a = client()
  hub.add('NEW', a.c)
  await tick(); await tick()
  assert.equal(a.ws.sent.length, 0)
  hub.onQuote('NEW', quote(1, {}, 'NEW'))
  assert.equal(a.ws.sent[0].op, 'snap')
})

/**
 * A hub with one client live on AAPL, from a stored quote of `seq`.
 * @param {number} seq
 */
async function liveOnAapl (seq) {
  const parts = setup()
  parts.broker.latestValues.set('AAPL', quote(seq))
  const a = parts.client()
  parts.hub.add('AAPL', a.c)
  await tick(); await tick()
  return { ...parts, a }
}

test('resync resubscribes everything and sends fresh snapshots; readiness waits for it', async () => {
  const { broker, hub, a } = await liveOnAapl(5)
  broker.channels.clear()
  broker.latestValues.set('AAPL', quote(9))
  hub.resync()
  assert.equal(hub.synced(), false)
  await tick(); await tick()
  assert.equal(hub.synced(), true)
  assert.deepEqual([...broker.channels], ['AAPL'])
  const last = a.ws.sent[a.ws.sent.length - 1]
  assert.equal(last.op, 'snap')
  assert.equal(last.quotes[0].seq, 9)
})

test('resync accepts a rewound seq from a Redis that restarted empty', async () => {
  const { broker, hub, a } = await liveOnAapl(50)
  broker.latestValues.delete('AAPL')
  hub.resync()
  await tick(); await tick()
  hub.onQuote('AAPL', quote(1))
  const last = a.ws.sent[a.ws.sent.length - 1]
  assert.equal(last.op, 'snap')
  assert.equal(last.quotes[0].seq, 1)
})

test('the receive lag samples one real-time quote in RECEIVE_LAG_SAMPLE, at its age on arrival', async () => {
  const { broker, hub, client, metrics } = setup()
  broker.latestValues.set('AAPL', quote(1))
  hub.add('AAPL', client().c)
  await tick(); await tick()
  const lag = /** @type {import('prom-client').Histogram} */ (metrics.receiveLag)
  const count = async () => (await lag.get()).values.find((v) => v.metricName === 'wsps_gateway_receive_lag_seconds_count')?.value ?? 0
  const under = async (/** @type {number} */ le) => (await lag.get()).values.find((v) => v.labels.le === le)?.value ?? 0
  // Quotes 40 ms old on arrival: two samples in 2 × RECEIVE_LAG_SAMPLE of them.
  for (let seq = 2; seq < 2 + 2 * RECEIVE_LAG_SAMPLE; seq++) hub.onQuote('AAPL', quote(seq, { ts: Date.now() - 40 }))
  assert.equal(await count(), 2)
  assert.equal(await under(0.03), 0, 'both samples are 40 ms old: none under 30 ms')
  assert.equal(await under(0.05), 2)
  // A quote for a symbol nobody here holds is not read, so not sampled.
  for (let seq = 1; seq <= RECEIVE_LAG_SAMPLE; seq++) hub.onQuote('MSFT', quote(seq, {}, 'MSFT'))
  assert.equal(await count(), 2)
})

test('a feed interrupted and then resumed where it stopped (the delayed pumps): told stale after the grace, fresh after the next pass, without a resync', async () => {
  const { broker, hub, client, pass } = setup()
  broker.latestValues.set('AAPL', quote(5))
  const a = client()
  hub.add('AAPL', a.c)
  await tick(); await tick()
  const subscribes = broker.calls.filter((c) => c[0] === 'subscribe').length
  hub.interrupted(['AAPL'], 1234, true)
  assert.deepEqual(a.ws.sent.at(-1), { op: 'stale', symbols: ['AAPL'], since: 1234 })
  hub.resumed(['AAPL', 'MSFT'])
  assert.equal(a.ws.sent.at(-1).op, 'stale', 'fresh waits for the pass that writes what the feed takes in')
  hub.onQuote('AAPL', quote(6))
  pass()
  assert.deepEqual(a.ws.sent.at(-1), { op: 'fresh', symbols: ['AAPL'] })
  assert.equal(broker.calls.filter((c) => c[0] === 'subscribe').length, subscribes, 'no resync')
  hub.resumed(['AAPL'])
  pass()
  assert.equal(a.ws.sent.filter((f) => f.op === 'fresh').length, 1, 'told fresh once')
})

test('summary(): the most watched symbols first, at most max; the symbols told stale, oldest first', async (t) => {
  const { hub, client } = setup()
  hub.start()
  t.after(() => hub.stop())
  const [a, b, c] = [client(), client(), client()]
  for (const x of [a, b, c]) hub.add('AAPL', x.c)
  for (const x of [a, b]) hub.add('MSFT', x.c)
  hub.add('IBM', a.c)
  await tick()
  assert.deepEqual(hub.summary(2).top, [{ symbol: 'AAPL', subscribers: 3 }, { symbol: 'MSFT', subscribers: 2 }])
  assert.deepEqual(hub.summary(5).stale, [])
  hub.interrupted(['MSFT'], 2000, true)
  hub.interrupted(['IBM'], 1000, true)
  await new Promise((resolve) => setTimeout(resolve, 400))
  const { stale, staleCount } = hub.summary(5)
  assert.deepEqual(stale, [{ symbol: 'IBM', since: 1000 }, { symbol: 'MSFT', since: 2000 }])
  assert.equal(staleCount, 2)
})
