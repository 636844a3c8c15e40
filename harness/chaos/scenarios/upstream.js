// Upstream failures in the `http` provider, against a local fake upstream
// that can answer, fail (HTTP 500), hang (time out) or reset connections:
// retries with backoff, the circuit breaker opens and keeps the upstream
// quiet, no pile-up of requests (in flight <= WSPS_UPSTREAM_MAX_INFLIGHT per
// replica), clear metrics and logs, and quotes resume once it heals.

import { createServer } from 'node:http'
import { LeanClient } from '../lib/lean-client.js'
import { Report } from '../lib/report.js'
import { sleep, startFetcher, startGateway, startRedis, waitFor } from '../../testkit/src/index.js'

/** @typedef {'ok' | 'error' | 'hang' | 'reset'} Mode */

/** A fake quote upstream: `GET /quotes?s=A,B` -> JSON array, or a failure. */
async function fakeUpstream () {
  const state = { mode: /** @type {Mode} */ ('ok'), inflight: 0, maxInflight: 0, requests: 0, byMode: /** @type {Record<string, number>} */ ({}) }
  const server = createServer((req, res) => {
    state.requests++
    state.byMode[state.mode] = (state.byMode[state.mode] ?? 0) + 1
    state.inflight++
    state.maxInflight = Math.max(state.maxInflight, state.inflight)
    let done = false
    const finish = () => {
      if (!done) {
        done = true
        state.inflight--
      }
    }
    res.on('close', finish)
    switch (state.mode) {
      case 'error':
        res.writeHead(500).end('upstream is sick')
        return
      case 'hang':
        return // never answers; the fetcher's timeout aborts it
      case 'reset':
        req.socket.destroy()
        return
      default: {
        const symbols = (new URL(req.url ?? '/', 'http://x').searchParams.get('s') ?? '').split(',').filter(Boolean)
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify(symbols.map((symbol) => ({ symbol, bid: 100 + Math.random(), ask: 101 + Math.random(), last: 100.5 + Math.random(), volume: Math.floor(Math.random() * 1e6) }))))
      }
    }
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)))
  const port = /** @type {import('node:net').AddressInfo} */ (server.address()).port
  return {
    state,
    url: `http://127.0.0.1:${port}/quotes?s={symbols}`,
    /** @param {Mode} mode */
    set (mode) {
      state.mode = mode
      state.maxInflight = state.inflight
    },
    connections: () => new Promise((resolve) => server.getConnections((_e, n) => resolve(n))),
    close: () => { server.closeAllConnections(); server.close() }
  }
}

/**
 * @param {{phaseMs?: number, symbols?: number}} params
 * @param {(line: string) => void} log
 */
