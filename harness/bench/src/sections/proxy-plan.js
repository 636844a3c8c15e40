// The proxy section's plan and arithmetic, without processes: where each
// party runs (layouts), what is measured in which order (scenarios, rounds),
// and what the runs add up to (the summary the report and plot read).

import { round } from '../bench-run.js'

/** The paths to one gateway: direct, then each proxy of proxies/start.js. */
export const PATHS = ['direct', 'nginx', 'nginx-1w', 'nginx-buffered', 'haproxy', 'f5-nginx']
/** Variants of the local nginx (one directive changed): measured in the main layout only. */
const VARIANTS = new Set(['nginx-1w', 'nginx-buffered'])

/**
 * Where each party runs on a 2-core machine. Redis and the publisher are
 * pinned to core 0 for the whole bench (bench.js); the load generator runs
 * there too, in every layout.
 *
 * @type {Record<string, {gateway: string, proxy: string, load: string, text: string}>}
 */
export const LAYOUTS = {
  // The proxy fights no one: what it costs by itself.
  'proxy-alone': { gateway: '0', proxy: '1', load: '0', text: 'proxy alone on core 1; gateway, load generator, Redis and publisher on core 0' },
  // Proxy and gateway on one core, as on one node: the proxy's CPU comes out of the gateway's.
  'proxy-with-gateway': { gateway: '1', proxy: '1', load: '0', text: 'proxy and gateway on core 1; load generator, Redis and publisher on core 0' },
  // The 2026-11-22 bench's layout: the proxy with the load generator.
  'proxy-with-loadgen': { gateway: '1', proxy: '0', load: '0', text: 'gateway alone on core 1; proxy with the load generator, Redis and publisher on core 0 (the 2026-11-22 layout)' }
}

/**
 * @typedef {object} Scenario
 * @property {string} id
 * @property {string} title
 * @property {keyof typeof LAYOUTS} layout
 * @property {number} deliveries offered deliveries per second (the publish rate follows from the subscriptions)
 * @property {string[]} paths
 * @property {number} reps alternating rounds
 * @property {'epoll' | 'goroutine'} mode the load generator's client
 */

/**
 * The section's scenarios for a profile: every path at one fixed delivery
 * rate in the main layout, the same in the two other layouts, and the
 * 2026-11-22 measurement repeated (its layout, rate and client).
 *
 * @param {{proxyDeliveries: number, proxyReps: number, proxyAltReps: number, proxyOldDeliveries: number}} P
 * @param {string[]} [paths]
 * @returns {Scenario[]}
 */
export function proxyScenarios (P, paths = PATHS) {
  const nginxOnly = paths.filter((p) => p === 'direct' || p === 'nginx')
  const proxies = paths.filter((p) => !VARIANTS.has(p))
  return [
    { id: 'main', title: 'main layout', layout: 'proxy-alone', deliveries: P.proxyDeliveries, paths, reps: P.proxyReps, mode: 'epoll' },
    { id: 'with-gateway', title: 'proxy beside the gateway', layout: 'proxy-with-gateway', deliveries: P.proxyDeliveries, paths: proxies, reps: P.proxyAltReps, mode: 'epoll' },
    { id: 'with-loadgen', title: 'proxy beside the load generator', layout: 'proxy-with-loadgen', deliveries: P.proxyDeliveries, paths: proxies, reps: P.proxyAltReps, mode: 'epoll' },
    { id: 'old-run', title: 'the 2026-11-22 run repeated', layout: 'proxy-with-loadgen', deliveries: P.proxyOldDeliveries, paths: nginxOnly, reps: P.proxyAltReps, mode: 'goroutine' }
  ]
}

/**
 * The order of a scenario's runs: `reps` rounds of every path, each round
 * starting one path later, so no path always runs first (or right after the
 * same other one) while the machine's load drifts.
 *
 * @param {string[]} paths
 * @param {number} reps
 * @returns {{rep: number, path: string}[]}
 */
export function rounds (paths, reps) {
  const out = []
  for (let rep = 0; rep < reps; rep++) {
    for (let i = 0; i < paths.length; i++) out.push({ rep, path: paths[(i + rep) % paths.length] })
  }
  return out
}

/**
 * CPU busy per core (cores, 1.0 = one full core) from what each party used
 * and where the layout put it.
 *
 * @param {{gateway: string, proxy: string, load: string}} layout
 * @param {{server: number, proxy?: number, loadgen: number, redis: number, publisher: number}} cpu
 * @returns {Record<string, number>} core -> cores busy
 */
