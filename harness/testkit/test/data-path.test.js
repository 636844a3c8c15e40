// The core data path on real processes: redis-server, one quote-fetcher,
// two gateways, WebSocket clients.
import assert from 'node:assert/strict'
import { before, test } from 'node:test'
import { redisKeys } from '@wsps/shared/keys'
import { sleep, useStack, waitFor } from '../src/index.js'

const LEASE_MS = 1500
const stack = useStack()
/** @type {import('../src/index.js').ServiceHandle} */
let gwA
/** @type {import('../src/index.js').ServiceHandle} */
let gwB
/** @type {import('ioredis').Redis} */
let r
const keys = redisKeys('wsps')

before(async () => {
  r = await stack.redisClient()
  const env = { WSPS_DEMAND_LEASE_MS: LEASE_MS, WSPS_UNSUBSCRIBE_DELAY_MS: 100 }
  ;[gwA, gwB] = await Promise.all([stack.gateway(env), stack.gateway(env)])
  await stack.fetcher()
})

/**
 * Subscriptions held by a gateway's Redis subscriber connection, from
 * Redis's own CLIENT LIST.
 * @param {string} node
 */
async function channelsHeldBy (node) {
  const list = /** @type {string} */ (await r.client('LIST'))
  const line = list.split('\n').find((l) => l.includes(`name=wsps-gw-sub-${node} `))
  return Number(/ sub=(\d+)/.exec(line ?? '')?.[1] ?? -1)
}

test('hello, ack, then a snapshot within 2 s and updates with seq rising by 1', async () => {
  const c = await stack.client(gwA.wsUrl)
  assert.equal(c.hello.v, 1)
  assert.equal(c.hello.node, gwA.name)
  assert.equal(typeof c.hello.heartbeatMs, 'number')
  const subscribedAt = Date.now()
  const ack = await c.sub(['AAPL', 'MSFT'])
  assert.deepEqual(ack, { op: 'ack', id: 1, symbols: ['AAPL', 'MSFT'] })
  await waitFor(() => c.quote('AAPL') && c.quote('MSFT'), { timeout: 2000, message: 'snapshots of AAPL and MSFT' })
  assert.ok(Date.now() - subscribedAt <= 2000)
  await c.waitQuotes('AAPL', 6)
  await c.waitQuotes('MSFT', 6)
  for (const s of ['AAPL', 'MSFT']) {
    const seqs = /** @type {number[]} */ (c.seqs.get(s))
    seqs.slice(1).forEach((seq, i) => assert.equal(seq, seqs[i] + 1, `${s} seqs ${seqs}`))
  }
  const q = c.quote('AAPL')
  for (const f of ['symbol', 'seq', 'ts', 'bid', 'ask', 'last', 'bidSize', 'askSize', 'volume', 'open', 'high', 'low', 'prevClose']) {
    assert.ok(f in /** @type {object} */ (q), `quote has ${f}`)
  }
  assert.deepEqual(c.problems, [])
})

test('clients on two gateways receive the same seq sequence with no gaps or duplicates', async () => {
  const a = await stack.client(gwA.wsUrl)
  const b = await stack.client(gwB.wsUrl)
  await Promise.all([a.sub(['IBM']), b.sub(['IBM'])])
  await a.waitQuotes('IBM', 15)
  await b.waitQuotes('IBM', 15)
  const sa = /** @type {number[]} */ (a.seqs.get('IBM'))
  const sb = /** @type {number[]} */ (b.seqs.get('IBM'))
  for (const seqs of [sa, sb]) seqs.slice(1).forEach((s, i) => assert.equal(s, seqs[i] + 1, `contiguous: ${seqs}`))
  const from = Math.max(sa[0], sb[0])
  const to = Math.min(sa[sa.length - 1], sb[sb.length - 1])
  assert.ok(to - from >= 10)
  assert.deepEqual(sa.filter((s) => s >= from && s <= to), sb.filter((s) => s >= from && s <= to))
  // Same seq, same content on both gateways.
  await waitFor(() => a.quote('IBM')?.seq === b.quote('IBM')?.seq, { message: 'both at the same seq' }).catch(() => {})
  if (a.quote('IBM')?.seq === b.quote('IBM')?.seq) assert.deepEqual(a.quote('IBM'), b.quote('IBM'))
  assert.deepEqual([...a.problems, ...b.problems], [])
})

test('unsub stops updates of that symbol and only that one', async () => {
  const c = await stack.client(gwA.wsUrl)
  await c.sub(['ORCL', 'SAP'])
  await c.waitQuotes('ORCL', 2)
  await c.waitQuotes('SAP', 2)
  const ack = await c.unsub(['ORCL'])
  assert.deepEqual(ack.symbols, ['SAP'])
  const orcl = c.seqs.get('ORCL')?.length
  const sap = c.seqs.get('SAP')?.length ?? 0
  await c.waitQuotes('SAP', sap + 4)
  assert.equal(c.seqs.get('ORCL')?.length, orcl, 'no ORCL quote after the ack')
  assert.deepEqual(c.problems, [])
})

test("a gateway's Redis channels follow its own clients' demand", async () => {
  const base = await channelsHeldBy(gwB.name)
  const c = await stack.client(gwB.wsUrl)
  await c.sub(['CH1', 'CH2', 'CH3'])
  await waitFor(async () => (await channelsHeldBy(gwB.name)) === base + 3, { message: 'three more channels on gateway B' })
  const other = await stack.client(gwB.wsUrl)
  await other.sub(['CH1'])
  await c.unsub(['CH1', 'CH2'])
  await waitFor(async () => (await channelsHeldBy(gwB.name)) === base + 2, { message: 'CH2 dropped, CH1 kept for the other client' })
  await other.close()
  await waitFor(async () => (await channelsHeldBy(gwB.name)) === base + 1, { message: 'CH1 dropped when its last client left' })
  assert.equal((await gwB.metrics()).wsps_gateway_redis_channels, base + 1)
  // Gateway A never watched these.
  const held = /** @type {string[]} */ (await r.pubsub('CHANNELS', 'wsps:{CH*'))
  assert.deepEqual(held, [keys.channel('CH3')])
})

test('the fetcher fetches only watched symbols and stops within the lease after the last watcher leaves', async () => {
  const c = await stack.client(gwA.wsUrl)
  await c.sub(['LEASE'])
  await c.waitQuotes('LEASE', 3)
  assert.equal(await r.exists(keys.seq('NEVERWATCHED')), 0)
  await c.unsub(['LEASE'])
  await waitFor(async () => (await r.zscore(keys.demand, 'LEASE')) === null, { timeout: LEASE_MS * 3, message: 'LEASE demand expired' })
  const seq = Number(await r.get(keys.seq('LEASE')))
  await sleep(1000)
  assert.equal(Number(await r.get(keys.seq('LEASE'))), seq, 'no quote published after the lease expired')
  const watched = /** @type {string[]} */ (await r.zrange(keys.demand, 0, -1))
  assert.ok(!watched.includes('LEASE'))
})
