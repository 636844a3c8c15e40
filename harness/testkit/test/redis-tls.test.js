// Redis over TLS (`rediss://` + WSPS_REDIS_TLS_CA_FILE), as managed Redis
// services and the chart's external Redis option are reached: quotes flow
// through a TLS-only redis-server; a gateway that does not trust the
// server's certificate stays alive, unready, and says why.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { TestClient, getJson, startFetcher, startGateway, startRedis, startService, GATEWAY_MAIN, waitFor } from '../src/index.js'
import { makeCerts } from '../src/redis.js'

/** @type {import('../src/redis.js').RedisHandle} */
let redis
/** @type {import('../src/index.js').ServiceHandle[]} */
const procs = []
/** @type {TestClient[]} */
const clients = []

before(async () => {
  redis = await startRedis({ tls: true })
})

after(async () => {
  for (const c of clients) c.ws.terminate()
  await Promise.all(procs.map((p) => p.stop()))
  await redis?.close()
})

test('gateway and fetcher reach a TLS-only Redis with rediss:// and the CA file; quotes flow', async () => {
  const env = { WSPS_REDIS_TLS_CA_FILE: redis.ca }
  const [gw, fetcher] = await Promise.all([startGateway(redis.url, env), startFetcher(redis.url, env)])
  procs.push(gw, fetcher)
  const c = await TestClient.connect(gw.wsUrl)
  clients.push(c)
  await c.sub(['TLS1', 'TLS2'])
  await c.waitQuotes('TLS1', 3, 15_000)
  await c.waitQuotes('TLS2', 3, 15_000)
  assert.deepEqual(c.problems, [], 'seq continuity and symbols as subscribed')
})

test('a gateway that does not trust the Redis certificate is alive but never ready, and logs why', async () => {
  const other = makeCerts(redis.dir, 'other')
  const gw = await startService(GATEWAY_MAIN, { WSPS_REDIS_URL: redis.url, WSPS_REDIS_TLS_CA_FILE: other.ca, WSPS_LOG_LEVEL: 'warn' }, { ready: false, name: 'gw-wrong-ca' })
  procs.push(gw)
  await waitFor(async () => gw.logs.some((l) => /certificate|self.signed|unable to verify/i.test(l)), { timeout: 10_000, message: 'a TLS error in the log' })
  assert.equal((await getJson(`${gw.url}/readyz`)).status, 503)
  assert.equal((await getJson(`${gw.url}/healthz`)).status, 200)
  assert.equal(gw.proc.exitCode, null)
})
