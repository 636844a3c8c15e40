// WSPS_REDIS_MODE=cluster on a real three-shard Redis Cluster: sharded
// pub/sub end to end.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Cluster } from 'ioredis'
import { latestQuotes } from '@wsps/shared/latest'
import { redisKeys } from '@wsps/shared/keys'
import { registerScripts } from '@wsps/shared/scripts'
import { TestClient, startFetcher, startGateway, startRedisCluster, waitFor } from '../src/index.js'

/** @type {Awaited<ReturnType<typeof startRedisCluster>>} */
let cluster
/** @type {import('../src/index.js').ServiceHandle[]} */
let procs = []
/** @type {TestClient[]} */
const clients = []
const env = { WSPS_REDIS_MODE: 'cluster' }

before(async () => {
  cluster = await startRedisCluster()
  procs = await Promise.all([startGateway(cluster.url, env), startGateway(cluster.url, env), startFetcher(cluster.url, env), startFetcher(cluster.url, env)])
})
after(async () => {
  for (const c of clients) c.ws.terminate()
  await Promise.all(procs.map((p) => p.stop()))
  await cluster.close()
})

test('quotes of symbols on every shard reach clients on both gateways, in order', async () => {
  // Enough symbols that every shard owns some.
  const symbols = Array.from({ length: 12 }, (_, i) => `CL${i}`)
  const a = await TestClient.connect(procs[0].wsUrl)
  const b = await TestClient.connect(procs[1].wsUrl)
  clients.push(a, b)
  await Promise.all([a.sub(symbols), b.sub(symbols.slice(0, 4))])
  for (const s of symbols) await a.waitQuotes(s, 4)
  for (const s of symbols.slice(0, 4)) await b.waitQuotes(s, 4)
  assert.deepEqual([...a.problems, ...b.problems], [])
  for (const s of symbols) {
    const seqs = /** @type {number[]} */ (a.seqs.get(s))
    seqs.slice(1).forEach((q, i) => assert.equal(q, seqs[i] + 1, `${s}: ${seqs}`))
  }

  // The channels are shard channels, each on the node that owns its slot.
  const keys = redisKeys('wsps')
  const r = new Cluster([{ host: '127.0.0.1', port: cluster.ports[0] }])
  try {
    await new Promise((resolve) => r.once('ready', resolve))
    const shardChannels = (await Promise.all(r.nodes('master').map((n) => n.call('PUBSUB', 'SHARDCHANNELS', 'wsps:*')))).map((l) => /** @type {string[]} */ (l))
    assert.ok(shardChannels.filter((l) => l.length > 0).length >= 2, `channels spread over shards: ${JSON.stringify(shardChannels)}`)
    assert.deepEqual(shardChannels.flat().sort(), symbols.map(keys.channel).sort())
    assert.deepEqual(await r.call('PUBSUB', 'CHANNELS', 'wsps:*'), [], 'no classic pub/sub')
  } finally {
    r.disconnect()
  }
  await waitFor(async () => (await procs[0].metrics()).wsps_gateway_redis_channels === symbols.length, { message: 'channel gauge' })
})

test('history on (the default): each symbol\'s latest quote is its history stream\'s newest entry, read per shard, and a new client\'s snapshot', async () => {
  const symbols = Array.from({ length: 12 }, (_, i) => `CL${i}`)
  const keys = redisKeys('wsps')
  const r = registerScripts(new Cluster([{ host: '127.0.0.1', port: cluster.ports[0] }]))
  try {
    await new Promise((resolve) => r.once('ready', resolve))
    const late = await TestClient.connect(procs[1].wsUrl)
    clients.push(late)
    await late.sub(symbols)
    for (const s of symbols) await late.waitQuotes(s, 1)
    const latest = await latestQuotes(r, keys, symbols)
    symbols.forEach((s, i) => {
      const q = latest[i]
      assert.ok(typeof q === 'string', `${s}: ${q}`)
      const snap = /** @type {number[]} */ (late.seqs.get(s))[0]
      assert.ok(JSON.parse(q).seq >= snap, `${s}: the latest (${JSON.parse(q).seq}) is at or after the snapshot (${snap})`)
    })
    const lastKeys = await Promise.all(symbols.map((s) => r.exists(keys.latest(s))))
    assert.deepEqual(lastKeys, symbols.map(() => 0), 'no `last` key with history on')
    assert.deepEqual(late.problems, [])
  } finally {
    r.disconnect()
  }
})
