// Live-connection fuzz: at least a million random and mutated frames from
// many connections (lib/fuzz.js), while a few hundred sockets trickle their
// upgrade headers (slowloris) and others connect and say nothing.
// Afterwards: the gateway is alive, its RSS bounded, every trickling socket
// was cut off by the headers timeout, a well-behaved client still works.

import { connect } from 'node:net'
import { LeanClient } from '../lib/lean-client.js'
import { Report } from '../lib/report.js'
import { runFuzz } from '../../testkit/src/fuzz.js'
import { upgradeHead } from '../../testkit/src/raw.js'
import { mb } from '../../testkit/src/stats.js'
import { sleep, startFetcher, startGateway, startRedis } from '../../testkit/src/index.js'

/** gateway.js: HEADERS_TIMEOUT_MS */
const HEADERS_TIMEOUT_MS = 10_000

/**
 * @param {number} port
 * @param {number} count
 * @param {number} spreadMs open them over this long
 * @returns {Promise<{closedAfter: number[], open: () => number, destroy: () => void}>}
 */
async function slowloris (port, count, spreadMs) {
  /** @type {number[]} */
  const closedAfter = []
  /** @type {import('node:net').Socket[]} */
  const sockets = []
  for (let i = 0; i < count; i++) {
    const s = connect({ port, host: '127.0.0.1' })
    const started = Date.now()
    // Half trickle the headers a byte a second, half send nothing at all.
    const head = upgradeHead({ headers: { 'X-Slow': 'z'.repeat(200) } })
    let at = 0
    const timer = i % 2 === 0 ? setInterval(() => { if (!s.destroyed) s.write(head[at++ % head.length]) }, 1000) : null
    s.on('close', () => {
      if (timer) clearInterval(timer)
      closedAfter.push(Date.now() - started)
    })
    s.on('error', () => {})
    s.on('data', () => {})
    sockets.push(s)
    await sleep(spreadMs / count)
  }
  return { closedAfter, open: () => sockets.filter((s) => !s.destroyed).length, destroy: () => { for (const s of sockets) s.destroy() } }
}

/**
 * @param {{frames?: number, lanes?: number, slowloris?: number, deadlineMs?: number, seed?: number}} params
 * @param {(line: string) => void} log
 */
export async function run (params, log) {
  const p = { frames: 1_000_000, lanes: 256, slowloris: 400, deadlineMs: 330_000, seed: 424242, ...params }
  const report = new Report()
  const redis = await startRedis()
  /** @type {import('../../testkit/src/index.js').ServiceHandle[]} */
  const procs = []
  try {
    const [gw, fetcher] = await Promise.all([
      startGateway(redis.url, { WSPS_RATE_PER_SEC: 5000, WSPS_RATE_BURST: 500, WSPS_DEMAND_LEASE_MS: 3000 }),
      startFetcher(redis.url, { WSPS_FETCH_INTERVAL_MS: 1000, WSPS_SCHEDULE_TICK_MS: 100 })
    ])
    procs.push(gw, fetcher)
    const rss = async () => (await gw.metrics()).process_resident_memory_bytes
    const rss0 = await rss()
    /** @type {{t: number, rss: number}[]} */
    const series = [{ t: 0, rss: rss0 }]
    const started = Date.now()
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        await sleep(2000)
        try { series.push({ t: Date.now() - started, rss: await rss() }) } catch {}
      }
    })()

    const loris = await slowloris(gw.port, p.slowloris, 5000)
    let lastLog = 0
    const stats = await runFuzz({
      url: gw.wsUrl,
      frames: p.frames,
      connections: p.lanes,
      seed: p.seed,
      deadlineMs: p.deadlineMs,
      onProgress: (s) => {
        if (s.ms - lastLog < 15_000) return
        lastLog = s.ms
        log(`fuzz: ${s.answered.toLocaleString('en-US')} frames answered (${Math.round(s.answered / (s.ms / 1000))}/s), ${s.connections} connections, RSS ${mb(series.at(-1)?.rss ?? 0)} MB, slowloris open ${loris.open()}`)
      }
    })
    sampling = false
    await sampler
    const rssEnd = await rss()
    const rssMax = Math.max(...series.map((x) => x.rss), rssEnd)

    // A well-behaved client on the same gateway still gets service.
    const c = await LeanClient.connect(gw.wsUrl)
    const subAt = Date.now()
    await c.sub(['FZ1', 'FZ2', 'WELL1'])
    let served = false
    for (let i = 0; i < 100 && !served; i++) {
      await sleep(100)
      served = c.allSince(subAt) && [...c.symbols.values()].every((s) => s.quotes >= 2)
    }
    c.terminate()

    // Slowloris: every trickling or silent socket cut off by the headers timeout.
    const lorisLimit = HEADERS_TIMEOUT_MS + 5000
    const waitUntil = Date.now() + 45_000
    while (loris.open() > 0 && Date.now() < waitUntil) await sleep(500)
    const lorisOpen = loris.open()
    loris.destroy()
    const lorisMax = Math.max(...loris.closedAfter)

    report.figure('fuzz frames answered by the gateway', stats.answered, 'frames', { min: p.frames })
    report.figure('fuzz frames sent', stats.sent, 'frames')
    report.figure('fuzz connections (closed by 4009/1007/1009 and replaced)', stats.connections, 'connections')
    report.figure('fuzz throughput', stats.answered / (stats.ms / 1000), 'frames/s')
    report.figure('gateway RSS before fuzz', mb(rss0), 'MB')
    report.figure('gateway RSS max during fuzz', mb(rssMax), 'MB', { max: mb(rss0) + 200 })
    report.figure('gateway RSS after fuzz', mb(rssEnd), 'MB', { max: mb(rss0) + 150 })
    report.check('fuzz: every frame answered with a coded error/ack/pong or a coded close; no stall, no other close', stats.violations.length === 0, stats.violations.slice(0, 5))
    report.check('gateway alive after fuzz', gw.proc.exitCode === null)
    report.check('a well-behaved client subscribes and gets snapshots and updates after the fuzz', served && c.problems.length === 0, c.problems)
    report.figure('slowloris sockets (trickled or silent upgrades)', p.slowloris, 'sockets')
    report.figure('slowloris: slowest cut-off after connect', lorisMax, 'ms')
    report.check(`slowloris: every socket cut off within headersTimeout + 5 s (${lorisLimit} ms)`, lorisOpen === 0 && lorisMax <= lorisLimit,
      `${lorisOpen} still open, slowest closed after ${lorisMax} ms`)
    report.check('slowloris: none left open after 45 s', lorisOpen === 0, `${lorisOpen} open`)
    report.details = { fuzz: { ...stats, violations: stats.violations.slice(0, 10) }, rssSeries: series.map((x) => [Math.round(x.t / 1000), mb(x.rss)]), lorisClosedAfter: { min: Math.min(...loris.closedAfter), max: lorisMax } }
    return report.toJSON()
  } finally {
    await Promise.all(procs.map((x) => x.stop('SIGKILL')))
    await redis.close()
  }
}
