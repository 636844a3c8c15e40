#!/usr/bin/env node
// make capacity: as many connections as TARGET on this one machine, the
// product's horizontal shape at full size. Redis, the bench publisher going
// round the symbols at RATE, one gateway process per 18,000 connections and
// one load generator per gateway (two fresh 127.0.x.y source addresses
// each), connected in waves; then a hold of HOLD seconds, an exact check of
// every connection, and the per-connection costs. Stops short where the
// machine stops (memory, ports, fds, time) and says which.
//
//   node harness/bench/src/capacity.js --target=N --hold=S --rate=R [--symbols=1000 --k=3
//     --heartbeat-ms=MS --ramp-seconds=S --out=DIR --loadgen=BIN --pids=FILE]
//   node harness/bench/src/capacity.js --kernel-needs --target=N   ("key value" lines for kernel.sh)
//
// harness/capacity/run.sh wraps it: kernel limits raised and restored, and
// every pid written to --pids killed, whatever happens.
//
// main() runs the steps in order: startBackends (Redis, publisher,
// gateways, their idle memory), startGuards, rampUp, holdAndCheck, the
// verdict, measureMemory; then, whatever happened, stopAll and writeReport.

import { setMaxListeners } from 'node:events'
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { sleep, startRedis } from '@wsps/testkit'
import { log, round as roundTo } from './bench-run.js'
import { LIMITS, extrapolate, parseMeminfo, parseSockstat, perConnection, plan, stopCause } from './capacity-plan.js'
import { renderSummary } from './capacity-report.js'
import { parseFlags } from './cli.js'
import { quantiles, startFleet } from './fleet.js'
import { goBin } from './go-bin.js'
import { CpuMeter, cpuSeconds, rssBytes } from '@wsps/testkit/proc'
import { SERVERS } from './servers.js'
import { start } from './spawn.js'

/**
 * Load generator flags: its memory, not the gateway's, is what bounds one
 * machine (docs/capacity.md), so it runs as event loops over non-blocking
 * sockets (-mode=epoll: a few hundred bytes per connection, not a goroutine
 * and its stack) with a low GC target. Ticks every TICK_MS, not every
 * second: the orchestrator keeps every tick line of every load generator
 * (56 of them at 1M, each line a latency histogram), and only the hold's
 * are needed.
 */
const TICK_MS = 10_000
const LOADGEN_ARGS = ['-mode=epoll', '-gogc=50', `-report-ms=${TICK_MS}`]
const MIB = 2 ** 20
/** @param {number} x @param {number} [d] */
const round = (x, d = 0) => roundTo(x, d)

/**
 * The run's settings from its flags, with the defaults of the full run
 * (TARGET 1,000,000) or of a smaller one.
 *
 * @param {string[]} argv
 */
function settings (argv) {
  // Numbers as strings: `--hold=` means the default.
  const args = parseFlags({
    target: { type: 'string' },
    hold: { type: 'string' },
    rate: { type: 'string' },
    symbols: { type: 'string' },
    k: { type: 'string' },
    'heartbeat-ms': { type: 'string' },
    'ramp-seconds': { type: 'string' },
    concurrency: { type: 'string' },
    out: { type: 'string' },
    loadgen: { type: 'string' },
    pids: { type: 'string' },
    'kernel-needs': { type: 'boolean' }
  }, argv)
  /** @param {'target' | 'hold' | 'rate' | 'symbols' | 'k' | 'heartbeat-ms' | 'ramp-seconds' | 'concurrency'} name @param {number} dflt */
  const num = (name, dflt) => {
    const v = args[name] === undefined || args[name] === '' ? dflt : Number(args[name])
    if (!Number.isFinite(v) || v < 0) throw new RangeError(`--${name}: a number >= 0, not ${args[name]}`)
    return v
  }
  const TARGET = num('target', 1_000_000)
  /** The committed result is the full run's only. */
  const FULL = TARGET === 1_000_000
  // The full run's defaults are the settings it held with (mk/capacity.mk, docs/capacity.md).
  const HOLD = num('hold', FULL ? 400 : 120)
  const RATE = num('rate', FULL ? 5 : 20)
  const SYMBOLS = num('symbols', 1000)
  const K = num('k', 3)
  /** Server ping interval for the run (documented in docs/capacity.md, "Heartbeat at scale"). */
  const HEARTBEAT_MS = num('heartbeat-ms', FULL ? 120_000 : 30_000)
  /** The ramp's time budget: at least 400 connections a second, never under five minutes. */
  const RAMP_SECONDS = num('ramp-seconds', Math.max(300, Math.ceil(TARGET / 400)))
  /** Handshakes in flight per load generator: on a busy machine connecting is bound by scheduling delay, not by work. */
  const CONCURRENCY = num('concurrency', 200)
  const OUT = args.out ?? '.run/capacity'
  const LOADGEN = args.loadgen ?? goBin().loadgen
  const PIDS = args.pids ?? null
  return { TARGET, FULL, HOLD, RATE, SYMBOLS, K, HEARTBEAT_MS, RAMP_SECONDS, CONCURRENCY, OUT, LOADGEN, PIDS, kernelNeeds: Boolean(args['kernel-needs']) }
}