export async function run (params, log) {
  const p = { phaseMs: 12_000, symbols: 100, ...params }
  const cfg = { timeoutMs: 400, retries: 2, backoffMs: 50, threshold: 5, cooldownMs: 2000, maxInflight: 4, intervalMs: 1000, batch: 10, fetchers: 2 }
  const report = new Report()
  const upstream = await fakeUpstream()
  const redis = await startRedis()
  /** @type {import('../../testkit/src/index.js').ServiceHandle[]} */
  const procs = []
  /** @type {LeanClient | null} */
  let client = null
  try {
    const gw = await startGateway(redis.url)
    const fetchers = await Promise.all(Array.from({ length: cfg.fetchers }, () => startFetcher(redis.url, {
      WSPS_PROVIDER: 'http',
      WSPS_UPSTREAM_URL: upstream.url,
      WSPS_UPSTREAM_TIMEOUT_MS: cfg.timeoutMs,
      WSPS_UPSTREAM_RETRIES: cfg.retries,
      WSPS_UPSTREAM_BACKOFF_MS: cfg.backoffMs,
      WSPS_UPSTREAM_BREAKER_THRESHOLD: cfg.threshold,
      WSPS_UPSTREAM_BREAKER_COOLDOWN_MS: cfg.cooldownMs,
      WSPS_UPSTREAM_MAX_INFLIGHT: cfg.maxInflight,
      WSPS_FETCH_INTERVAL_MS: cfg.intervalMs,
      WSPS_SCHEDULE_TICK_MS: 50,
      WSPS_JOB_BATCH_SIZE: cfg.batch,
      // More workers than request slots: the extra jobs must wait, not pile up.
      WSPS_WORKER_CONCURRENCY: 16,
      WSPS_LOG_LEVEL: 'info'
    })))
    procs.push(gw, ...fetchers)
    // startService keeps the last 200 lines; keep everything from here on.
    /** @type {string[]} */
    const logLines = fetchers.flatMap((f) => f.logs)
    for (const f of fetchers) f.proc.stdout.on('data', (d) => logLines.push(String(d)))
    const inflightLimit = cfg.maxInflight * cfg.fetchers
    const symbols = Array.from({ length: p.symbols }, (_, i) => `UP${i}`)
    client = await LeanClient.connect(gw.wsUrl)
    await client.sub(symbols)
    const c = client
    await waitFor(() => c.allSince(0, 'snap'), { timeout: 30_000, message: 'quotes from the upstream' })

    const fm = () => Promise.all(fetchers.map((f) => f.metrics()))
    /** @param {string} result */
    const requests = async (result) => (await fm()).reduce((n, m) => n + (m[`wsps_fetcher_upstream_requests_total{result="${result}"}`] ?? 0), 0)
    const breakers = async () => (await fm()).map((m) => m.wsps_fetcher_upstream_breaker_state)
    let maxQueue = 0
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        try {
          for (const m of await fm()) maxQueue = Math.max(maxQueue, m.wsps_fetcher_queue_length ?? 0)
        } catch {}
        await sleep(250)
      }
    })()

    /** Requests per second the upstream saw over `ms`. */
    const rate = async (/** @type {number} */ ms) => {
      const n0 = upstream.state.requests
      await sleep(ms)
      return (upstream.state.requests - n0) / (ms / 1000)
    }

    const okRate = await rate(3000)
    report.figure('upstream requests/s while healthy', okRate, 'req/s')

    /**
     * @param {Mode} mode
     * @param {string} label
     */
    const failurePhase = async (mode, label) => {
      upstream.set(mode)
      const at = Date.now()
      await waitFor(async () => (await breakers()).every((s) => s === 2), { timeout: p.phaseMs + 10_000, interval: 50, message: `breakers open (${label})` })
      const openedMs = Date.now() - at
      // While open: only a trial request per cooldown per replica.
      const openRate = await rate(Math.max(3000, p.phaseMs - openedMs))
      const maxInflight = upstream.state.maxInflight
      report.figure(`${label}: breaker open on every replica after`, openedMs, 'ms', { max: 10_000 })
      report.figure(`${label}: upstream requests/s while the breaker is open`, openRate, 'req/s', { max: Math.max(2, cfg.fetchers * 1000 / cfg.cooldownMs * 2) })
      report.figure(`${label}: requests in flight at the upstream, max`, maxInflight, 'requests', { max: inflightLimit })
      log(`${label}: breakers open after ${openedMs} ms; ${openRate.toFixed(1)} req/s while open (healthy: ${okRate.toFixed(1)}); max in flight ${maxInflight} (limit ${inflightLimit})`)
      // Heal: the next trial closes the breaker and quotes flow again.
      upstream.set('ok')
      const healedAt = Date.now()
      await waitFor(async () => (await breakers()).every((s) => s === 0), { timeout: cfg.cooldownMs + 15_000, interval: 50, message: `breakers closed (${label})` })
      await waitFor(() => c.allSince(healedAt), { timeout: cfg.cooldownMs + 15_000, interval: 20, message: `quotes again (${label})` })
      const resumeMs = Date.now() - healedAt
      report.figure(`${label}: quotes resumed after the upstream healed`, resumeMs, 'ms', { max: cfg.cooldownMs + cfg.intervalMs + 3000 })
      log(`${label}: healed; every symbol updated ${resumeMs} ms later`)
    }

    await failurePhase('error', 'HTTP 500s')
    await failurePhase('hang', 'timeouts')
    await failurePhase('reset', 'connection resets')

    sampling = false
    await sampler
    const counts = Object.fromEntries(await Promise.all(['ok', 'http_5xx', 'timeout', 'network', 'breaker_open'].map(async (r) => [r, await requests(r)])))
    report.details = { upstreamRequests: upstream.state.requests, byMode: upstream.state.byMode, metrics: counts, config: cfg }
    report.check('wsps_fetcher_upstream_requests_total counts every failure kind (http_5xx, timeout, network, breaker_open)',
      counts.http_5xx > 0 && counts.timeout > 0 && counts.network > 0 && counts.breaker_open > 0, counts)
    report.figure('fetcher job queue length, max (stale jobs are dropped, not piled)', maxQueue, 'jobs', { max: p.symbols / cfg.batch * 3 })
    const logs = logLines.join('\n')
    report.check('logs say when the breaker opens and closes', /circuit breaker changed state.*"open"|"state":"open".*circuit breaker/.test(logs) && /"state":"closed"/.test(logs), logs.split('\n').filter((l) => l.includes('breaker')).slice(-2))
    const causes = logs.split('\n').filter((l) => /timed out after|HTTP 500|upstream unreachable/.test(l))
    report.check('info-level logs name the upstream failure (timeout, HTTP 500, reset), not only "breaker open"',
      /timed out after/.test(logs) && /HTTP 500/.test(logs) && /upstream unreachable/.test(logs), `${causes.length} lines name a cause`)
    report.check('no fetcher or gateway exited; no gap at the client', procs.every((x) => x.proc.exitCode === null) && c.problems.length === 0, c.problems.slice(0, 3))
    report.figure('upstream connections still open at the end', await upstream.connections(), 'sockets', { max: inflightLimit * 2 })
    return report.toJSON()
  } finally {
    client?.terminate()
    await Promise.all(procs.map((x) => x.stop('SIGKILL')))
    await redis.close()
    upstream.close()
  }
}
