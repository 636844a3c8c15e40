#!/usr/bin/env node
// make bench: every server side by side in one run, fed by one Redis
// publisher, each pinned to its own core while the load generator, Redis
// and the publisher share the other one. Writes results.json and results.md.
//
//   node services/bench/src/bench.js --profile=full|quick --out=docs/benchmarks --loadgen=BIN
//   [--only=fanout,idle,nginx,sim] [--servers=wsps,naive,socketio,pushpin]

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { freePort, startRedis } from '@wsps/testkit'
import { SERVERS } from './servers.js'
import { startFleet, quantiles } from './fleet.js'
import { CpuMeter, rssBytes, tree } from './proc.js'
import { NICE, start, sleep, until, httpOk } from './spawn.js'
import { renderMarkdown } from './report.js'

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')))
const PROFILE = args.profile ?? 'quick'
const OUT = args.out ?? 'docs/benchmarks'
const LOADGEN = args.loadgen ?? join(process.env.WSPS_CACHE ?? join(process.env.HOME ?? '/root', '.cache/wsps'), 'bench/loadgen')
const ONLY = new Set((args.only ?? 'fanout,idle,nginx,sim').split(','))
const SERVER_NAMES = (args.servers ?? 'wsps,naive,socketio,pushpin').split(',')

/** Server under test on core 1; load generator, Redis, publisher, nginx on core 0. */
const SERVER_CORE = cpus().length > 1 ? '1' : null
const LOAD_CORE = cpus().length > 1 ? '0' : null

const PROFILES = {
  full: {
    conns: 10_000, procs: 4, symbols: 2000, k: 20, zipf: 1.0,
    startDeliveries: 3000, factor: 1.6, saturationDeliveries: 400_000, maxPublish: 5000, settleMs: 2000, measureMs: 5000, maxSteps: 12, latMeasureMs: 10_000, drainMs: 20_000,
    storm: 18_000, stormProcs: 4, idleExtra: 1500, readyTimeout: 100,
    nginxConns: 4000, nginxReps: 2, nginxDeliveries: 60_000,
    simProcs: [1, 2, 4], simConns: 6000, simDeliveries: 60_000, simMeasureMs: 6000
  },
  smoke: {
    conns: 200, procs: 1, symbols: 100, k: 5, zipf: 1.0,
    startDeliveries: 2000, factor: 2, saturationDeliveries: 10_000, maxPublish: 2000, settleMs: 1000, measureMs: 2000, maxSteps: 2, latMeasureMs: 2000, drainMs: 3000,
    storm: 300, stormProcs: 1, idleExtra: 50, readyTimeout: 20,
    nginxConns: 100, nginxReps: 1, nginxDeliveries: 2000,
    simProcs: [1, 2], simConns: 200, simDeliveries: 2000, simMeasureMs: 2000
  },
  quick: {
    conns: 2000, procs: 2, symbols: 1000, k: 20, zipf: 1.0,
    startDeliveries: 3000, factor: 2, saturationDeliveries: 200_000, maxPublish: 5000, settleMs: 1000, measureMs: 2500, maxSteps: 4, latMeasureMs: 3000, drainMs: 5000,
    storm: 3000, stormProcs: 2, idleExtra: 0, readyTimeout: 20,
    nginxConns: 1000, nginxReps: 1, nginxDeliveries: 20_000,
    simProcs: [1, 2], simConns: 2000, simDeliveries: 20_000, simMeasureMs: 2000
  }
}
const P = PROFILES[/** @type {keyof typeof PROFILES} */ (PROFILE)]
if (!P) throw new Error(`unknown profile ${PROFILE}`)