/** @typedef {ReturnType<typeof settings>} Settings */

const meminfo = () => parseMeminfo(readFileSync('/proc/meminfo', 'utf8'))
const sockstat = () => parseSockstat(readFileSync('/proc/net/sockstat', 'utf8'))
const tcpMemMax = () => Number(readFileSync('/proc/sys/net/ipv4/tcp_mem', 'utf8').trim().split(/\s+/)[2])

/**
 * What the steps share: the settings and plan, everything started (for
 * stopAll), and the results they fill in.
 *
 * @typedef {object} Run
 * @property {Settings} s
 * @property {ReturnType<typeof plan>} P
 * @property {[number, number]} portRange
 * @property {number} started
 * @property {string} runDir
 * @property {any} results capacity.json
 * @property {import('./servers.js').ServerHandle[]} gws
 * @property {import('./fleet.js').Fleet[]} fleets
 * @property {ReturnType<typeof start> | null} publisher
 * @property {Awaited<ReturnType<typeof startRedis>> | null} redis
 * @property {number} redisPid
 * @property {NodeJS.Timeout | undefined} monitor
 */

/**
 * @param {string[]} argv
 * @returns {Promise<number>} the exit status: 1 when the run stopped short
 */
async function main (argv) {
  const s = settings(argv)
  const portRange = /** @type {[number, number]} */ (readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number))
  const P = plan({ target: s.TARGET, holdSeconds: s.HOLD, rate: s.RATE, symbols: s.SYMBOLS, k: s.K, portRange })

  if (s.kernelNeeds) {
    for (const [k, v] of Object.entries(P.kernel)) console.log(`${k} ${v}`)
    return 0
  }

  // Everything is bounded: the ramp by RAMP_SECONDS, the hold by HOLD, the
  // rest by this watchdog (exiting kills every child: @wsps/testkit/process).
  const WATCHDOG_S = s.RAMP_SECONDS + s.HOLD + 600
  setTimeout(() => { log(`watchdog: still running after ${WATCHDOG_S} s, giving up`); process.exit(3) }, WATCHDOG_S * 1000).unref()

  const started = Date.now()
  const runDir = mkdtempSync(join(tmpdir(), 'wsps-capacity-'))
  mkdirSync(s.OUT, { recursive: true })
  /** @type {Run} */
  const run = {
    s,
    P,
    portRange,
    started,
    runDir,
    results: {
      target: s.TARGET,
      held: 0,
      startedAt: new Date(started).toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, memGiB: round(totalmem() / 2 ** 30, 1), kernel: release(), node: process.version, loadavgStart: loadavg() },
      params: { holdSeconds: s.HOLD, rate: s.RATE, symbols: s.SYMBOLS, k: s.K, zipf: 0, heartbeatMs: s.HEARTBEAT_MS, rampSeconds: s.RAMP_SECONDS, concurrency: s.CONCURRENCY, loadgenArgs: LOADGEN_ARGS, perGateway: LIMITS.perGateway, portRange },
      plan: { gateways: P.gateways, loadgens: P.loadgens, sourceIps: P.sourceIps, connsPerIp: P.connsPerIp, portsPerIp: P.portsPerIp, waves: P.waves.length, cycleSeconds: P.cycleSeconds, deliveriesPerSecond: P.deliveriesPerSecond, kernel: P.kernel }
    },
    gws: [],
    fleets: [],
    publisher: null,
    redis: null,
    redisPid: 0,
    monitor: undefined
  }
  log(`target ${s.TARGET}: ${P.gateways} gateways + ${P.loadgens} load generators (${P.connsPerGateway[0]} connections each, ${P.sourceIps} source addresses, ${P.connsPerIp} connections per address of ${P.portsPerIp} ports), ${P.waves.length} waves; publisher ${s.RATE}/s round ${s.SYMBOLS} symbols (every ${P.cycleSeconds} s), hold ${s.HOLD} s`)

  try {
    const base = await startBackends(run)
    const guards = startGuards(run, base.memBefore)
    const ramp = await rampUp(run, guards)
    const hold = await holdAndCheck(run, ramp.ramped)
    // The verdict first: what follows (a full GC of every gateway) may fail
    // on an overloaded machine, and must not take the run's result with it.
    run.results.stop = stopCause({ held: hold.check.open, target: s.TARGET, ramped: ramp.ramped, guard: guards.guard, errors: ramp.errors, holdErrors: hold.holdErrors, closes: run.results.hold.gatewayClosesByCode, rampTimedOut: ramp.rampTimedOut })
    await measureMemory(run, base, hold, guards)
  } finally {
    await stopAll(run)
    writeReport(run)
  }
  return run.results.stop ? 1 : 0
}

