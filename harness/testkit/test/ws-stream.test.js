// The ws-stream provider on real processes: a fake streaming vendor
// (fake-vendor.js, its own process), redis-server, two ws-stream fetchers, a
// gateway and WebSocket clients.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { ALPACA_STREAM_ENV, ClientPool, startFakeVendor, startFetcher, startGateway, startRedis, waitFor } from '../src/index.js'

// The Alpaca-style mapping and templates of docs/feeding.md.
const STREAM = ALPACA_STREAM_ENV
/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis
/** @type {Awaited<ReturnType<typeof startFakeVendor>>} */
let vendor
/** @type {import('../src/index.js').ServiceHandle} */
let gateway
/** @type {import('../src/index.js').ServiceHandle[]} */
let fetchers = []
/** @type {Redis} */
let r
const keys = redisKeys('wsps')
const clients = new ClientPool()
const connect = () => clients.connect(gateway.wsUrl)

before(async () => {
  redis = await startRedis()
  r = new Redis(redis.url)
  vendor = await startFakeVendor({ key: 'vendor-key' })
  gateway = await startGateway(redis.url, { WSPS_DEMAND_LEASE_MS: 1500, WSPS_UNSUBSCRIBE_DELAY_MS: 100 })
  // Default lease and tick (3000 + 1000 ms): the takeover test measures them.
  for (let i = 0; i < 2; i++) fetchers.push(await startFetcher(redis.url, { ...STREAM, WSPS_STREAM_URL: vendor.streamUrl }))
})

after(async () => {
  clients.terminate()
  // Whatever started (a failed start leaves the rest undefined).
  await Promise.all([...fetchers, gateway, vendor].filter(Boolean).map((p) => p.stop()))
  r?.disconnect()
  await redis?.close()
})

/** Fails unless every symbol the vendor streams is subscribed exactly once. */
async function assertOnceEach () {
  const { subscribed } = await vendor.state()
  for (const [s, n] of Object.entries(subscribed)) assert.equal(n, 1, `${s} subscribed ${n} times upstream`)
  return subscribed
}

/** @param {Record<string, number>} want */
const vendorSubscribed = (want) => waitFor(async () => {
  const { subscribed } = await vendor.state()
  return JSON.stringify(Object.keys(subscribed).sort()) === JSON.stringify(Object.keys(want).sort()) && Object.values(subscribed).every((n) => n === 1)
}, { timeout: 20_000, message: `vendor subscriptions ${JSON.stringify(want)}` })

test('both replicas connect and authenticate; demanded symbols are subscribed upstream once each and their quotes reach clients', async () => {
  await waitFor(async () => (await vendor.state()).connections === 2, { message: 'two vendor connections' })
  const c = await connect()
  await c.sub(['AAPL', 'MSFT'])
  await vendorSubscribed({ AAPL: 1, MSFT: 1 })
  await c.waitQuotes('AAPL', 3)
  await c.waitQuotes('MSFT', 3)
  const q = c.quote('AAPL') ?? {}
  assert.ok(Math.abs(q.ask - q.bid - 0.02) < 1e-6, 'ask mapped from ap')
  assert.equal(q.bidSize, 1)
  assert.equal(q.askSize, 2)
  const { events } = await vendor.state()
  assert.equal(events.filter((e) => e.action === 'auth').length, 2, 'each connection authenticated with {token}')
  assert.equal(events.filter((e) => e.action === 'subscribe' && e.symbols.includes('AAPL')).length, 1)
  assert.deepEqual(c.problems, [])
})

test('unsubscribe follows demand: a symbol nobody watches is unsubscribed upstream', async () => {
  const c = await connect()
  await c.sub(['IBM'])
  await vendorSubscribed({ AAPL: 1, MSFT: 1, IBM: 1 })
  await c.unsub(['IBM'])
  await vendorSubscribed({ AAPL: 1, MSFT: 1 })
  const { events } = await vendor.state()
  assert.ok(events.some((e) => e.action === 'unsubscribe' && e.symbols.includes('IBM')))
  assert.equal(await r.hget(keys.streamOwner, 'IBM'), null, 'ownership released')
})

test('garbage frames are counted and skipped; quotes keep flowing', async () => {
  const c = await connect()
  await c.sub(['AAPL'])
  await c.waitQuotes('AAPL', 1)
  await vendor.misbehave('garbage')
  await waitFor(async () => {
    let malformed = 0
    for (const f of fetchers) malformed += (await f.metrics())['wsps_fetcher_stream_messages_total{result="malformed"}'] ?? 0
    // 8 bad frames per connection (one is a binary frame).
    return malformed >= 16
  }, { message: 'malformed frames counted' })
  const seen = c.seqs.get('AAPL')?.length ?? 0
  await c.waitQuotes('AAPL', seen + 3)
  for (const f of fetchers) assert.equal(f.proc.exitCode, null, 'fetcher still running')
  assert.deepEqual(c.problems, [])
})

test('the vendor drops every connection: the fetchers reconnect, re-authenticate and resubscribe, once each', async () => {
  const c = await connect()
  await c.sub(['AAPL', 'MSFT'])
  await c.waitQuotes('AAPL', 1)
  const before = (await vendor.state()).events.filter((e) => e.action === 'connect').length
  await vendor.misbehave('drop')
  await waitFor(async () => {
    const s = await vendor.state()
    return s.events.filter((e) => e.action === 'connect').length >= before + 2 && s.connections === 2
  }, { timeout: 20_000, message: 'both fetchers reconnected' })
  await vendorSubscribed({ AAPL: 1, MSFT: 1 })
  const seen = c.seqs.get('AAPL')?.length ?? 0
  await c.waitQuotes('AAPL', seen + 3)
  let reconnects = 0
  for (const f of fetchers) reconnects += (await f.metrics()).wsps_fetcher_stream_reconnects_total ?? 0
  assert.ok(reconnects >= 2)
  assert.deepEqual(c.problems, [], 'seq continues without gaps across the reconnect')
})

test('a fetcher is killed: the other takes its symbols over (within the 3 s lease and a 1 s tick) and quotes keep coming', async (t) => {
  const c = await connect()
  await c.sub(['AAPL', 'MSFT'])
  await vendorSubscribed({ AAPL: 1, MSFT: 1 })
  const owner = await r.hget(keys.streamOwner, 'AAPL')
  const victim = /** @type {import('../src/index.js').ServiceHandle} */ (fetchers.find((f) => f.name === owner))
  assert.ok(victim, `the owner ${owner} is one of ours`)
  const survivor = /** @type {import('../src/index.js').ServiceHandle} */ (fetchers.find((f) => f !== victim))
  const killedAt = Date.now()
  await victim.kill()
  await waitFor(async () => (await r.hget(keys.streamOwner, 'AAPL')) === survivor.name && (await vendor.state()).subscribed.AAPL === 1,
    { timeout: 20_000, message: 'AAPL taken over' })
  t.diagnostic(`takeover after ${Date.now() - killedAt} ms (lease 3000 + tick 1000 by design)`)
  fetchers = [survivor]
  await assertOnceEach()
  const seen = c.seqs.get('AAPL')?.length ?? 0
  await c.waitQuotes('AAPL', seen + 3)
  assert.deepEqual(c.problems, [])
})
