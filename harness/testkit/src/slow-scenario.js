// Slow consumers among live ones, on real processes. Shared by the fast test
// (harness/testkit/test/slow-consumer.test.js, ~20 among ~100) and
// `make chaos-slow` (1,000 among 9,000).
//
// Timeline: every client subscribes and gets its snapshot; a baseline phase
// measures live latency; then the slow clients pause their sockets (stop
// reading). Once the gateway reports them slow, the "wakers" resume at once
// (they must catch up through conflated updates, with no gap), the
// "sleepers" stay paused until the gateway cuts them off.

import { startFleet } from './fleet.js'
import { startRedis } from './redis.js'
import { startFetcher, startGateway } from './services.js'
import { Histogram } from './stats.js'
import { sleep, waitFor } from './wait.js'

/**
 * @typedef {object} SlowParams
 * @property {number} live
 * @property {number} slow
 * @property {number} wakers slow clients that resume as soon as the gateway sees them slow
 * @property {number} symbols
 * @property {number} liveSubs symbols per live client
 * @property {number} slowSubs symbols per slow client (the first ones: all slow clients share them)
 * @property {number} fetchIntervalMs
 * @property {number} batchMs
 * @property {number} highWater WSPS_SEND_HIGH_WATER_BYTES
 * @property {number} sendMax WSPS_SEND_MAX_BYTES
 * @property {number} slowCloseMs WSPS_SLOW_CLOSE_MS
 * @property {number} processes client processes
 * @property {number} baselineMs
 * @property {number} afterMs
 */

/** @type {SlowParams} */
export const FAST_PARAMS = Object.freeze({
  live: 100,
  slow: 20,
  wakers: 5,
  symbols: 100,
  liveSubs: 2,
  slowSubs: 100,
  fetchIntervalMs: 50,
  batchMs: 10,
  highWater: 16 * 1024,
  sendMax: 256 * 1024,
  slowCloseMs: 5000,
  processes: 1,
  baselineMs: 2000,
  afterMs: 2000
})

/**
 * @param {Partial<SlowParams>} overrides
 * @param {(line: string) => void} [log]
 */
