// Fast fault tests on real processes: fetcher death, Redis kill -9 and
// restart, gateway drain, dead peers. (Longer ones run in `make chaos`.)
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CloseCode } from '@wsps/protocol'
import { TestClient, getJson, startFetcher, startGateway, startRedis, waitFor } from '../src/index.js'

/** @param {import('node:test').TestContext} t */
async function stack (t, { fetchers = 1, gateways = 1, gatewayEnv = {} } = {}) {
  const redis = await startRedis()
  const gws = await Promise.all(Array.from({ length: gateways }, () => startGateway(redis.url, gatewayEnv)))
  const fs = await Promise.all(Array.from({ length: fetchers }, () => startFetcher(redis.url)))
  /** @type {TestClient[]} */
  const clients = []
  t.after(async () => {
    for (const c of clients) c.ws.terminate()
    await Promise.all([...gws, ...fs].map((p) => p.stop('SIGKILL')))
    await redis.close()
  })
  const connect = async (/** @type {string} */ url) => {
    const c = await TestClient.connect(url)
    clients.push(c)
    return c
  }
  return { redis, gws, fs, connect }
}

/**
 * Resolves when every symbol got a quote with a seq above the one it had.
 * @param {TestClient} c
 * @param {string[]} symbols
 * @param {number} timeout
 */
async function allUpdate (c, symbols, timeout) {
  const from = new Map(symbols.map((s) => [s, c.quote(s)?.seq ?? 0]))
  const started = Date.now()
  await waitFor(() => symbols.every((s) => (c.quote(s)?.seq ?? 0) > (from.get(s) ?? 0)), { timeout, message: 'every symbol updating' })
  return Date.now() - started
}

test('killing one of two fetchers: every watched symbol updates again within 5 s', async (t) => {
  const { gws, fs, connect } = await stack(t, { fetchers: 2 })
  const symbols = Array.from({ length: 20 }, (_, i) => `FF${i}`)
  const c = await connect(gws[0].wsUrl)
  await c.sub(symbols)
  await allUpdate(c, symbols, 5000)
  await fs[0].kill()
  const ms = await allUpdate(c, symbols, 5000)
  t.diagnostic(`all ${symbols.length} symbols updated ${ms} ms after the kill`)
  await allUpdate(c, symbols, 5000)
  assert.deepEqual(c.problems, [])
})

test('Redis killed and restarted: sockets stay open, readiness follows Redis, subscriptions and snapshots come back', async (t) => {
  const { redis, gws, connect } = await stack(t, { gateways: 2 })
  const symbols = ['RR1', 'RR2', 'RR3']
  const a = await connect(gws[0].wsUrl)
  const b = await connect(gws[1].wsUrl)
  await Promise.all([a.sub(symbols), b.sub(['RR1'])])
  await allUpdate(a, symbols, 5000)
  const snapsBefore = a.frames.filter((f) => f.op === 'snap').length

  await redis.kill()
  await waitFor(async () => (await getJson(`${gws[0].url}/readyz`)).status === 503, { message: 'readyz 503 without Redis' })
  assert.equal((await getJson(`${gws[0].url}/healthz`)).status, 200, 'still alive')
  await redis.start()
  const back = Date.now()
  await waitFor(async () => (await getJson(`${gws[0].url}/readyz`)).status === 200, { timeout: 5000, message: 'readyz 200 again' })
  await allUpdate(a, symbols, 5000)
  await allUpdate(b, ['RR1'], 5000)
  t.diagnostic(`updates resumed ${Date.now() - back} ms after Redis came back`)
  assert.ok(a.frames.filter((f) => f.op === 'snap').length > snapsBefore, 'a fresh snapshot after the reconnect')
  assert.equal(a.closed, null, 'the WebSocket stayed open')
  assert.equal(b.closed, null)
  assert.deepEqual([...a.problems, ...b.problems], [])
  for (const g of gws) assert.equal(g.proc.exitCode, null, 'gateway still running')
})

test('SIGTERM drains: readiness false, upgrades refused, clients closed with 1012 over the window, exit 0', async (t) => {
  const { gws, connect } = await stack(t, { gatewayEnv: { WSPS_DRAIN_MS: 1000, WSPS_SHUTDOWN_DELAY_MS: 300 } })
  const [gw] = gws
  const clients = await Promise.all(Array.from({ length: 20 }, () => connect(gw.wsUrl)))
  await clients[0].sub(['DRN'])
  gw.proc.kill('SIGTERM')
  await waitFor(async () => (await getJson(`${gw.url}/readyz`)).status === 503, { message: 'readyz 503 while draining' })
  await assert.rejects(TestClient.connect(gw.wsUrl), (/** @type {any} */ err) => err.status === 503)
  const closes = await Promise.all(clients.map((c) => c.closedPromise))
  assert.ok(closes.every((c) => c.code === CloseCode.SERVICE_RESTART), JSON.stringify(closes.map((c) => c.code)))
  const { code } = await gw.exited
  assert.equal(code, 0)
})

test('SIGTERM while Redis is gone: gateway and fetcher stop anyway, exit 0, well inside their stop bound', { timeout: 60_000 }, async (t) => {
  const { redis, gws, fs, connect } = await stack(t, { gatewayEnv: { WSPS_DRAIN_MS: 200 } })
  const c = await connect(gws[0].wsUrl)
  await c.sub(['GONE1', 'GONE2'])
  await allUpdate(c, ['GONE1', 'GONE2'], 5000)
  await redis.kill()
  // Both are reconnecting with commands queued behind the lost connection.
  await waitFor(async () => (await getJson(`${gws[0].url}/readyz`)).status === 503, { message: 'readyz 503 without Redis' })
  await new Promise((resolve) => setTimeout(resolve, 500))
  const started = Date.now()
  gws[0].proc.kill('SIGTERM')
  fs[0].proc.kill('SIGTERM')
  const [g, f] = await Promise.all([gws[0].exited, fs[0].exited])
  const tookMs = Date.now() - started
  t.diagnostic(`both exited ${tookMs} ms after SIGTERM`)
  assert.deepEqual([g.code, f.code], [0, 0], 'a graceful exit, not the stop bound (WSPS_ERR_SHUTDOWN_TIMEOUT exits 1)')
  assert.ok(![...gws[0].logs, ...fs[0].logs].some((l) => l.includes('WSPS_ERR_SHUTDOWN_TIMEOUT')))
})

test('a peer that stops answering pings is dropped after the idle timeout', async (t) => {
  const { gws } = await stack(t, { gatewayEnv: { WSPS_HEARTBEAT_MS: 1000 } })
  const silent = await TestClient.connect(gws[0].wsUrl, { autoPong: false })
  const live = await TestClient.connect(gws[0].wsUrl)
  t.after(() => live.ws.terminate())
  const { code } = await silent.closedPromise
  assert.equal(code, 1006, 'terminated without a close frame')
  assert.equal(live.closed, null, 'a peer that answers stays')
})
