// Connection storm, then idle capacity: RSS per idle subscribed connection
// (after a forced GC) and whether more connections fit under the fd cap.

import { SERVERS } from '../servers.js'
import { startFleet } from '../fleet.js'
import { CpuMeter, rssBytes, tree } from '@wsps/testkit/proc'
import { sleep } from '@wsps/testkit'
import { log, mergeSummaries, round } from '../bench-run.js'

/**
 * Connection storm (18k clients connect at once, each subscribes K symbols
 * and waits for their snapshot), then idle capacity: RSS per idle
 * subscribed connection, and whether more connections fit under the fd cap.
 *
 * @param {import('../bench-run.js').BenchRun} run
 * @param {string} name
 */
export async function idleAndStorm (run, name) {
  log(`storm + idle: ${name}`)
  await run.setLast()
  const srv = await SERVERS[name].start({ redisUrl: run.redisUrl, core: run.serverCore, runDir: run.runDir, inspect: true })
  /** @type {import('../fleet.js').Fleet[]} */
  const fleets = []
  try {
    await sleep(1000)
    // Memory is read after a full GC (through the inspector), before and
    // after: what stays live, not how much garbage the storm left behind.
    const heap0 = srv.gc ? await srv.gc() : null
    const rss0 = rssBytes(tree(srv.roots()))
    const cpu = new CpuMeter(srv.roots)
    const fleet = await startFleet({
      bin: run.bin.loadgen, adapter: srv.adapter, url: srv.url, conns: run.P.storm, procs: run.P.stormProcs,
      symbols: run.P.symbols, k: run.P.k, zipf: run.P.zipf, core: run.loadCore, maxSeconds: 600, concurrency: 128, seed: 7
    })
    fleets.push(fleet)
    const stormCpu = cpu.read()
    const stormSeconds = Math.max(...fleet.readies.map((r) => r.elapsedMs)) / 1000
    const readyP = mergeSummaries(fleet.readies.map((r) => r.readyMs))
    const handshakeP = mergeSummaries(fleet.readies.map((r) => r.handshakeMs))
    log(`  storm: ${fleet.conns}/${run.P.storm} connected+snapshotted in ${stormSeconds.toFixed(1)} s (${Math.round(fleet.conns / stormSeconds)}/s), handshake p50 ${handshakeP.p50} p99 ${handshakeP.p99} ms`)
    await sleep(5000)
    const heap1 = srv.gc ? await srv.gc() : null
    const rss1 = rssBytes(tree(srv.roots()))
    const perConn = (rss1 - rss0) / Math.max(1, fleet.conns)
    // JS heap vs the rest (native sockets, allocator slack).
    const breakdown = heap0 && heap1 ? { heapUsedPerConn: Math.round((heap1.heapUsed - heap0.heapUsed) / fleet.conns) } : null
    if (breakdown) log(`  per connection: live JS heap ${breakdown.heapUsedPerConn} B of ${Math.round(perConn)} B RSS`)
    log(`  idle: RSS ${round(rss0 / 2 ** 20, 1)} -> ${round(rss1 / 2 ** 20, 1)} MiB = ${Math.round(perConn)} B per subscribed connection`)
    let held = fleet.conns
    if (run.P.idleExtra > 0) {
      const more = await startFleet({
        bin: run.bin.loadgen, adapter: srv.adapter, url: srv.url, conns: run.P.idleExtra, procs: 1, first: run.P.storm,
        symbols: run.P.symbols, k: run.P.k, zipf: run.P.zipf, core: run.loadCore, maxSeconds: 600, concurrency: 64, seed: 7, waitSnap: true
      })
      fleets.push(more)
      held += more.conns
      await sleep(2000)
      log(`  held ${held} connections (tried ${run.P.storm + run.P.idleExtra}); fd cap 20000 per process`)
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
      subsPerConn: run.P.k,
      tried: run.P.storm + run.P.idleExtra,
      held,
      rssHeldMiB: round(rss2 / 2 ** 20, 1)
    }
  } finally {
    for (const f of fleets) await f.stop()
    await srv.stop()
    await sleep(1000)
  }
}
