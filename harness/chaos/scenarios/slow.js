// Slow consumers at scale: 1,000 clients that stop reading among 9,000 live
// ones (lib/slow-scenario.js does the work; this turns it into figures).

import { Report } from '../lib/report.js'
import { mb } from '../../testkit/src/stats.js'
import { runSlowConsumers } from '../../testkit/src/slow-scenario.js'

/**
 * @param {Partial<import('../../testkit/src/slow-scenario.js').SlowParams>} params
 * @param {(line: string) => void} log
 */
export async function run (params, log) {
  const r = await runSlowConsumers({
    live: 9000,
    slow: 1000,
    wakers: 100,
    processes: 5,
    symbols: 200,
    liveSubs: 1,
    slowSubs: 100,
    fetchIntervalMs: 1000,
    batchMs: 50,
    highWater: 16 * 1024,
    sendMax: 256 * 1024,
    slowCloseMs: 10_000,
    baselineMs: 5000,
    afterMs: 5000,
    ...params
  }, log)
  const p = r.params
  const report = new Report()
  const sleepers = p.slow - p.wakers
  const g = r.gateway
  report.figure('connections (live + slow)', r.connections, 'sockets')
  report.figure('half the stuck readers reported slow, after they stopped reading', r.slowSeenMs, 'ms')
  report.figure('all stuck readers cut off (4008), after they stopped reading', r.cutOffMs, 'ms', { max: p.slowCloseMs + 60_000 })
  report.figure('wsps_gateway_slow_clients, max', g.slowMax, 'clients', { min: Math.ceil(0.75 * sleepers) })
  report.figure('wsps_gateway_conflated_total while slow', g.conflatedDuring, 'updates', { min: 1 })
  report.figure('catch-ups received by readers that woke up (snapshots skipping seqs, merged deltas)', r.wakers.conflated, 'quotes', { min: 1 })
  report.figure('gateway RSS idle', mb(g.rssIdle), 'MB')
  report.figure(`gateway RSS with ${r.connections} clients`, mb(g.rssBefore), 'MB')
  report.figure(`gateway RSS peak with ${sleepers} stuck`, mb(g.rssPeak), 'MB')
  report.figure('gateway RSS after they were cut off', mb(g.rssAfter), 'MB')
  report.figure('gateway RSS per connection', g.perConnectionBytes / 1024, 'KiB')
  // RSS moves with garbage collection; averaged over hundreds of stuck
  // sockets it says something, over a few dozen (--quick) it is noise.
  report.figure('gateway RSS growth per stuck connection (incl. its base cost)', g.perStuckBytes / 1024, 'KiB',
    sleepers >= 500 ? { max: (g.boundPerStuckBytes + 256 * 1024) / 1024 } : undefined)
  report.figure('documented bound per stuck connection (WSPS_SEND_MAX_BYTES + pending)', g.boundPerStuckBytes / 1024, 'KiB')
  const l = r.live.latency
  report.figure('live latency p50 / p99, baseline', `${l.baseline.p50} / ${l.baseline.p99}`, 'ms')
  report.figure(`live latency p50 / p99, ${sleepers} stuck`, `${l.slow.p50} / ${l.slow.p99}`, 'ms')
  // The machine is shared (other work, the client processes): latency moves
  // with it. The stuck phase is compared with the phases before and after;
  // the limit catches stalls (seconds), not noise.
  const control = Math.max(l.baseline.p99, l.after.p99)
  report.figure('live latency p99 while stuck vs max(before, after)', l.slow.p99 - control, 'ms', { max: control + 100 })
  report.figure('live latency p50 / p99, after cut-off', `${l.after.p50} / ${l.after.p99}`, 'ms')
  report.check('live clients: none closed, no gap, every one updated while others were stuck',
    r.live.open === p.live && r.live.problems === 0 && r.live.silentDuringSlow === 0, { open: r.live.open, problems: r.live.problems, silent: r.live.silentDuringSlow, closes: r.live.closes })
  report.check('readers that woke up in time stay and are caught up with no gap', r.wakers.open === p.wakers && r.wakers.problems === 0 && r.wakers.conflated > 0, r.wakers)
  report.check('readers that stayed behind are all cut off', r.sleepers.open === 0, r.sleepers.closes)
  report.check('cut-offs counted as wsps_gateway_closes_total{code="4008"}', (g.closes['4008'] ?? 0) >= sleepers, g.closes)
  report.check('wsps_gateway_slow_clients back to 0; gateway alive', g.slowAtEnd === 0 && g.alive, g)
  report.details = r
  return report.toJSON()
}
