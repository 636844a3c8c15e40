#!/usr/bin/env node
// make bench: every server side by side in one run, fed by one Redis
// publisher, each pinned to its own core while the load generator, Redis
// and the publisher share the other one. Writes results.json and results.md.
//
//   node harness/bench/src/bench.js --profile=full|quick|smoke --out=docs/benchmarks --bin=DIR
//   [--only=fanout,hot,idle,proxy,sim,ingest,history|history-ingest,compression,books] [--servers=wsps,wsps-distinct,naive,centrifugo,socketio,pushpin]
//   [--coalesce-us=N] [--fan-conns=N]
//
// --proxies, --proxy-scenarios: the proxy section's paths and scenarios (sections/proxy-plan.js:
// PATHS and proxyScenarios; default all).
//
// --bin: the directory of the bench's Go programs (loadgen, floor, hiccup;
// go-bin.js), by default the one scripts/setup.sh links in the cache.
//
// The parts are in sections/; what they share (the publisher, the measured
// step) in bench-run.js; sizes in profiles.js.

import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { startRedis } from '@wsps/testkit'
import { OthersCpuMeter, StealMeter } from '@wsps/testkit/proc'
import { BenchRun, log, round } from './bench-run.js'
import { parseFlags } from './cli.js'
import { goBin } from './go-bin.js'
import { HiccupMeter } from './hiccup.js'
import { PROFILES } from './profiles.js'
import { renderMarkdown } from './report.js'
import { books } from './sections/books.js'
import { capacitySim } from './sections/capacity-sim.js'
import { compression } from './sections/compression.js'
import { fanoutAll } from './sections/fanout.js'
import { history } from './sections/history.js'
import { hotSymbols } from './sections/hot.js'
import { idleAndStorm } from './sections/idle.js'
import { ingest } from './sections/ingest.js'
import { proxyPaths } from './sections/proxy.js'
import { floorCost, judgeShape } from './sections/shape.js'
import { NICE, start } from './spawn.js'

const args = parseFlags({ profile: { type: 'string' }, out: { type: 'string' }, bin: { type: 'string' }, only: { type: 'string' }, servers: { type: 'string' }, proxies: { type: 'string' }, 'proxy-scenarios': { type: 'string' }, 'coalesce-us': { type: 'string' }, 'fan-conns': { type: 'string' } })
const PROFILE = args.profile ?? 'quick'
const OUT = args.out ?? 'docs/benchmarks'
const BIN = goBin(args.bin)
const ONLY = new Set((args.only ?? 'fanout,hot,idle,proxy,sim,ingest,history,compression,books').split(','))
const PROXY_PATHS = args.proxies?.split(',')
const PROXY_SCENARIOS = args['proxy-scenarios']?.split(',')
const SERVER_NAMES = (args.servers ?? 'wsps,wsps-distinct,naive,centrifugo,socketio,pushpin').split(',')

/** Server under test on core 1; load generator, Redis, publisher on core 0 (the proxy section has layouts of its own). */
const SERVER_CORE = cpus().length > 1 ? '1' : null
const LOAD_CORE = cpus().length > 1 ? '0' : null

const PROFILE_P = PROFILES[/** @type {keyof typeof PROFILES} */ (PROFILE)]
if (!PROFILE_P) throw new Error(`unknown profile ${PROFILE}`)
/** --coalesce-us and --fan-conns override the profile's, for runs of the load generator's pause or of another fan-out shape. */
const P = {
  ...PROFILE_P,
  ...(args['coalesce-us'] === undefined ? {} : { fanCoalesceUs: Number(args['coalesce-us']) }),
  ...(args['fan-conns'] === undefined ? {} : { fanConns: Number(args['fan-conns']) })
}

const runDir = mkdtempSync(join(tmpdir(), 'wsps-bench-'))
const started = Date.now()
const steal = new StealMeter()
// The bench's processes are all this one's descendants; anything else busy
// on the machine (a test run, a build) shares its cores and shows here.
const others = new OthersCpuMeter(() => [process.pid])
/** @type {any} */
const results = {
  profile: PROFILE,
  startedAt: new Date(started).toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model, memGiB: Math.round(totalmem() / 2 ** 30), node: process.version, loadavgStart: loadavg() },
  params: P,
  placement: { serverCore: SERVER_CORE, loadCore: LOAD_CORE, nice: NICE },
  fanout: {},
  fanoutShape: null,
  hot: null,
  idle: {},
  proxy: null,
  sim: null,
  ingest: null,
  history: null,
  compression: null,
  books: null
}