/**
 * @param {Run} run
 * @param {number[]} pids written to --pids, for run.sh to kill whatever happens
 */
function remember (run, pids) {
  if (run.s.PIDS) appendFileSync(run.s.PIDS, pids.map((p) => `${p}\n`).join(''))
}

/** @param {Run} run */
const gatewayPids = (run) => run.gws.flatMap((g) => g.roots())

/**
 * Redis, the publisher (not publishing yet), the gateways a wave at a
 * time; then their memory before any connection, and the publisher on.
 *
 * @param {Run} run
 */
async function startBackends (run) {
  const { s, P } = run
  const redis = run.redis = await startRedis()
  const redisUrl = redis.url
  run.redisPid = redis.pid
  if (run.redisPid) remember(run, [run.redisPid])
  const publisher = run.publisher = start(process.execPath, [new URL('./publisher.js', import.meta.url).pathname, `--redis=${redis.url}`, `--symbols=${s.SYMBOLS}`, '--order=cycle'], { name: 'publisher' })
  remember(run, [publisher.pid])
  await publisher.waitLine((l) => l.type === 'ready', 30_000)

  // Gateways, a few at a time (each takes a second of CPU to start).
  for (const batch of P.waves) {
    const started = await Promise.all(batch.map(() => SERVERS.wsps.start({
      redisUrl,
      core: null,
      runDir: run.runDir,
      inspect: true,
      env: { WSPS_MAX_CONNECTIONS: String(LIMITS.perGateway), WSPS_HEARTBEAT_MS: String(s.HEARTBEAT_MS) }
    })))
    for (const g of started) remember(run, g.roots())
    run.gws.push(...started)
  }
  const gws = run.gws
  await sleep(1000)
  // Memory before any connection, after a full GC (as `make bench` reads idle memory).
  /** @type {number[]} */
  const rssBase = []
  /** V8 heap after the GC: unlike RSS, no allocator slack or freed pages in it. @type {(number | null)[]} */
  const heapBase = []
  for (const g of gws) {
    heapBase.push((await g.gc?.())?.heapUsed ?? null)
    rssBase.push(rssBytes(g.roots()))
  }
  const memBefore = meminfo()
  const sockBefore = sockstat()
  log(`${gws.length} gateways up, ${round(rssBase.reduce((a, b) => a + b, 0) / gws.length / MIB, 1)} MiB each; machine: ${round(memBefore.MemAvailable / MIB)} MiB available`)
  publisher.send({ cmd: 'rate', rate: s.RATE })
  return { rssBase, heapBase, memBefore, sockBefore }
}

