// Hot symbols: most connections watch the same few symbols (a market open,
// one headline stock), so every quote of the hottest one fans out to most
// of the process's connections at once. p99 against connections at a fixed
// per-connection load (hotPerConnRate deliveries/s per connection, the
// load of issue #16's reference: 10,000 connections at ~42k deliveries/s),
// for one gateway process, for WSPS_WORKERS=2 and for the floor (the
// least work any server can do here: the floor program (loadgen/internal/floor) writes one pre-built
// frame per quote to each subscriber, one write() each, from one thread, fed
// by the same publisher), all held at once and measured in turn at each
// count: the floor's p99 at a count is what this machine's kernel allows.

import { SERVERS } from '../servers.js'
import { startFleet } from '../fleet.js'
import { sleep } from '@wsps/testkit'
import { hostNote, log } from '../bench-run.js'

// Distinct too (issue 29): every tick counted, a step with a gap fails.
const NAMES = ['wsps', 'wsps-distinct', 'wsps-2w', 'floor']

/**
 * @param {import('../bench-run.js').BenchRun} run
 */
export async function hotSymbols (run) {
  const P = run.P
  const both = run.serverCore !== null && run.loadCore !== null ? `${run.serverCore},${run.loadCore}` : null
  /** @type {{name: string, prefix: string, srv: import('../servers.js').ServerHandle}[]} */
  const subjects = []
  /** @type {any[]} */
  const levels = []
  try {
    for (const name of NAMES) {
      const prefix = `h${name}`
      await run.setLast(prefix)
      // One worker on the server core; two workers get both cores (on a
      // 2-core machine they share one with the load generator: say so when
      // reading the figures).
      const srv = await SERVERS[name].start({ redisUrl: run.redisUrl, core: name === 'wsps-2w' ? both : run.serverCore, runDir: run.runDir, prefix, bin: run.bin })
      subjects.push({ name, prefix, srv })
    }
    for (const conns of P.hotSweep) {
      /** @type {Record<string, any>} */
      const servers = {}
      for (const x of subjects) {
        const workers = x.name === 'wsps-2w' ? 2 : 1
        try {
          servers[x.name] = { workers, perProcess: Math.round(conns / workers), ...await hotStep(run, x, conns) }
        } catch (err) {
          log(`hot ${x.name} at ${conns} connections failed: ${/** @type {Error} */ (err).stack}`)
          servers[x.name] = { workers, error: String(/** @type {Error} */ (err).message) }
        }
      }
      levels.push({ conns, servers })
    }
  } finally {
    for (const x of subjects) {
      run.setRate(0, x.prefix)
      await x.srv.stop()
    }
  }
  return {
    shape: { symbols: P.hotSymbols, zipf: P.hotZipf, perConnRate: P.hotPerConnRate, cores2w: both },
    labels: Object.fromEntries(NAMES.map((n) => [n, SERVERS[n].label])),
    levels
  }
}

/**
 * One count of connections against one server: connect them, publish the
 * hot symbols at the fixed per-connection load, measure, disconnect.
 *
 * @param {import('../bench-run.js').BenchRun} run
 * @param {{name: string, prefix: string, srv: import('../servers.js').ServerHandle}} x
 * @param {number} conns
 */
async function hotStep (run, x, conns) {
  const P = run.P
  const fleet = await startFleet({
    bin: run.bin.loadgen, adapter: x.srv.adapter, url: x.srv.url, conns, procs: P.procs,
    symbols: P.hotSymbols, k: 1, zipf: P.hotZipf, core: run.loadCore, maxSeconds: 600, concurrency: 64, readyTimeout: P.readyTimeout
  })
  try {
    if (fleet.conns === 0) throw new Error(`no client connected: ${fleet.errors.slice(0, 3).join('; ')}`)
    await sleep(1000)
    // Each of the hot symbols is published at the same rate, so every
    // connection (one symbol each) gets hotPerConnRate quotes per second.
    const rate = P.hotPerConnRate * P.hotSymbols
    const s = await run.step({ fleet, roots: x.srv.roots, rate, settleMs: P.settleMs, measureMs: P.latMeasureMs, prefix: x.prefix, symbols: P.hotSymbols, strict: SERVERS[x.name].strict })
    run.setRate(0, x.prefix)
    log(`  hot ${x.name.padEnd(8)} ${fleet.conns} conns: delivered ${s.delivered}/s of ${s.expected} (${s.quotesPerFrame} q/frame), p50 ${s.p50} p99 ${s.p99} ms${s.strict ? `, gaps ${s.gaps} ticks lost ${s.ticksLost}` : ''}, cpu server ${s.cpu.server} ${hostNote(s)} ${s.pass ? 'ok' : 'LIMIT'}`)
    return { connected: fleet.conns, ...s }
  } finally {
    await fleet.stop()
    await sleep(1500) // unsubscribes settle before the next count
  }
}
