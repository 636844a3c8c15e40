// Several gateway processes on this machine sharing a fixed client
// population and publish rate: checks the capacity model's shape
// (docs/capacity.md).

import { SERVERS } from '../servers.js'
import { startFleet, quantiles } from '../fleet.js'
import { CpuMeter } from '@wsps/testkit/proc'
import { sleep } from '@wsps/testkit'
import { log, round } from '../bench-run.js'

/**
 * Several gateway processes on this machine sharing a fixed client
 * population and publish rate: checks the capacity model's shape (Redis
 * egress grows with processes x symbols, per-process inbound does not shrink).
 *
 * @param {import('../bench-run.js').BenchRun} run
 */
export async function capacitySim (run) {
  log('capacity sim')
  const out = []
  for (const n of run.P.simProcs) {
    await run.setLast()
    /** @type {import('../servers.js').ServerHandle[]} */
    const gws = []
    /** @type {import('../fleet.js').Fleet[]} */
    const fleets = []
    try {
      for (let i = 0; i < n; i++) gws.push(await SERVERS.wsps.start({ redisUrl: run.redisUrl, core: run.serverCore, runDir: run.runDir, env: { WSPS_NODE_NAME: `sim-${n}-${i}` } }))
      const per = Math.floor(run.P.simConns / n)
      for (let i = 0; i < n; i++) {
        fleets.push(await startFleet({
          bin: run.bin.loadgen, adapter: 'wsps', url: gws[i].url, conns: per, procs: 1, first: i * per,
          symbols: run.P.symbols, k: run.P.k, zipf: run.P.zipf, core: run.loadCore, maxSeconds: 300, concurrency: 64, seed: 21
        }))
      }
      const totalSubs = fleets.reduce((a, f) => a + f.totalSubs, 0)
      const rate = run.P.simDeliveries / (totalSubs / run.P.symbols)
      const tBefore = Date.now()
      const before = await Promise.all(gws.map((g) => /** @type {any} */ (g.metrics)()))
      const meters = { gateways: new CpuMeter(() => gws.flatMap((g) => g.roots())), redis: new CpuMeter(run.redisPids) }
      run.setRate(rate)
      await sleep(run.P.settleMs)
      for (const m of Object.values(meters)) m.mark()
      const t0 = Date.now()
      await sleep(run.P.simMeasureMs)
      const t1 = Date.now()
      const cpu = { gateways: round(meters.gateways.read(), 3), redis: round(meters.redis.read(), 3) }
      run.setRate(0)
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
      const pub = run.published(t0, t1)
      const quotesIn = after.reduce((a, m, i) => a + (m.wsps_gateway_quotes_in_total - before[i].wsps_gateway_quotes_in_total), 0)
      const row = {
        processes: n,
        conns: fleets.reduce((a, f) => a + f.conns, 0),
        publishedPerSec: Math.round(pub),
        redisChannelsPerProcess: Math.round(channels.reduce((a, b) => a + b, 0) / n),
        redisEgressPerSec: Math.round(pub * channels.reduce((a, b) => a + b, 0) / run.P.symbols),
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
