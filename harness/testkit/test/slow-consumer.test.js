// Slow consumers on real processes (fast version: 20 among 100; the
// 1,000-among-9,000 run is `make chaos-slow`). Clients that stop reading
// first get conflated updates, then are cut off; live clients are
// unaffected; the gateway's memory stays bounded.
//
// The scenario runs in a child process, inside a private network namespace
// with small TCP buffers when `unshare -n` works (root), so stuck sockets
// fill in a second instead of absorbing megabytes each in the host kernel
// (see harness/testkit/src/isolate.js). Elsewhere it runs on the host's
// loopback and takes ~30 s longer.
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { after, before, test } from 'node:test'
import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { TestClient, sleep, startGateway, startRedis } from '../src/index.js'
import { runIsolated } from '../src/isolate.js'
import { FAST_PARAMS } from '../src/slow-scenario.js'

const SCENARIO = fileURLToPath(new URL('../src/slow-scenario.js', import.meta.url))
const P = FAST_PARAMS
const SLEEPERS = P.slow - P.wakers

/** @type {any} */
let run
/** @type {boolean} */
let isolated

before(async () => {
  const r = await runIsolated(SCENARIO, 'runSlowConsumers', P, { netns: true, timeoutMs: 240_000 })
  run = r.result
  isolated = r.netns
})

test(`${P.slow} of ${P.live + P.slow} clients stop reading: the gateway reports them slow and conflates their updates`, (t) => {
  const g = run.gateway
  t.diagnostic(`${isolated ? 'private netns, small TCP buffers' : 'host loopback'}: half the sleepers slow ${run.slowSeenMs} ms after they stopped reading, all cut off after ${run.cutOffMs} ms`)
  assert.ok(g.slowMax >= Math.ceil(0.75 * SLEEPERS), `wsps_gateway_slow_clients peaked at ${g.slowMax}`)
  assert.ok(g.conflatedDuring > 0, 'wsps_gateway_conflated_total rose while they were slow')
  assert.equal(g.slowAtEnd, 0, 'wsps_gateway_slow_clients back to 0')
})

test('readers that catch up in time stay, resynced by a snapshot of the latest quotes (no gap)', () => {
  const w = run.wakers
  assert.equal(w.open, P.wakers, `wakers closed: ${JSON.stringify(w.closes)}`)
  assert.equal(w.problems, 0, JSON.stringify(run.problems))
  assert.ok(w.conflated > 0, 'they were caught up past the quotes they skipped')
})

test('readers that stay behind are cut off (WSPS_SLOW_CLOSE_MS)', (t) => {
  const s = run.sleepers
  t.diagnostic(`cut-off readers saw close codes ${JSON.stringify(s.closes)} (a reader that is not reading cannot read the 4008 frame either)`)
  assert.equal(s.open, 0, 'every sleeper was cut off')
  assert.ok(Object.keys(s.closes).every((c) => c === '1006' || c === '4008'), JSON.stringify(s.closes))
  assert.ok(run.cutOffMs >= P.slowCloseMs, 'not before WSPS_SLOW_CLOSE_MS')
})

test('live readers are unaffected: none closed, no gap, updates kept flowing while others were stuck', (t) => {
  const l = run.live
  t.diagnostic(`live latency p50/p99 ms: baseline ${l.latency.baseline.p50}/${l.latency.baseline.p99}, ` +
    `while ${SLEEPERS} were stuck ${l.latency.slow.p50}/${l.latency.slow.p99}, after ${l.latency.after.p50}/${l.latency.after.p99}`)
  assert.equal(l.open, P.live, JSON.stringify(l.closes))
  assert.equal(l.problems, 0, JSON.stringify(run.problems))
  assert.equal(l.silentDuringSlow, 0, 'every live client got updates while others were stuck')
})

test('gateway memory stays bounded while readers are stuck', (t) => {
  const g = run.gateway
  const grown = g.rssPeak - g.rssBefore
  t.diagnostic(`gateway RSS idle ${(g.rssIdle / 1e6).toFixed(0)} MB, with ${run.connections} clients ${(g.rssBefore / 1e6).toFixed(0)} MB, ` +
    `peak with ${SLEEPERS} stuck ${(g.rssPeak / 1e6).toFixed(0)} MB (+${(grown / 1e6).toFixed(1)} MB; documented bound per stuck client ` +
    `WSPS_SEND_MAX_BYTES ${P.sendMax / 1024} KiB + one entry per symbol)`)
  assert.ok(g.alive, 'gateway alive')
  // RSS is coarse (GC, allocator): allow the bound per stuck client plus 1 MB each and 150 MB of noise.
  assert.ok(grown < SLEEPERS * (g.boundPerStuckBytes + 1e6) + 150e6, `grew ${(grown / 1e6).toFixed(0)} MB`)
})

test('slow-consumer cut-offs are counted as wsps_gateway_closes_total{code="4008"}', () => {
  assert.ok((run.gateway.closes['4008'] ?? 0) >= SLEEPERS, JSON.stringify(run.gateway.closes))
})

/** @type {Awaited<ReturnType<typeof startRedis>> | null} */
let redis = null
after(async () => { await redis?.close() })

test('a reader that stopped reading but keeps requesting snapshots is cut off at WSPS_SEND_MAX_BYTES', async (t) => {
  redis = await startRedis()
  // Quotes with no fetcher: no quote batch ever flushes, only snapshots go out.
  const prefix = 'noflow'
  const keys = redisKeys(prefix)
  const r = new Redis(redis.url)
  const symbols = Array.from({ length: 100 }, (_, i) => `NF${i}`)
  const pad = 'x'.repeat(150)
  await r.mset(...symbols.flatMap((s) => [keys.latest(s), JSON.stringify({ symbol: s, seq: 1, ts: Date.now(), bid: 1, ask: 2, last: 1.5, pad })]))
  r.disconnect()
  const g = await startGateway(redis.url, {
    WSPS_REDIS_KEY_PREFIX: prefix, WSPS_SEND_HIGH_WATER_BYTES: P.highWater, WSPS_SEND_MAX_BYTES: P.sendMax, WSPS_RATE_PER_SEC: 500, WSPS_RATE_BURST: 500, WSPS_HEARTBEAT_MS: 120_000
  })
  const c = await TestClient.connect(g.wsUrl)
  t.after(async () => {
    c.ws.terminate()
    await g.stop('SIGKILL')
  })
  await c.sub(symbols)
  const socket = /** @type {import('node:net').Socket} */ (/** @type {any} */ (c.ws)._socket)
  socket.pause()
  const rss0 = (await g.metrics()).process_resident_memory_bytes
  const started = Date.now()
  let m = await g.metrics()
  // Each unsub + sub pair sends an ack and a ~25 KB snapshot the reader never reads.
  while (Date.now() - started < 6000 && m.wsps_gateway_connections > 0) {
    for (let i = 0; i < 20; i++) c.send({ op: i % 2 ? 'sub' : 'unsub', symbols })
    await sleep(50)
    m = await g.metrics()
  }
  t.diagnostic(`after ${Date.now() - started} ms: connections ${m.wsps_gateway_connections}, gateway RSS +${((m.process_resident_memory_bytes - rss0) / 1e6).toFixed(0)} MB`)
  assert.equal(m.wsps_gateway_connections, 0, 'the non-reader was cut off')
})
