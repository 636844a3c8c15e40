// What the ws-stream provider does with each kind of vendor record, on real
// processes: Alpaca-style trades, cancels, corrections, statuses and
// records of symbols the replica does not hold, sent through the fake
// vendor (fake-vendor.js) to one fetcher, read back by a WebSocket client
// and from the fetcher's /metrics.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { ClientPool, startFakeVendor, startFetcher, startGateway, startRedis, waitFor } from '../src/index.js'

// The Alpaca mapping and templates of docs/feeding.md (the fake vendor
// needs no auth here; the auth handshake is tested in ws-stream.test.js).
const STREAM = {
  WSPS_PROVIDER: 'ws-stream',
  WSPS_STREAM_SUBSCRIBE: '{"action":"subscribe","quotes":{symbols},"trades":{symbols}}',
  WSPS_STREAM_UNSUBSCRIBE: '{"action":"unsubscribe","quotes":{symbols},"trades":{symbols}}',
  WSPS_STREAM_MAPPING: '{"rules":[' +
    '{"match":{"T":"q"},"fields":{"symbol":"S","bid":"bp","ask":"ap","bidSize":"bs","askSize":"as","ts":"t"}},' +
    '{"match":{"T":"t"},"fields":{"symbol":"S","last":"p","ts":"t"}},' +
    '{"match":{"T":["success","subscription","error","x","c","s"]},"ignore":true}]}',
  WSPS_STREAM_BACKOFF_MS: 100
}
/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis
/** @type {Awaited<ReturnType<typeof startFakeVendor>>} */
let vendor
/** @type {import('../src/index.js').ServiceHandle} */
let gateway
/** @type {import('../src/index.js').ServiceHandle} */
let fetcher
const clients = new ClientPool()

before(async () => {
  redis = await startRedis()
  // No trade every tick: the test sets `last` with its own trade and checks that it stays.
  vendor = await startFakeVendor({ trades: false })
  gateway = await startGateway(redis.url, { WSPS_DEMAND_LEASE_MS: 1500, WSPS_UNSUBSCRIBE_DELAY_MS: 100 })
  fetcher = await startFetcher(redis.url, { ...STREAM, WSPS_STREAM_URL: vendor.streamUrl })
})

// Stops what started, also when a start failed (a fetcher refusing its
// config), so a failing run does not hang on live processes.
after(async () => {
  clients.terminate()
  await Promise.all([fetcher, gateway, vendor].filter((p) => p !== undefined).map((p) => p.stop()))
  await redis?.close()
})

/** @returns {Promise<Record<string, number>>} records dropped so far, by reason */
async function dropped () {
  const m = await fetcher.metrics()
  const reasons = ['unknown_symbol', 'ignored', 'unmatched', 'malformed', 'empty']
  return Object.fromEntries(reasons.map((r) => [r, m[`wsps_fetcher_stream_records_dropped_total{reason="${r}"}`] ?? 0]))
}

test('a trade sets last; a cancel, a correction and a halt do not touch the quote; every record not published is counted by reason', async () => {
  const c = await clients.connect(gateway.wsUrl)
  await c.sub(['AAPL'])
  await c.waitQuotes('AAPL', 2)
  const t = () => new Date().toISOString()
  await vendor.send(JSON.stringify([{ T: 't', i: 96921, S: 'AAPL', x: 'D', p: 123.45, s: 100, t: t(), c: ['@'], z: 'C' }]))
  await waitFor(() => c.quote('AAPL')?.last === 123.45, { message: 'last from the trade' })
  const before = await dropped()
  await vendor.send(JSON.stringify([
    { T: 'x', S: 'AAPL', i: 96921, x: 'D', p: 999.99, s: 100, a: 'C', t: t(), z: 'C' },
    { T: 'c', S: 'AAPL', x: 'D', oi: 96921, op: 123.45, os: 100, oc: ['@'], ci: 96922, cp: 888.88, cs: 100, cc: ['@'], t: t(), z: 'C' },
    { T: 's', S: 'AAPL', sc: 'H', sm: 'Trading Halt', rc: 'T12', rm: 'Trading Halted', t: t(), z: 'C' },
    { T: 't', i: 1, S: 'ZZZZ', x: 'D', p: 5, s: 1, t: t(), z: 'C' },
    { T: 'b', S: 'AAPL', o: 1, h: 1, l: 1, c: 1, v: 1, t: t() }
  ]))
  await waitFor(async () => {
    const now = await dropped()
    return now.unknown_symbol > before.unknown_symbol && now.unmatched > before.unmatched && now.ignored >= before.ignored + 3
  }, { message: 'records dropped: unknown_symbol, unmatched, 3 ignored' })
  const seen = c.seqs.get('AAPL')?.length ?? 0
  await c.waitQuotes('AAPL', seen + 3)
  assert.equal(c.quote('AAPL')?.last, 123.45, 'the cancelled price did not become last')
  assert.ok(!c.frames.some((f) => /999\.99|888\.88/.test(JSON.stringify(f))), 'no cancelled or corrected price reached the client')
  const now = await dropped()
  assert.equal(now.malformed, before.malformed, 'nothing counted malformed')
  assert.deepEqual(c.problems, [])
})
