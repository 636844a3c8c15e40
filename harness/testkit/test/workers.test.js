// WSPS_WORKERS=2 on real processes: two gateway workers share one port,
// each with its own Redis subscriptions; /readyz and /metrics speak for
// both; SIGTERM drains every client of both and the pod process exits 0.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { CloseCode } from '@wsps/protocol'
import { redisKeys } from '@wsps/shared/keys'
import { TestClient, getJson, useStack, waitFor } from '../src/index.js'
import { quoteStream } from './slow-distinct-scenario.js'

const keys = redisKeys('wsps')
const stack = useStack()
/** @type {import('../src/index.js').ServiceHandle} */
let gw
/** @type {import('ioredis').Redis} */
let r
/** @type {TestClient[]} */
const clients = []

before(async () => {
  r = await stack.redisClient()
  gw = await stack.gateway({ WSPS_WORKERS: 2, WSPS_DRAIN_MS: 300 })
})

after(() => { for (const c of clients) c.ws.terminate() })

/**
 * @param {Record<string, number>} m parsed metrics
 * @param {string} name
 * @returns {Record<string, number>} worker -> value
 */
function perWorker (m, name) {
  /** @type {Record<string, number>} */
  const out = {}
  for (const [k, v] of Object.entries(m)) {
    const w = new RegExp(`^${name}\\{[^}]*worker="(\\d+)"[^}]*\\}$`).exec(k)
    if (w) out[w[1]] = v
  }
  return out
}

test('connections are spread over both workers; each subscribes Redis for its own clients and every client gets every quote', async () => {
  const next = quoteStream('WORK')
  const first = next()
  await r.set(keys.latest('WORK'), first)
  for (let i = 0; i < 8; i++) clients.push(await TestClient.connect(gw.wsUrl))
  const nodes = new Set(clients.map((c) => c.hello.node))
  assert.equal(nodes.size, 1, 'one pod name')
  for (const c of clients) await c.sub(['WORK'])
  await waitFor(() => clients.every((c) => c.quote('WORK')), { message: 'snapshots' })
  await waitFor(async () => {
    const conns = perWorker(await gw.metrics(), 'wsps_gateway_connections')
    return Object.keys(conns).length === 2 && Object.values(conns).every((n) => n > 0) && conns['1'] + conns['2'] === clients.length
  }, { timeout: 10_000, message: 'connections counted on both workers, summing to 8' })
  const channels = perWorker(await gw.metrics(), 'wsps_gateway_redis_channels')
  assert.deepEqual(channels, { 1: 1, 2: 1 }, 'each worker holds its own channel')
  const pipe = r.pipeline()
  for (let i = 0; i < 20; i++) {
    const q = next()
    pipe.set(keys.latest('WORK'), q)
    pipe.publish(keys.channel('WORK'), q)
  }
  await pipe.exec()
  await waitFor(() => clients.every((c) => c.quote('WORK')?.seq === 21), { timeout: 10_000, message: 'seq 21 everywhere' })
  for (const c of clients) assert.deepEqual(c.problems, [])
})

test('/readyz answers for every worker', async () => {
  const res = await getJson(`${gw.url}/readyz`)
  assert.equal(res.status, 200)
  assert.equal(res.body.checks.everyWorker, true)
})

test('SIGTERM: both workers drain their clients with 1012 and the pod process exits 0', async () => {
  const closed = Promise.all(clients.map((c) => c.closedPromise))
  const exit = gw.stop('SIGTERM')
  const codes = await closed
  assert.ok(codes.every((c) => c.code === CloseCode.SERVICE_RESTART), JSON.stringify(codes))
  assert.deepEqual(await exit, { code: 0, signal: null })
})