/**
 * Guards, checked every second from the ramp to the end of the hold: the
 * first to trip stops the ramp (the loadgens stop connecting) and names the cause.
 *
 * @param {Run} run
 * @param {ReturnType<typeof meminfo>} memBefore
 */
function startGuards (run, memBefore) {
  const reserve = Math.max(2 ** 30, 0.05 * memBefore.MemTotal)
  const ac = new AbortController()
  // Every fleet (one per gateway: 56 at 1M) listens for the stop.
  setMaxListeners(run.P.loadgens + 1, ac.signal)
  const guards = {
    signal: ac.signal,
    /** @type {string | null} */
    guard: null,
    minAvailable: memBefore.MemAvailable,
    maxTcpMem: 0
  }
  const trip = (/** @type {string} */ why) => {
    if (guards.guard) return
    guards.guard = why
    log(`guard: ${why}`)
    ac.abort()
  }
  run.monitor = setInterval(() => {
    const m = meminfo()
    guards.minAvailable = Math.min(guards.minAvailable, m.MemAvailable)
    if (m.MemAvailable < reserve) trip(`memory: ${round(m.MemAvailable / MIB)} MiB available, under the ${round(reserve / MIB)} MiB reserve`)
    const pages = sockstat()['TCP.mem'] ?? 0
    guards.maxTcpMem = Math.max(guards.maxTcpMem, pages)
    if (pages > 0.9 * tcpMemMax()) trip(`kernel-socket-memory: TCP buffers at ${pages} pages of the ${tcpMemMax()}-page tcp_mem limit`)
    const dead = run.gws.find((g) => !isAlive(g.roots()[0]))
    if (dead) trip(`gateway-exit: the gateway on port ${dead.port} exited`)
  }, 1000)
  return guards
}

/**
 * Ramp: one fleet per gateway, a wave of fleets at a time, within the
 * ramp's time budget and until a guard trips or a wave comes back short.
 *
 * @param {Run} run
 * @param {ReturnType<typeof startGuards>} guards
 */
async function rampUp (run, guards) {
  const { s, P, gws, fleets } = run
  const rampStart = performance.now()
  const rampDeadline = rampStart + s.RAMP_SECONDS * 1000
  const rampCpu = meters(run)
  const waves = []
  let rampTimedOut = false
  for (const wave of P.waves) {
    const left = Math.floor((rampDeadline - performance.now()) / 1000)
    if (guards.guard) break
    if (left < 5) { rampTimedOut = true; break }
    const t0 = performance.now()
    const ws = await Promise.all(wave.map((g) => startFleet({
      bin: s.LOADGEN,
      adapter: 'wsps',
      url: gws[g].url,
      conns: P.connsPerGateway[g],
      procs: 1,
      first: P.connsPerGateway.slice(0, g).reduce((a, b) => a + b, 0),
      symbols: s.SYMBOLS,
      k: s.K,
      zipf: 0,
      seed: 1,
      concurrency: s.CONCURRENCY,
      waitSnap: true,
      extraArgs: LOADGEN_ARGS,
      core: null,
      maxSeconds: left + s.HOLD + 300,
      readyTimeout: left,
      signal: guards.signal
    })))
    for (const f of ws) remember(run, f.pids())
    fleets.push(...ws)
    const n = ws.reduce((a, f) => a + f.conns, 0)
    const seconds = (performance.now() - t0) / 1000
    const failed = ws.reduce((a, f) => a + f.failed, 0)
    waves.push({ gateways: wave.length, conns: n, failed, seconds: round(seconds, 1), perSecond: Math.round(n / seconds) })
    const held = fleets.reduce((a, f) => a + f.conns, 0)
    log(`wave ${waves.length}/${P.waves.length}: ${n} ready in ${seconds.toFixed(1)} s (${Math.round(n / seconds)}/s), ${failed} not; ${held} so far; ${round(meminfo().MemAvailable / MIB)} MiB available`)
    if (failed > 0) { rampTimedOut = performance.now() >= rampDeadline - 1000; break }
  }
  const rampSeconds = (performance.now() - rampStart) / 1000
  const ramped = fleets.reduce((a, f) => a + f.conns, 0)
  const errors = fleets.flatMap((f) => f.errors)
  // The load generators started during the ramp: all their CPU time is the ramp's.
  const rampCpuRead = { ...rampCpu.read(), loadgens: round(cpuSeconds(fleets.flatMap((f) => f.pids())) / rampSeconds, 2) }
  run.results.ramp = { seconds: round(rampSeconds, 1), ready: ramped, connectPerSecond: Math.round(ramped / rampSeconds), waves, cpu: rampCpuRead, errorsSample: errors.slice(0, 10), guard: guards.guard }
  log(`ramp: ${ramped} connections subscribed (snapshot of all ${s.K} symbols) in ${rampSeconds.toFixed(1)} s = ${Math.round(ramped / rampSeconds)}/s`)
  return { ramped, errors, rampTimedOut }
}