export async function runSlowConsumers (overrides = {}, log = () => {}) {
  /** @type {SlowParams} */
  const p = { ...FAST_PARAMS, ...overrides }
  const symbols = Array.from({ length: p.symbols }, (_, i) => `SLW${i}`)
  const redis = await startRedis()
  /** @type {import('./services.js').ServiceHandle[]} */
  const procs = []
  /** @type {Awaited<ReturnType<typeof startFleet>> | null} */
  let fleet = null
  try {
    const [gw, fetcher] = await Promise.all([
      startGateway(redis.url, {
        WSPS_SEND_HIGH_WATER_BYTES: p.highWater,
        WSPS_SEND_MAX_BYTES: p.sendMax,
        WSPS_SLOW_CLOSE_MS: p.slowCloseMs,
        WSPS_MAX_SUBSCRIPTIONS: Math.max(200, p.slowSubs, p.liveSubs),
        WSPS_MAX_CONNECTIONS: p.live + p.slow + 1000,
        WSPS_BATCH_MS: p.batchMs,
        // A paused reader does not answer pings either; keep the heartbeat
        // from cutting it off before the slow-consumer rule does.
        WSPS_HEARTBEAT_MS: 120_000
      }),
      startFetcher(redis.url, {
        WSPS_FETCH_INTERVAL_MS: p.fetchIntervalMs,
        WSPS_SCHEDULE_TICK_MS: Math.max(10, Math.min(100, Math.floor(p.fetchIntervalMs / 4))),
        WSPS_WORKER_CONCURRENCY: 8
      })
    ])
    procs.push(gw, fetcher)
    const metrics = () => gw.metrics()

    fleet = await startFleet(p.processes)
    const f = fleet
    /** @type {{kind: 'live' | 'slow', role: string, symbols: string[]}[][]} */
    const liveShares = Array.from({ length: p.processes }, () => [])
    /** @type {{kind: 'live' | 'slow', role: string, symbols: string[]}[][]} */
    const wakerShares = Array.from({ length: p.processes }, () => [])
    /** @type {{kind: 'live' | 'slow', role: string, symbols: string[]}[][]} */
    const sleeperShares = Array.from({ length: p.processes }, () => [])
    for (let i = 0; i < p.live; i++) {
      const subs = Array.from({ length: p.liveSubs }, (_, k) => symbols[(i * 7919 + k * 104729) % symbols.length])
      liveShares[i % p.processes].push({ kind: 'live', role: 'live', symbols: [...new Set(subs)] })
    }
    for (let i = 0; i < p.slow; i++) {
      const shares = i < p.wakers ? wakerShares : sleeperShares
      shares[i % p.processes].push({ kind: 'slow', role: i < p.wakers ? 'waker' : 'sleeper', symbols: symbols.slice(0, p.slowSubs) })
    }
    /**
     * @param {{kind: string, role: string, symbols: string[]}[][]} shares
     * @param {boolean} subscribe false: connect only (subscribe later with the 'subscribe' command)
     */
    const connectAll = async (shares, subscribe) => {
      const t0 = Date.now()
      const results = await Promise.all(shares.map((clients, i) => f.call(i, { cmd: 'connect', url: gw.wsUrl, clients, subscribe, parallel: 50 })))
      const failed = results.reduce((n, r) => n + r.failed, 0)
      const total = shares.reduce((n, x) => n + x.length, 0)
      log(`${total - failed} ${shares.flat()[0]?.role ?? ''} clients connected${subscribe ? ' and subscribed' : ''} in ${Date.now() - t0} ms, ${failed} failed`)
      if (failed > total / 100) throw new Error(`${failed} of ${total} clients failed to connect`)
      return failed
    }
    const rssIdle = (await metrics()).process_resident_memory_bytes
    // Progress every 10 s (the gateway's view), for whoever watches the run.
    let watching = true
    const watcher = (async () => {
      let cpu0 = 0
      while (watching) {
        await sleep(10_000)
        if (!watching) break
        try {
          const m = await metrics()
          const cpu = m.process_cpu_seconds_total
          log(`  gateway: ${m.wsps_gateway_connections} connections, ${m.wsps_gateway_slow_clients} slow, RSS ${Math.round(m.process_resident_memory_bytes / 1e6)} MB, ` +
            `event-loop lag p99 ${Math.round((m.nodejs_eventloop_lag_p99_seconds ?? 0) * 1000)} ms, CPU ${Math.round((cpu - cpu0) * 10)}%`)
          cpu0 = cpu
        } catch {}
      }
    })()

    // 1. The live fleet, then a baseline.
    let failed = await connectAll(liveShares, true)
    await waitFor(async () => (await f.all({ cmd: 'snapshotted' })).every((r) => r.missing === 0), { timeout: 120_000, interval: 500, message: 'every live client snapshotted' })
    await f.all({ cmd: 'phase', name: 'baseline' })
    await sleep(p.baselineMs)
    const m0 = await metrics()

    // 2. Wakers stop reading until the gateway sees them slow, then catch up.
    let slowMax = 0
    let rssPeak = m0.process_resident_memory_bytes
    /** Sample RSS peaks only while sleepers are stuck (not after they are cut off). */
    let rssPeakOpen = true
    let sampling = true
    /** @type {{count: number, at: number} | null} first sample with at least `count` slow */
    let halfSlow = null
    let halfMark = Infinity
    const sampler = (async () => {
      while (sampling) {
        try {
          const m = await metrics()
          slowMax = Math.max(slowMax, m.wsps_gateway_slow_clients)
          if (rssPeakOpen) rssPeak = Math.max(rssPeak, m.process_resident_memory_bytes)
          if (halfSlow === null && m.wsps_gateway_slow_clients >= halfMark) halfSlow = { count: m.wsps_gateway_slow_clients, at: Date.now() }
        } catch {}
        await sleep(200)
      }
    })()
    await f.all({ cmd: 'phase', name: 'slow' })
    if (p.wakers > 0) {
      // They connect reading and all stop at the same instant, so they turn
      // slow together and can all be woken before WSPS_SLOW_CLOSE_MS.
      failed += await connectAll(wakerShares, true)
      await f.all({ cmd: 'pause', role: 'waker' })
      const wakersPausedAt = Date.now()
      await waitFor(async () => (await metrics()).wsps_gateway_slow_clients >= Math.ceil(0.5 * p.wakers), { timeout: 180_000, interval: 50, message: 'wakers seen as slow' })
      // Stay behind until the gateway has skipped more updates than there
      // are (waker, symbol) pairs: then at least one waker skipped two
      // updates of one symbol, and its catch-up snapshot must jump a seq
      // (one skip alone can be exactly the quote the snapshot carries). Not
      // so long that WSPS_SLOW_CLOSE_MS cuts them off; a wait that runs out
      // fails the run rather than resuming readers with nothing skipped.
      const conflatedAt = (await metrics()).wsps_gateway_conflated_total
      const enough = p.wakers * p.slowSubs
      await sleep(Math.min(p.slowCloseMs / 4, 2 * p.fetchIntervalMs + 200))
      await waitFor(async () => (await metrics()).wsps_gateway_conflated_total - conflatedAt > enough,
        { timeout: p.slowCloseMs / 2, interval: 50, message: `more than ${enough} updates conflated for the wakers` })
      await f.all({ cmd: 'resume', role: 'waker' })
      log(`wakers seen as slow ${Date.now() - wakersPausedAt} ms after they stopped reading; resumed`)
    }
    const mWake = await metrics()

    // 3. Sleepers connect (idle), then all subscribe at once and stop
    //    reading right after their snapshots; the gateway must cut them off.
    const sleepers = p.slow - p.wakers
    failed += await connectAll(sleeperShares, false)
    halfMark = Math.ceil(0.5 * sleepers)
    const pausedAt = Date.now()
    const subscribed = await f.all({ cmd: 'subscribe', role: 'sleeper', pause: true })
    log(`${subscribed.reduce((n, r) => n + r.subscribed, 0)} sleepers subscribed and stopped reading in ${Date.now() - pausedAt} ms`)
    await waitFor(async () => (await metrics()).wsps_gateway_connections <= p.live + p.wakers, { timeout: p.slowCloseMs + 120_000, interval: 250, message: 'sleepers cut off' })
    const cutOffMs = Date.now() - pausedAt
    rssPeakOpen = false
    const mCut = await metrics()
    const slowSeenMs = halfSlow ? /** @type {{at: number}} */ (halfSlow).at - pausedAt : NaN
    log(`half the sleepers slow after ${slowSeenMs} ms, peak ${slowMax}; all cut off ${cutOffMs} ms after they stopped reading`)
    const during = await f.all({ cmd: 'report' })
    await f.all({ cmd: 'phase', name: 'after' })
    await f.all({ cmd: 'resume', role: 'sleeper' })
    await sleep(p.afterMs)
    sampling = false
    watching = false
    await Promise.all([sampler, watcher])
    const m1 = await metrics()
    const end = await f.all({ cmd: 'report' })
    const rssBefore = m0.process_resident_memory_bytes

    const roles = mergeRoles(end.map((r) => r.roles))
    const rolesDuring = mergeRoles(during.map((r) => r.roles))
    const lat = (/** @type {any[]} */ reports, /** @type {string} */ phase) =>
      reports.reduce((h, r) => r.latency[phase] ? h.merge(r.latency[phase]) : h, new Histogram()).summary()
    const closes = Object.fromEntries(Object.entries(m1).filter(([k]) => k.startsWith('wsps_gateway_closes_total')).map(([k, v]) => [/code="(\d+)"/.exec(k)?.[1] ?? k, v]))
    return {
      params: p,
      connections: p.live + p.slow,
      failedToConnect: failed,
      slowSeenMs,
      cutOffMs,
      gateway: {
        rssIdle,
        rssBefore,
        rssPeak,
        rssAfter: m1.process_resident_memory_bytes,
        perConnectionBytes: (rssBefore - rssIdle) / p.live,
        perStuckBytes: sleepers > 0 ? (rssPeak - rssBefore) / sleepers : 0,
        boundPerStuckBytes: p.sendMax + p.slowSubs * 400,
        slowMax,
        slowAtEnd: m1.wsps_gateway_slow_clients,
        conflatedDuring: mCut.wsps_gateway_conflated_total - m0.wsps_gateway_conflated_total,
        conflatedWakers: mWake.wsps_gateway_conflated_total - m0.wsps_gateway_conflated_total,
        conflatedTotal: m1.wsps_gateway_conflated_total,
        closes,
        alive: gw.proc.exitCode === null
      },
      live: {
        ...roles.live,
        silentDuringSlow: rolesDuring.live?.silentInPhase ?? 0,
        latency: { baseline: lat(during, 'baseline'), slow: lat(during, 'slow'), after: lat(end, 'after') }
      },
      wakers: roles.waker ?? null,
      sleepers: roles.sleeper ?? null,
      problems: end.flatMap((r) => r.problems).slice(0, 20),
      clientRss: end.map((r) => r.rss)
    }
  } finally {
    await fleet?.close()
    await Promise.all(procs.map((x) => x.stop('SIGKILL')))
    await redis.close()
  }
}

/** @param {Record<string, any>[]} list */
function mergeRoles (list) {
  /** @type {Record<string, any>} */
  const out = {}
  for (const roles of list) {
    for (const [role, r] of Object.entries(roles)) {
      const o = out[role] ??= { clients: 0, open: 0, closes: {}, problems: 0, conflated: 0, quotes: 0, silentInPhase: 0 }
      for (const k of ['clients', 'open', 'problems', 'conflated', 'quotes', 'silentInPhase']) o[k] += r[k]
      for (const [code, n] of Object.entries(r.closes)) o.closes[code] = (o.closes[code] ?? 0) + n
    }
  }
  return out
}
