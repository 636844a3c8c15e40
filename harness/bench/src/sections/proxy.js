// The proxy section (issue 27): one wsps gateway reached directly, through
// nginx (the local stack's config), through HAProxy (Debian's) and through
// nginx with the F5 ingress controller's generated config; in several core
// layouts, the paths of a layout alternating round by round. Per path:
// connections held, the proxy's memory per connection, handshakes per
// second, latency at one fixed delivery rate (and what the proxy added to
// the direct path of the same round), the proxy's CPU per delivered frame.
// The plan and the arithmetic: proxy-plan.js; the table: proxy-report.js.

import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { cpus } from 'node:os'
import { sleep } from '@wsps/testkit'
import { rssBytes, tree } from '@wsps/testkit/proc'
import { SERVERS } from '../servers.js'
import { startFleet } from '../fleet.js'
import { PROXIES } from '../proxies/start.js'
import { log, mergeSummaries, round } from '../bench-run.js'
import { proxySection } from './proxy-report.js'
import { LAYOUTS, PATHS, bytesPerConn, coreBusy, proxyScenarios, rounds, summarize, usPerFrame } from './proxy-plan.js'

/**
 * @param {import('../bench-run.js').BenchRun} run
 * @param {string[]} [paths] a subset of PATHS
 * @param {string[]} [only] scenario ids to run (default: all)
 */
export async function proxyPaths (run, paths = PATHS, only = undefined) {
  log('proxies: direct vs nginx (and variants) vs HAProxy vs the F5 controller\'s nginx')
  const P = run.P
  const pinned = cpus().length > 1
  const scenarios = proxyScenarios(P, paths).filter((s) => !only || only.includes(s.id))
  /** @type {any[]} */
  const runs = []
  await run.setLast()
  for (const sc of scenarios) {
    const L = LAYOUTS[sc.layout]
    log(`  ${sc.title}: ${L.text}; ${sc.deliveries} deliveries/s, ${sc.mode} client`)
    const srv = await SERVERS.wsps.start({ redisUrl: run.redisUrl, core: pinned ? L.gateway : null, runDir: run.runDir })
    try {
      await warmUp(run, sc, L, pinned, srv)
      for (const { rep, path } of rounds(sc.paths, sc.reps)) {
        try {
          const r = await onePath(run, { sc, layout: L, pinned, srv, path, rep })
          runs.push(r)
          log(`    ${path} #${rep}: ${r.held}/${r.conns} held, ${r.handshakesPerSec} handshakes/s; ${r.entries} quotes/s (${r.expected} offered) in ${r.frames} frames/s p50 ${r.p50} p99 ${r.p99} ms${r.proxyBytesPerConn === undefined ? '' : `; proxy ${round((r.proxyBytesPerConn ?? NaN) / 1024, 1)} KiB/conn, ${r.proxyUsPerFrame} µs/frame`}; cores ${JSON.stringify(r.coreBusy)}`)
        } catch (err) {
          log(`    ${path} #${rep} failed: ${/** @type {Error} */ (err).message}`)
          runs.push({ scenario: sc.id, path, rep, error: String(/** @type {Error} */ (err).message) })
        }
      }
    } finally {
      run.setRate(0)
      await srv.stop()
    }
  }
  const result = { scenarios, layouts: LAYOUTS, proxies: Object.fromEntries(Object.entries(PROXIES).filter(([k]) => paths.includes(k)).map(([k, v]) => [k, { label: v.label, config: v.config }])), runs, summary: summarize(scenarios, runs) }
  // The section's answer on the terminal, as the report will have it.
  process.stderr.write(`\n${proxySection(result, P).join('\n')}\n`)
  return result
}

/**
 * The gateway just started (its code not yet optimised): the scenario's
 * clients connect directly and take the rate once, unmeasured, so the first
 * round's first path is not also the gateway's first load.
 *
 * @param {import('../bench-run.js').BenchRun} run
 * @param {import('./proxy-plan.js').Scenario} sc
 * @param {{load: string}} layout
 * @param {boolean} pinned
 * @param {import('../servers.js').ServerHandle} srv
 */