/**
 * Hold: quotes keep flowing; then the exact check of every connection and
 * the latency of every quote delivered during the hold.
 *
 * @param {Run} run
 * @param {number} ramped connections the ramp got ready
 */
async function holdAndCheck (run, ramped) {
  const { s, fleets } = run
  const before = await gatewayCloses(run)
  await Promise.all(fleets.map((f) => f.command('hold')))
  const holdCpu = meters(run)
  const t0 = Date.now()
  log(`hold ${s.HOLD} s`)
  await sleep(s.HOLD * 1000)
  const t1 = Date.now()
  const cpuHold = holdCpu.read()
  const checks = (await Promise.all(fleets.map((f) => f.command('check', 120_000)))).flat()
  const sum = (/** @type {string} */ k) => checks.reduce((a, c) => a + c[k], 0)
  const check = { ready: sum('ready'), open: sum('open'), quoted: sum('quoted'), lostSample: checks.flatMap((c) => c.lost).slice(0, 20), unquotedSample: checks.flatMap((c) => c.unquoted).slice(0, 20) }
  await Promise.all(fleets.map((f) => f.tickedAfter(t1, TICK_MS + 5000)))
  /** @type {Map<number, number>} */
  const hist = new Map()
  let delivered = 0
  for (const f of fleets) {
    const w = f.window(t0, t1)
    delivered += w.entries
    for (const [b, c] of w.hist) hist.set(b, (hist.get(b) ?? 0) + c)
  }
  const [p50, p99, p999] = quantiles(hist, [0.5, 0.99, 0.999])
  const after = await gatewayCloses(run)
  // Errors the load generators reported after their ready line: connections lost in the hold.
  const holdErrors = fleets.flatMap((f) => f.kids.flatMap((k) => k.lines.slice(k.lines.findIndex((l) => l.type === 'ready') + 1).filter((l) => l.type === 'error').map((l) => `conn ${l.conn}: ${l.error}`)))
  const results = run.results
  results.held = check.open
  results.hold = {
    seconds: round((t1 - t0) / 1000, 1),
    check,
    // Against the load generators' own count of ready connections: a
    // handshake in flight when the ramp was cut can still complete (the 1M
    // run: 4 more than the ramp's count), and those are held and checked too.
    everyConnectionQuoted: check.quoted === check.ready && check.open === check.ready && check.ready >= ramped,
    delivered,
    deliveredPerSecond: Math.round(delivered / ((t1 - t0) / 1000)),
    // Every quote entry the load generators received during the hold, not a sample.
    latencyMs: { n: [...hist.values()].reduce((a, b) => a + b, 0), p50: round(p50, 1), p99: round(p99, 1), p999: round(p999, 1) },
    cpu: cpuHold,
    gatewayClosesByCode: diffCounts(before, after),
    loadgenErrors: { n: holdErrors.length, sample: holdErrors.slice(0, 10) }
  }
  log(`check: ${check.ready} ready, ${check.open} still open, ${check.quoted} quoted during the hold; latency p50 ${round(p50, 1)} p99 ${round(p99, 1)} ms over ${results.hold.latencyMs.n} deliveries`)
  return { check, checks, holdErrors }
}