log(`profile ${PROFILE}; loadgen ${BIN.loadgen}; run dir ${runDir}`)
const redis = await startRedis()
const redisPid = pinRedis(redis.pid)
results.placement.redisPid = redisPid
const publisher = start(process.execPath, [new URL('./publisher.js', import.meta.url).pathname, `--redis=${redis.url}`, `--symbols=${P.symbols}`], { core: LOAD_CORE, name: 'publisher' })
await publisher.waitLine((l) => l.type === 'ready', 20_000)
// The host hiccup meter, one per core for the whole run: a window in which
// the platform stalled is told apart from the server's latency.
const hiccup = await HiccupMeter.start(BIN.hiccup)
if (!hiccup.realtime) log(`hiccup meter at normal priority (real-time refused: ${hiccup.refusals.join('; ')}): it also sees the load on its core`)
const run = new BenchRun({ P, bin: BIN, serverCore: SERVER_CORE, loadCore: LOAD_CORE, runDir, redisUrl: redis.url, redisPid, publisher, hiccup })

/**
 * Runs one part; a part that fails is recorded as its error and the run goes on.
 *
 * @param {string} what
 * @param {() => Promise<any>} fn
 */
async function part (what, fn) {
  try {
    return await fn()
  } catch (err) {
    log(`${what} failed: ${/** @type {Error} */ (err).stack}`)
    return { error: String(/** @type {Error} */ (err).message) }
  } finally {
    save()
  }
}

try {
  if (ONLY.has('fanout')) {
    log('fanout shape: the floor\'s cost per write')
    const floor = await part('floor', () => floorCost(run))
    results.fanout = await fanoutAll(run, SERVER_NAMES)
    results.fanoutShape = floor.error ? floor : judgeShape(floor, results.fanout)
    log(`fanout shape: ${results.fanoutShape.verdict ?? results.fanoutShape.error}`)
    save()
  }
  if (ONLY.has('hot')) results.hot = await part('hot', () => hotSymbols(run))
  if (ONLY.has('idle')) {
    // The issue compares wsps with the baseline (and variants of wsps);
    // Pushpin cannot take the storm here (see analysis.md); Centrifugo has
    // no snapshot for the storm's clients to wait for.
    for (const name of SERVER_NAMES.filter((n) => !['socketio', 'pushpin', 'wsps-distinct', 'centrifugo'].includes(n))) {
      results.idle[name] = await part(`idle ${name}`, () => idleAndStorm(run, name))
    }
  }
  if (ONLY.has('proxy')) results.proxy = await part('proxy', () => proxyPaths(run, PROXY_PATHS, PROXY_SCENARIOS))
  if (ONLY.has('sim')) results.sim = await part('sim', () => capacitySim(run))
  if (ONLY.has('ingest')) results.ingest = await part('ingest', () => ingest(run))
  if (ONLY.has('history')) results.history = await part('history', () => history(run))
  else if (ONLY.has('history-ingest')) results.history = await part('history', () => history(run, { ingestOnly: true }))
  if (ONLY.has('compression')) results.compression = await part('compression', () => compression(run))
  if (ONLY.has('books')) results.books = await part('books', () => books(run))
} finally {
  publisher.send({ cmd: 'rate', rate: 0 })
  results.machine.hiccup = hiccup.summary()
  await hiccup.stop()
  await publisher.stop('SIGTERM', { graceMs: 3000, killAfterMs: 3000 })
  await redis.close()
  rmSync(runDir, { recursive: true, force: true })
}
results.machine.loadavgEnd = loadavg()
results.machine.steal = round(steal.read(), 3)
results.machine.others = round(others.read(), 3)
results.durationSeconds = Math.round((Date.now() - started) / 1000)
save()
log(`done in ${results.durationSeconds} s: ${OUT}/results.json, ${OUT}/results.md`)
process.exit(0)

function save () {
  mkdirSync(OUT, { recursive: true })
  writeFileSync(join(OUT, 'results.json'), JSON.stringify(results, null, 2) + '\n')
  writeFileSync(join(OUT, 'results.md'), renderMarkdown(results))
}

/**
 * startRedis spawns redis-server directly; pin it with the load generator.
 *
 * @param {number} pid
 * @returns {number | null} its pid, when pinned
 */
function pinRedis (pid) {
  if (LOAD_CORE === null) return null
  execFileSync('taskset', ['-pc', LOAD_CORE, String(pid)], { stdio: 'ignore' })
  if (NICE !== 0) execFileSync('renice', ['-n', String(NICE), '-p', String(pid)], { stdio: 'ignore' })
  return pid
}