const P99_LIMIT_MS = 100
const KEEP_UP = 0.85
const log = (/** @type {string} */ msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`)

const runDir = mkdtempSync(join(tmpdir(), 'wsps-bench-'))
const started = Date.now()
/** @type {any} */
const results = {
  profile: PROFILE,
  startedAt: new Date(started).toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model, memGiB: Math.round(totalmem() / 2 ** 30), node: process.version, loadavgStart: loadavg() },
  params: P,
  placement: { serverCore: SERVER_CORE, loadCore: LOAD_CORE, nice: NICE },
  fanout: {},
  idle: {},
  nginx: null,
  sim: null
}

log(`profile ${PROFILE}; loadgen ${LOADGEN}; run dir ${runDir}`)
const redis = await startRedisPinned()
const redisUrl = redis.url
const publisher = start(process.execPath, [new URL('./publisher.js', import.meta.url).pathname, `--redis=${redisUrl}`, `--symbols=${P.symbols}`], { core: LOAD_CORE, name: 'publisher' })
await publisher.waitLine((l) => l.type === 'ready', 20_000)

try {
  if (ONLY.has('fanout')) {
    results.fanout = await fanoutAll(SERVER_NAMES)
    save()
  }
  if (ONLY.has('idle')) {
    // The issue compares wsps with the baseline (and variants of wsps);
    // Pushpin cannot take the storm here (see analysis.md).
    for (const name of SERVER_NAMES.filter((n) => n !== 'socketio' && n !== 'pushpin')) {
      try {
        results.idle[name] = await idleAndStorm(name)
      } catch (err) {
        log(`idle ${name} failed: ${/** @type {Error} */ (err).stack}`)
        results.idle[name] = { error: String(/** @type {Error} */ (err).message) }
      }
      save()
    }
  }
  if (ONLY.has('nginx')) {
    try {
      results.nginx = await nginxVsDirect()
    } catch (err) {
      log(`nginx failed: ${/** @type {Error} */ (err).stack}`)
      results.nginx = { error: String(/** @type {Error} */ (err).message) }
    }
    save()
  }
  if (ONLY.has('sim')) {
    try {
      results.sim = await capacitySim()
    } catch (err) {
      log(`sim failed: ${/** @type {Error} */ (err).stack}`)
      results.sim = { error: String(/** @type {Error} */ (err).message) }
    }
    save()
  }
} finally {
  publisher.send({ cmd: 'rate', rate: 0 })
  await publisher.stop()
  await redis.close()
  rmSync(runDir, { recursive: true, force: true })
}
results.machine.loadavgEnd = loadavg()
results.durationSeconds = Math.round((Date.now() - started) / 1000)
save()
log(`done in ${results.durationSeconds} s: ${OUT}/results.json, ${OUT}/results.md`)
process.exit(0)

function save () {
  mkdirSync(OUT, { recursive: true })
  writeFileSync(join(OUT, 'results.json'), JSON.stringify(results, null, 2) + '\n')
  writeFileSync(join(OUT, 'results.md'), renderMarkdown(results))
}

async function startRedisPinned () {
  const r = await startRedis()
  // startRedis spawns redis-server directly; pin it with the load generator.
  if (LOAD_CORE !== null) {
    const pid = execFileSync('sh', ['-c', `pgrep -f "redis-server 127.0.0.1:${r.port}" | head -1`]).toString().trim()
    if (pid) execFileSync('taskset', ['-pc', LOAD_CORE, pid], { stdio: 'ignore' })
    if (pid && NICE !== 0) execFileSync('renice', ['-n', String(NICE), '-p', pid], { stdio: 'ignore' })
    results.placement.redisPid = Number(pid)
  }
  return r
}

function redisPids () {
  return results.placement.redisPid ? [results.placement.redisPid] : []
}

/** @param {number} rate @param {string} [prefix] */
function setRate (rate, prefix = 'wsps') {
  publisher.send({ cmd: 'rate', rate: Math.round(rate), prefix })
}

/** @param {string} [prefix] */
async function setLast (prefix = 'wsps') {
  const from = publisher.lines.length
  publisher.send({ cmd: 'setLast', prefix })
  await publisher.waitLine((l) => l.type === 'setLast' && l.prefix === prefix, 10_000, from)
}

/**
 * @param {number} t0
 * @param {number} t1
 */
function published (t0, t1) {
  const ticks = publisher.lines.filter((l) => l.type === 'tick' && l.t > t0 && l.t <= t1)
  const n = ticks.reduce((a, l) => a + l.published, 0)
  return ticks.length ? n / ticks.length : 0
}

/**
 * Offered deliveries per second in a window: every quote published times the
 * subscribers of its symbol (exact, not the mean: with skewed popularity a
 * few seconds of random symbols differ a lot from the average).
 *
 * @param {number} t0
 * @param {number} t1
 * @param {number[]} subsPerSymbol
 */
function offered (t0, t1, subsPerSymbol) {
  const ticks = publisher.lines.filter((l) => l.type === 'tick' && l.t > t0 && l.t <= t1)
  let n = 0
  for (const l of ticks) for (const [i, c] of Object.entries(l.perSymbol ?? {})) n += c * (subsPerSymbol[Number(i)] ?? 0)
  return ticks.length ? n / ticks.length : 0
}

/**
 * One measured step at a publish rate.
 *
 * @param {{fleet: import('./fleet.js').Fleet, roots: () => number[], rate: number, settleMs: number, measureMs: number, prefix?: string}} o
 */
async function step ({ fleet, roots, rate, settleMs, measureMs, prefix = 'wsps' }) {
  setRate(rate, prefix)
  await sleep(settleMs)
  const meters = {
    server: new CpuMeter(roots),
    loadgen: new CpuMeter(fleet.pids),
    redis: new CpuMeter(redisPids),
    publisher: new CpuMeter(() => [publisher.pid])
  }
  const t0 = Date.now()
  await sleep(measureMs)
  const t1 = Date.now()
  const cpu = Object.fromEntries(Object.entries(meters).map(([k, m]) => [k, round(m.read(), 3)]))
  const rss = rssBytes(tree(roots()))
  await fleet.tickedAfter(t1)
  const w = fleet.window(t0, t1)
  const seconds = w.ticks / fleet.kids.length
  const pubPerSec = published(t0, t1)
  const expected = offered(t0, t1, fleet.subsPerSymbol)
  const delivered = seconds > 0 ? w.covered / seconds : 0
  const [p50, p99, p999] = quantiles(w.hist, [0.5, 0.99, 0.999])
  const publisherKeptUp = pubPerSec >= 0.9 * rate
  const keptUp = delivered >= KEEP_UP * expected
  return {
    rate: Math.round(rate),
    published: Math.round(pubPerSec),
    expected: Math.round(expected),
    delivered: Math.round(delivered),
    entries: Math.round(seconds > 0 ? w.entries / seconds : 0),
    frames: Math.round(seconds > 0 ? w.frames / seconds : 0),
    quotesPerFrame: w.frames ? round(w.entries / w.frames, 2) : 0,
    gaps: w.gaps,
    errors: w.errors,
    p50: round(p50, 1),
    p99: round(p99, 1),
    p999: round(p999, 1),
    cpu,
    rssMiB: round(rss / 2 ** 20, 1),
    perCore: cpu.server > 0.05 ? Math.round(delivered / cpu.server) : null,
    publisherKeptUp,
    keptUp,
    pass: p99 <= P99_LIMIT_MS && keptUp && publisherKeptUp
  }
}

/**
 * Fan-out, interleaved: every server holds its own client fleet at once (each
 * on its own Redis key prefix, fed by the same publisher), and the ramp
 * measures them in turn at each round, so a burst of load from other jobs
 * on the machine hits all of them alike instead of whichever ran then.
 *
 * @param {string[]} names
 */
async function fanoutAll (names) {
  /** @type {Record<string, any>} */
  const out = {}
  /** @type {any[]} */
  const subjects = []
  try {
    for (const name of names) {
      const prefix = `b${name}`
      log(`fanout: starting ${name}`)
      try {
        await setLast(prefix)
        const srv = await SERVERS[name].start({ redisUrl, core: SERVER_CORE, runDir, prefix })
        const subject = { name, prefix, srv, fleet: /** @type {any} */ (null), steps: /** @type {any[]} */ ([]), lastPass: null, firstFail: null, done: false, rate: 0 }
        subjects.push(subject)
        await sleep(500)
        const rssStart = rssBytes(tree(srv.roots()))
        const fleet = subject.fleet = await startFleet({
          bin: LOADGEN, adapter: srv.adapter, url: srv.url, conns: P.conns, procs: P.procs,
          symbols: P.symbols, k: P.k, zipf: P.zipf, core: LOAD_CORE, maxSeconds: 1500, concurrency: 64,
          readyTimeout: P.readyTimeout
        })
        log(`  ${fleet.conns}/${P.conns} connected and subscribed in ${(fleet.elapsedMs / 1000).toFixed(1)} s (${fleet.failed} failed) ${fleet.errors.slice(0, 2).join('; ')}`)
        await sleep(1000)
        subject.rate = P.startDeliveries / (fleet.totalSubs / P.symbols)
        out[name] = {
          label: SERVERS[name].label,
          conns: fleet.conns,
          failed: fleet.failed,
          totalSubs: fleet.totalSubs,
          avgSubsPerSymbol: round(fleet.totalSubs / P.symbols, 1),
          connectSeconds: round(fleet.elapsedMs / 1000, 1),
          rssStartMiB: round(rssStart / 2 ** 20, 1),
          rssIdleMiB: round(rssBytes(tree(srv.roots())) / 2 ** 20, 1)
        }
        if (fleet.conns < P.conns * 0.99) {
          out[name].partial = `only ${fleet.conns} of ${P.conns} clients connected and subscribed within ${P.readyTimeout} s: measured with those`
          log(`  ${name}: ${out[name].partial}`)
        }
        if (fleet.conns === 0) throw new Error(`no client connected: ${fleet.errors.slice(0, 3).join('; ')}`)
      } catch (err) {
        log(`fanout ${name} failed to start: ${/** @type {Error} */ (err).stack}`)
        out[name] = { ...(out[name] ?? {}), label: SERVERS[name].label, error: String(/** @type {Error} */ (err).message) }
        const s = subjects.find((x) => x.name === name)
        if (s) s.done = true
      }
    }
    const run = async (/** @type {any} */ x, /** @type {number} */ rate, /** @type {number} */ measureMs) => {
      const s = await step({ fleet: x.fleet, roots: x.srv.roots, rate, settleMs: P.settleMs, measureMs, prefix: x.prefix })
      setRate(0, x.prefix)
      log(`  ${x.name.padEnd(8)} rate ${s.rate}/s: delivered ${s.delivered}/s of ${s.expected} (${s.quotesPerFrame} q/frame), p50 ${s.p50} p99 ${s.p99} ms, cpu server ${s.cpu.server} loadgen ${s.cpu.loadgen} redis ${s.cpu.redis} ${s.pass ? 'ok' : 'LIMIT'}`)
      await sleep(1000) // let it drain before the next one is measured
      return s
    }
    // p99 over one window on a shared 2-core VM is one stall away from the
    // bound (seen for every server at trivial load, the naive one included):
    // a step that kept up and missed only the latency bound is measured once
    // more at the same rate, and the second window decides.
    const confirmed = async (/** @type {any} */ x, /** @type {number} */ rate, /** @type {{refine?: boolean}} */ flags = {}) => {
      const s = Object.assign(await run(x, rate, P.measureMs), flags)
      x.steps.push(s)
      if (s.pass || !s.keptUp || !s.publisherKeptUp) return s
      const again = Object.assign(await run(x, rate, P.measureMs), flags, { retry: true })
      x.steps.push(again)
      return again
    }
    for (let round_ = 0; round_ < P.maxSteps; round_++) {
      const active = subjects.filter((x) => !x.done)
      if (active.length === 0) break
      for (const x of active) {
        const s = await confirmed(x, x.rate)
        if (s.pass) {
          x.lastPass = s
          x.rate *= P.factor
        } else {
          x.firstFail = s
          x.done = true
          await drained(x.fleet, Math.min(10_000, P.drainMs))
        }
      }
    }
    // One refining step between the last pass and the first fail, then the latency run at 50% of max.
    for (const x of subjects.filter((y) => y.lastPass && y.firstFail)) {
      const s = await confirmed(x, Math.sqrt(x.lastPass.rate * x.firstFail.rate), { refine: true })
      if (!s.pass) await drained(x.fleet, Math.min(10_000, P.drainMs))
    }
    for (const x of subjects.filter((y) => y.fleet)) {
      const passing = x.steps.filter((/** @type {any} */ s) => s.pass && !s.saturation)
      x.best = passing.reduce((/** @type {any} */ a, /** @type {any} */ s) => (a === null || s.delivered > a.delivered ? s : a), null)
    }
    for (const x of subjects.filter((y) => y.best)) {
      x.at50 = await run(x, x.best.rate * 0.5, P.latMeasureMs)
    }
    // Saturation, last (its backlog must not leak into other steps): a fixed
    // high offered load, the same for every server (publish rate capped at
    // what the publisher sustains), where the server's core is the
    // bottleneck whatever the latency. Shows what the design does with a
    // full core (quotes per frame, deliveries per CPU-second).
    for (const x of subjects.filter((y) => y.fleet && y.fleet.totalSubs > 0)) {
      const rate = Math.min(P.maxPublish, P.saturationDeliveries / (x.fleet.totalSubs / P.symbols))
      const s = await run(x, rate, P.measureMs)
      s.saturation = true
      x.steps.push(s)
      x.saturated = s
      await drained(x.fleet, P.drainMs)
    }
    for (const x of subjects.filter((y) => y.fleet)) {
      let gatewayMetrics = null
      if (x.srv.metrics) {
        const m = await x.srv.metrics()
        gatewayMetrics = { quotesOut: m.wsps_gateway_quotes_out_total, conflated: m.wsps_gateway_conflated_total, slowClients: m.wsps_gateway_slow_clients }
      }
      Object.assign(out[x.name], {
        steps: x.steps,
        max: x.best,
        limit: x.firstFail ? limitReason(x.firstFail) : (x.steps.length >= P.maxSteps ? 'step limit (not saturated)' : 'n/a'),
        at50: x.at50 ?? null,
        saturated: x.saturated ?? null,
        gatewayMetrics
      })
    }
  } finally {
    for (const x of subjects) {
      setRate(0, x.prefix)
      await x.fleet?.stop()
      await x.srv.stop()
    }
    await sleep(1000)
  }
  return out
}

/**
 * Waits until a fleet receives nothing for a whole tick (a saturated
 * server's backlog drained) or timeoutMs passed.
 *
 * @param {import('./fleet.js').Fleet} fleet
 * @param {number} timeoutMs
 */
async function drained (fleet, timeoutMs) {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    const t = Date.now()
    await sleep(1100)
    await fleet.tickedAfter(Date.now())
    const w = fleet.window(t, Date.now())
    if (w.entries === 0 && w.snaps === 0) return true
  }
  log('  (backlog still draining after the saturation step)')
  return false
}

/** @param {any} s */
function limitReason (s) {
  const why = []
  if (s.p99 > P99_LIMIT_MS) why.push(`p99 ${s.p99} ms > ${P99_LIMIT_MS} ms`)
  if (!s.keptUp) why.push(`delivered ${s.delivered}/s < ${KEEP_UP} x expected ${s.expected}/s`)
  if (!s.publisherKeptUp) why.push(`publisher reached ${s.published} of ${s.rate}/s`)
  return why.join('; ')
}

/**
 * Connection storm (18k clients connect at once, each subscribes K symbols
 * and waits for their snapshot), then idle capacity: RSS per idle
 * subscribed connection, and whether more connections fit under the fd cap.
 *
 * @param {string} name
 */
async function idleAndStorm (name) {
  log(`storm + idle: ${name}`)
  await setLast()
  const srv = await SERVERS[name].start({ redisUrl, core: SERVER_CORE, runDir, inspect: true })
  /** @type {import('./fleet.js').Fleet[]} */
  const fleets = []
  try {
    await sleep(1000)
    // Memory is read after a full GC (through the inspector), before and
    // after: what stays live, not how much garbage the storm left behind.
    const heap0 = srv.gc ? await srv.gc() : null
    const rss0 = rssBytes(tree(srv.roots()))
    const cpu = new CpuMeter(srv.roots)
    const fleet = await startFleet({
      bin: LOADGEN, adapter: srv.adapter, url: srv.url, conns: P.storm, procs: P.stormProcs,
      symbols: P.symbols, k: P.k, zipf: P.zipf, core: LOAD_CORE, maxSeconds: 600, concurrency: 128, seed: 7
    })
    fleets.push(fleet)
    const stormCpu = cpu.read()
    const stormSeconds = Math.max(...fleet.readies.map((r) => r.elapsedMs)) / 1000
    const readyP = mergeSummaries(fleet.readies.map((r) => r.readyMs))
    const handshakeP = mergeSummaries(fleet.readies.map((r) => r.handshakeMs))
    log(`  storm: ${fleet.conns}/${P.storm} connected+snapshotted in ${stormSeconds.toFixed(1)} s (${Math.round(fleet.conns / stormSeconds)}/s), handshake p50 ${handshakeP.p50} p99 ${handshakeP.p99} ms`)
    await sleep(5000)
    const heap1 = srv.gc ? await srv.gc() : null
    const rss1 = rssBytes(tree(srv.roots()))
    const perConn = (rss1 - rss0) / Math.max(1, fleet.conns)
    // JS heap vs the rest (native sockets, allocator slack).
    const breakdown = heap0 && heap1 ? { heapUsedPerConn: Math.round((heap1.heapUsed - heap0.heapUsed) / fleet.conns) } : null
    if (breakdown) log(`  per connection: live JS heap ${breakdown.heapUsedPerConn} B of ${Math.round(perConn)} B RSS`)
    log(`  idle: RSS ${round(rss0 / 2 ** 20, 1)} -> ${round(rss1 / 2 ** 20, 1)} MiB = ${Math.round(perConn)} B per subscribed connection`)
    let held = fleet.conns
    if (P.idleExtra > 0) {
      const more = await startFleet({
        bin: LOADGEN, adapter: srv.adapter, url: srv.url, conns: P.idleExtra, procs: 1, first: P.storm,
        symbols: P.symbols, k: P.k, zipf: P.zipf, core: LOAD_CORE, maxSeconds: 600, concurrency: 64, seed: 7, waitSnap: true
      })
      fleets.push(more)
      held += more.conns
      await sleep(2000)
      log(`  held ${held} connections (tried ${P.storm + P.idleExtra}); fd cap 20000 per process`)
    }
    const rss2 = rssBytes(tree(srv.roots()))
    return {
      label: SERVERS[name].label,
      stormConns: fleet.conns,
      stormFailed: fleet.failed,
      stormSeconds: round(stormSeconds, 2),
      stormRatePerSec: Math.round(fleet.conns / stormSeconds),
      stormServerCpu: round(stormCpu, 2),
      handshakeMs: handshakeP,
      readyMs: readyP,
      rssBeforeMiB: round(rss0 / 2 ** 20, 1),
      rssIdleMiB: round(rss1 / 2 ** 20, 1),
      rssPerConnBytes: Math.round(perConn),
      memoryPerConn: breakdown,
      subsPerConn: P.k,
      tried: P.storm + P.idleExtra,
      held,
      rssHeldMiB: round(rss2 / 2 ** 20, 1)
    }
  } finally {
    for (const f of fleets) await f.stop()
    await srv.stop()
    await sleep(1000)
  }
}

/** @param {any[]} list per-process {n,p50,p90,p99,max} @returns {any} n-weighted (approximate) */
function mergeSummaries (list) {
  const n = list.reduce((a, s) => a + (s.n ?? 0), 0)
  const w = (/** @type {string} */ k) => round(list.reduce((a, s) => a + (s[k] ?? 0) * (s.n ?? 0), 0) / Math.max(1, n), 1)
  return { n, p50: w('p50'), p90: w('p90'), p99: w('p99'), max: round(Math.max(...list.map((s) => s.max ?? 0)), 1) }
}

/** nginx (the local ingress stand-in, same proxy settings as infra/local) in front of one gateway vs direct. */
async function nginxVsDirect () {
  log('nginx vs direct')
  await setLast()
  const srv = await SERVERS.wsps.start({ redisUrl, core: SERVER_CORE, runDir })
  const nginxPort = await freePort()
  const dir = join(runDir, 'nginx')
  mkdirSync(join(dir, 'tmp'), { recursive: true })
  writeFileSync(join(dir, 'nginx.conf'), `worker_processes 1;
worker_rlimit_nofile 20000;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
daemon off;
events { worker_connections 19000; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  upstream wsps_gateways { least_conn; server 127.0.0.1:${srv.port}; keepalive 16; }
  server {
    listen 127.0.0.1:${nginxPort} backlog=4096;
    location / {
      proxy_pass http://wsps_gateways;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_read_timeout 3600s;
      proxy_send_timeout 3600s;
      proxy_buffering off;
    }
  }
}
`)
  const nginxBin = ['/usr/sbin/nginx', 'nginx'].find((b) => { try { execFileSync(b, ['-v'], { stdio: 'ignore' }); return true } catch { return false } })
  if (!nginxBin) throw new Error('nginx not installed (make deps)')
  const nginx = start(nginxBin, ['-p', dir, '-c', join(dir, 'nginx.conf')], { core: LOAD_CORE, name: 'nginx', stdin: false })
  await until(() => httpOk(`http://127.0.0.1:${nginxPort}/healthz`), 10_000, 'nginx')
  const runs = []
  try {
    for (let rep = 0; rep < P.nginxReps; rep++) {
      for (const via of ['direct', 'nginx']) {
        const url = via === 'direct' ? srv.url : `ws://127.0.0.1:${nginxPort}`
        const fleet = await startFleet({
          bin: LOADGEN, adapter: 'wsps', url, conns: P.nginxConns, procs: 2,
          symbols: P.symbols, k: P.k, zipf: P.zipf, core: LOAD_CORE, maxSeconds: 300, concurrency: 64, seed: 11 + rep
        })
        const seconds = Math.max(...fleet.readies.map((r) => r.elapsedMs)) / 1000
        const hs = mergeSummaries(fleet.readies.map((r) => r.handshakeMs))
        const rate = P.nginxDeliveries / (fleet.totalSubs / P.symbols)
        const s = await step({ fleet, roots: via === 'direct' ? srv.roots : () => [...srv.roots(), nginx.pid], rate, settleMs: P.settleMs, measureMs: P.measureMs })
        setRate(0)
        runs.push({ via, rep, conns: fleet.conns, failed: fleet.failed, connectSeconds: round(seconds, 2), handshakesPerSec: Math.round(fleet.conns / seconds), handshakeMs: hs, step: s })
        log(`  ${via}: ${Math.round(fleet.conns / seconds)} handshakes/s (p50 ${hs.p50} p99 ${hs.p99} ms); at ${s.delivered} deliveries/s p50 ${s.p50} p99 ${s.p99} ms`)
        await fleet.stop()
        await sleep(1500)
      }
    }
  } finally {
    await nginx.stop(0)
    await srv.stop()
  }
  const med = (/** @type {string} */ via, /** @type {(r: any) => number} */ f) => median(runs.filter((r) => r.via === via).map(f))
  const summary = {}
  for (const via of ['direct', 'nginx']) {
    // @ts-ignore
    summary[via] = {
      handshakesPerSec: med(via, (r) => r.handshakesPerSec),
      handshakeP50: med(via, (r) => r.handshakeMs.p50),
      handshakeP99: med(via, (r) => r.handshakeMs.p99),
      p50: med(via, (r) => r.step.p50),
      p99: med(via, (r) => r.step.p99),
      delivered: med(via, (r) => r.step.delivered)
    }
  }
  return { runs, summary }
}