/**
 * Memory at the end of the hold: the kernel's now, the gateways after a
 * full GC. A GC the inspector does not answer (the 1M run: at load 121,
 * past its 60 s) leaves that gateway's RSS as read without one, named.
 * Then the cost per connection, and what 1M and 10M would take.
 *
 * @param {Run} run
 * @param {Awaited<ReturnType<typeof startBackends>>} base
 * @param {Awaited<ReturnType<typeof holdAndCheck>>} hold
 * @param {ReturnType<typeof startGuards>} guards
 */
async function measureMemory (run, { rssBase, heapBase, memBefore, sockBefore }, { check, checks }, guards) {
  const { gws, fleets } = run
  const memHeld = meminfo()
  const sockHeld = sockstat()
  const rssHeld = []
  const heapHeld = []
  /** @type {number[]} */
  const gcFailed = []
  for (const g of gws) {
    try {
      heapHeld.push((await g.gc?.())?.heapUsed ?? null)
    } catch (err) {
      heapHeld.push(null)
      gcFailed.push(g.port)
      log(`gateway on port ${g.port}: no full GC (${/** @type {Error} */ (err).message}); its RSS is read as is`)
    }
    rssHeld.push(rssBytes(g.roots()))
  }
  const loadgenRss = rssBytes(fleets.flatMap((f) => f.pids()))
  // The load generators' own account (Go runtime): stacks vs heap, per held connection.
  const goMem = (/** @type {string} */ k) => Math.round(checks.reduce((acc, c) => acc + (c.mem?.[k] ?? 0), 0) / Math.max(1, check.open))
  const per = perConnection({
    held: check.open,
    gatewayRssBase: rssBase.reduce((a, b) => a + b, 0),
    gatewayRssHeld: rssHeld.reduce((a, b) => a + b, 0),
    loadgenRssHeld: loadgenRss,
    memBefore,
    memHeld,
    sockHeld
  })
  const gatewayBase = rssBase.reduce((a, b) => a + b, 0) / gws.length
  run.results.memory = {
    perConnectionBytes: Object.fromEntries(Object.entries(per).map(([k, v]) => [k, Math.round(v)])),
    gateways: gws.map((g, j) => ({ port: g.port, conns: fleets[j]?.conns ?? 0, rssBaseMiB: round(rssBase[j] / MIB, 1), rssHeldMiB: round(rssHeld[j] / MIB, 1), perConnBytes: fleets[j]?.conns ? Math.round((rssHeld[j] - rssBase[j]) / fleets[j].conns) : null, heapPerConnBytes: perConnHeap(heapBase[j], heapHeld[j], fleets[j]?.conns ?? 0) })),
    gatewayBaseMiB: round(gatewayBase / MIB, 1),
    gatewaysWithoutGc: gcFailed,
    loadgenRssMiB: round(loadgenRss / MIB, 1),
    loadgenGoPerConnBytes: { stackInuse: goMem('stackInuse'), heapInuse: goMem('heapInuse'), heapAlloc: goMem('heapAlloc'), sys: goMem('sys') },
    redisRssMiB: round(rssBytes(run.redisPid ? [run.redisPid] : []) / MIB, 1),
    machine: { totalMiB: round(memHeld.MemTotal / MIB), availableBeforeMiB: round(memBefore.MemAvailable / MIB), availableHeldMiB: round(memHeld.MemAvailable / MIB), availableMinMiB: round(guards.minAvailable / MIB), slabBeforeMiB: round(memBefore.Slab / MIB), slabHeldMiB: round(memHeld.Slab / MIB) },
    sockstatBefore: sockBefore,
    sockstatHeld: sockHeld,
    tcpMemMaxPagesSeen: guards.maxTcpMem
  }
  const extraBase = { gatewayBase, loadgenBase: 0 }
  run.results.extrapolated = [1_000_000, 10_000_000].map((t) => {
    const e = extrapolate(per, extraBase, t)
    return { target: t, gatewayProcs: e.gatewayProcs, gatewaysGiB: round(e.gateways / 2 ** 30, 1), loadgensGiB: round(e.loadgens / 2 ** 30, 1), kernelGiB: round(e.kernel / 2 ** 30, 1), totalGiB: round(e.total / 2 ** 30, 1) }
  })
}