export function coreBusy (layout, cpu) {
  /** @type {Record<string, number>} */
  const out = Object.fromEntries([layout.load, layout.gateway, layout.proxy].sort().map((c) => [c, 0]))
  const add = (/** @type {string} */ core, /** @type {number} */ x) => { out[core] = round((out[core] ?? 0) + x, 3) }
  add(layout.load, cpu.loadgen + cpu.redis + cpu.publisher)
  add(layout.gateway, cpu.server)
  if (cpu.proxy !== undefined) add(layout.proxy, cpu.proxy)
  return out
}

/**
 * Memory the proxy holds per proxied connection: its RSS growth from before
 * the clients connected to the end of the measured window, per connection.
 *
 * @param {number} rssBefore bytes
 * @param {number} rssAfter bytes
 * @param {number} conns
 * @returns {number | null} bytes
 */
export function bytesPerConn (rssBefore, rssAfter, conns) {
  return conns > 0 ? Math.round((rssAfter - rssBefore) / conns) : null
}

/**
 * CPU microseconds per delivered frame: cores busy over frames per second.
 *
 * @param {number | undefined} cores
 * @param {number} framesPerSec
 * @returns {number | null}
 */
export function usPerFrame (cores, framesPerSec) {
  return cores !== undefined && framesPerSec > 0 ? round(cores * 1e6 / framesPerSec, 2) : null
}

/**
 * The median; of an even count, the mean of the middle two (two rounds
 * give their mean, not the lower one).
 *
 * @param {number[]} xs
 * @returns {number}
 */
export function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

/**
 * The medians of each scenario's paths, and what each proxy added to the
 * direct path: per round (the proxied run minus the direct run of the same
 * round), then the median of those differences.
 *
 * @param {Scenario[]} scenarios
 * @param {any[]} runs one per run: {scenario, path, rep, ...} (sections/proxy.js)
 * @returns {Record<string, Record<string, any>>} scenario id -> path -> summary
 */
export function summarize (scenarios, runs) {
  /** @type {Record<string, Record<string, any>>} */
  const out = {}
  for (const sc of scenarios) {
    const mine = runs.filter((r) => r.scenario === sc.id && !r.error)
    /** @type {Record<string, any>} */
    const paths = {}
    for (const path of sc.paths) {
      const rs = mine.filter((r) => r.path === path)
      if (!rs.length) continue
      const med = (/** @type {(r: any) => number | null | undefined} */ f) => {
        const xs = rs.map(f).filter((x) => typeof x === 'number' && Number.isFinite(x))
        return xs.length ? round(median(/** @type {number[]} */ (xs)), 3) : null
      }
      const added = (/** @type {'p50' | 'p99'} */ q) => {
        const ds = rs.map((r) => {
          const d = mine.find((x) => x.path === 'direct' && x.rep === r.rep)
          return d ? r[q] - d[q] : null
        }).filter((x) => x !== null)
        return ds.length ? round(median(/** @type {number[]} */ (ds)), 1) : null
      }
      /** @type {Record<string, number>} */
      const busy = {}
      for (const core of new Set(rs.flatMap((r) => Object.keys(r.coreBusy ?? {})))) busy[core] = /** @type {number} */ (med((r) => r.coreBusy?.[core]))
      paths[path] = {
        runs: rs.length,
        conns: med((r) => r.conns),
        held: med((r) => r.held),
        failed: med((r) => r.failed),
        handshakesPerSec: med((r) => r.handshakesPerSec),
        handshakeP50: med((r) => r.handshakeMs?.p50),
        handshakeP99: med((r) => r.handshakeMs?.p99),
        expected: med((r) => r.expected),
        entries: med((r) => r.entries),
        delivered: med((r) => r.delivered),
        frames: med((r) => r.frames),
        p50: med((r) => r.p50),
        p99: med((r) => r.p99),
        addedP50: path === 'direct' ? null : added('p50'),
        addedP99: path === 'direct' ? null : added('p99'),
        proxyProcesses: med((r) => r.proxyProcesses),
        proxyBytesPerConn: med((r) => r.proxyBytesPerConn),
        proxyCpu: med((r) => r.cpu?.proxy),
        proxyUsPerFrame: med((r) => r.proxyUsPerFrame),
        gatewayUsPerFrame: med((r) => r.gatewayUsPerFrame),
        coreBusy: busy,
        steal: med((r) => r.steal),
        hiccupMs: med((r) => r.hiccupMs)
      }
    }
    out[sc.id] = paths
  }
  return out
}