/**
 * Several gateway processes on this machine sharing a fixed client
 * population and publish rate: checks the capacity model's shape (Redis
 * egress grows with processes x symbols, per-process inbound does not shrink).
 */
async function capacitySim () {
  log('capacity sim')
  const out = []
  for (const n of P.simProcs) {
    await setLast()
    /** @type {import('./servers.js').ServerHandle[]} */
    const gws = []
    /** @type {import('./fleet.js').Fleet[]} */
    const fleets = []
    try {
      for (let i = 0; i < n; i++) gws.push(await SERVERS.wsps.start({ redisUrl, core: SERVER_CORE, runDir, env: { WSPS_NODE_NAME: `sim-${n}-${i}` } }))
      const per = Math.floor(P.simConns / n)
      for (let i = 0; i < n; i++) {
        fleets.push(await startFleet({
          bin: LOADGEN, adapter: 'wsps', url: gws[i].url, conns: per, procs: 1, first: i * per,
          symbols: P.symbols, k: P.k, zipf: P.zipf, core: LOAD_CORE, maxSeconds: 300, concurrency: 64, seed: 21
        }))
      }
      const totalSubs = fleets.reduce((a, f) => a + f.totalSubs, 0)
      const rate = P.simDeliveries / (totalSubs / P.symbols)
      const tBefore = Date.now()
      const before = await Promise.all(gws.map((g) => /** @type {any} */ (g.metrics)()))
      const meters = { gateways: new CpuMeter(() => gws.flatMap((g) => g.roots())), redis: new CpuMeter(redisPids) }
      setRate(rate)
      await sleep(P.settleMs)
      for (const m of Object.values(meters)) m.mark()
      const t0 = Date.now()
      await sleep(P.simMeasureMs)
      const t1 = Date.now()
      const cpu = { gateways: round(meters.gateways.read(), 3), redis: round(meters.redis.read(), 3) }
      setRate(0)
      await Promise.all(fleets.map((f) => f.tickedAfter(t1)))
      const after = await Promise.all(gws.map((g) => /** @type {any} */ (g.metrics)()))
      const tAfter = Date.now()
      const channels = after.map((m) => m.wsps_gateway_redis_channels)
      let covered = 0
      let seconds = 0
      /** @type {Map<number, number>} */
      const hist = new Map()
      for (const f of fleets) {
        const w = f.window(t0, t1)
        covered += w.covered
        seconds = Math.max(seconds, w.ticks)
        for (const [b, c] of w.hist) hist.set(b, (hist.get(b) ?? 0) + c)
      }
      const [p50, p99] = quantiles(hist, [0.5, 0.99])
      const pub = published(t0, t1)
      const quotesIn = after.reduce((a, m, i) => a + (m.wsps_gateway_quotes_in_total - before[i].wsps_gateway_quotes_in_total), 0)
      const row = {
        processes: n,
        conns: fleets.reduce((a, f) => a + f.conns, 0),
        publishedPerSec: Math.round(pub),
        redisChannelsPerProcess: Math.round(channels.reduce((a, b) => a + b, 0) / n),
        redisEgressPerSec: Math.round(pub * channels.reduce((a, b) => a + b, 0) / P.symbols),
        gatewayQuotesInPerSecPerProcess: Math.round(quotesIn / n / ((tAfter - tBefore) / 1000)),
        delivered: Math.round(covered / Math.max(1, seconds)),
        p50: round(p50, 1),
        p99: round(p99, 1),
        cpu
      }
      out.push(row)
      log(`  ${n} gateway(s): ${row.redisChannelsPerProcess} channels each, Redis egress ${row.redisEgressPerSec}/s, delivered ${row.delivered}/s, gateways cpu ${cpu.gateways}, redis cpu ${cpu.redis}, p99 ${row.p99} ms`)
    } finally {
      for (const f of fleets) await f.stop()
      for (const g of gws) await g.stop()
      await sleep(1000)
    }
  }
  return out
}

/** @param {number[]} xs */
function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN
}

/** @param {number} x @param {number} d */
function round (x, d) {
  const f = 10 ** d
  return Math.round(x * f) / f
}

void readFileSync