/**
 * Stops everything the run started, whatever happened.
 *
 * @param {Run} run
 */
async function stopAll (run) {
  clearInterval(run.monitor)
  log('stopping')
  await Promise.all(run.fleets.map((f) => f.stop()))
  await Promise.all(run.gws.map((g) => g.stop()))
  if (run.publisher) {
    run.publisher.send({ cmd: 'rate', rate: 0 })
    await run.publisher.stop()
  }
  await run.redis?.close()
  rmSync(run.runDir, { recursive: true, force: true })
}

/**
 * capacity.json and capacity.txt in --out (the full run's also in
 * docs/benchmarks), and the summary on stdout.
 *
 * @param {Run} run
 */
function writeReport (run) {
  const { s, results } = run
  results.machine.loadavgEnd = loadavg()
  results.durationSeconds = Math.round((Date.now() - run.started) / 1000)
  const summary = renderSummary(results)
  writeFileSync(join(s.OUT, 'capacity.json'), JSON.stringify(results, null, 2) + '\n')
  writeFileSync(join(s.OUT, 'capacity.txt'), summary)
  if (s.FULL && results.hold) writeFileSync('docs/benchmarks/capacity.json', JSON.stringify(results, null, 2) + '\n')
  process.stdout.write(summary)
  log(`wrote ${s.OUT}/capacity.json and capacity.txt${s.FULL ? ' and docs/benchmarks/capacity.json' : ''}`)
}

/**
 * A gateway's V8 heap per connection, after full GCs; null without both GCs.
 *
 * @param {number | null} base
 * @param {number | null} held
 * @param {number} conns
 */
function perConnHeap (base, held, conns) {
  return base === null || held === null || conns === 0 ? null : Math.round((held - base) / conns)
}

/** @param {number} pid */
function isAlive (pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * CPU meters of everything in the run, in cores.
 *
 * @param {Run} run
 */
function meters (run) {
  const m = {
    gateways: new CpuMeter(() => gatewayPids(run)),
    loadgens: new CpuMeter(() => run.fleets.flatMap((f) => f.pids())),
    redis: new CpuMeter(() => (run.redisPid ? [run.redisPid] : [])),
    publisher: new CpuMeter(() => (run.publisher ? [run.publisher.pid] : []))
  }
  return { read: () => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, round(v.read(), 2)])) }
}

/**
 * Gateway closes by code, summed over the gateways.
 *
 * @param {Run} run
 * @returns {Promise<Record<string, number>>}
 */
async function gatewayCloses (run) {
  /** @type {Record<string, number>} */
  const out = {}
  for (const g of run.gws) {
    try {
      const m = (await g.metrics?.()) ?? {}
      for (const [k, v] of Object.entries(m)) {
        const c = /^wsps_gateway_closes_total\{code="(\d+)"\}$/.exec(k)
        if (c) out[c[1]] = (out[c[1]] ?? 0) + Number(v)
      }
    } catch {}
  }
  return out
}

/** @param {Record<string, number>} a @param {Record<string, number>} b */
function diffCounts (a, b) {
  return Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)]).filter(([, v]) => Number(v) > 0))
}

process.exit(await main(process.argv.slice(2)))