async function warmUp (run, sc, layout, pinned, srv) {
  const P = run.P
  const fleet = await startFleet({ bin: run.bin.loadgen, adapter: 'wsps', url: srv.url, conns: P.proxyConns, procs: 2, symbols: P.symbols, k: P.k, zipf: P.zipf, core: pinned ? layout.load : null, maxSeconds: 300, concurrency: 64, seed: 30, mode: sc.mode })
  try {
    run.setRate(sc.deliveries / (fleet.totalSubs / P.symbols))
    await sleep(P.settleMs)
  } finally {
    run.setRate(0)
    await fleet.stop()
    await sleep(1000)
  }
}

/**
 * One path in one round: a fresh proxy (so its RSS before the clients is
 * its idle size), the clients, one measured step, the clients' own count
 * of sockets still open.
 *
 * @param {import('../bench-run.js').BenchRun} run
 * @param {{sc: import('./proxy-plan.js').Scenario, layout: {gateway: string, proxy: string, load: string}, pinned: boolean, srv: import('../servers.js').ServerHandle, path: string, rep: number}} o
 */
async function onePath (run, { sc, layout, pinned, srv, path, rep }) {
  const P = run.P
  const dir = join(run.runDir, `proxy-${sc.id}-${path}-${rep}`)
  mkdirSync(dir, { recursive: true })
  const proxy = path === 'direct' ? null : await PROXIES[path].start({ upstream: `127.0.0.1:${srv.port}`, core: pinned ? layout.proxy : null, dir })
  try {
    const rss0 = proxy ? rssBytes(tree(proxy.roots())) : 0
    const fleet = await startFleet({
      bin: run.bin.loadgen, adapter: 'wsps', url: proxy?.url ?? srv.url, conns: P.proxyConns, procs: 2,
      symbols: P.symbols, k: P.k, zipf: P.zipf, core: pinned ? layout.load : null, maxSeconds: 300, concurrency: 64, seed: 31 + rep, mode: sc.mode
    })
    try {
      const seconds = Math.max(...fleet.readies.map((r) => r.elapsedMs)) / 1000
      const rate = sc.deliveries / (fleet.totalSubs / P.symbols)
      await fleet.command('hold')
      const s = await run.step({ fleet, roots: srv.roots, rate, settleMs: P.settleMs, measureMs: P.proxyMeasureMs, meters: proxy ? { proxy: proxy.roots } : {} })
      run.setRate(0)
      const rss1 = proxy ? rssBytes(tree(proxy.roots())) : 0
      const checks = await fleet.command('check')
      return {
        scenario: sc.id,
        path,
        rep,
        conns: fleet.conns,
        failed: fleet.failed,
        held: checks.reduce((a, c) => a + c.open, 0),
        quoted: checks.reduce((a, c) => a + c.quoted, 0),
        connectSeconds: round(seconds, 2),
        handshakesPerSec: Math.round(fleet.conns / seconds),
        handshakeMs: mergeSummaries(fleet.readies.map((r) => r.handshakeMs)),
        rate: s.rate,
        expected: s.expected,
        delivered: s.delivered,
        entries: s.entries,
        frames: s.frames,
        p50: s.p50,
        p99: s.p99,
        p999: s.p999,
        cpu: s.cpu,
        steal: s.steal,
        hiccupMs: s.hiccupMs,
        gatewayRssMiB: s.rssMiB,
        ...(proxy ? { proxyProcesses: tree(proxy.roots()).length, proxyRssBeforeMiB: round(rss0 / 2 ** 20, 1), proxyRssMiB: round(rss1 / 2 ** 20, 1), proxyBytesPerConn: bytesPerConn(rss0, rss1, fleet.conns), proxyUsPerFrame: usPerFrame(s.cpu.proxy, s.frames) } : {}),
        gatewayUsPerFrame: usPerFrame(s.cpu.server, s.frames),
        coreBusy: coreBusy(layout, /** @type {any} */ (s.cpu))
      }
    } finally {
      await fleet.stop()
    }
  } finally {
    await proxy?.stop()
    // Let the gateway close what the clients left before the next path connects.
    await sleep(1000)
  }
}
