// The fan-out's shape, judged (issue 29): can this machine rank servers by
// latency with it? Two passes bound what any server can do, at the floor's
// cost per write (the least any server pays: the bare write loop,
// loadgen/internal/floor):
//
// - one publish of a symbol with A readers is a pass of A writes: if it
//   nears the latency bound, every server fails whenever the hottest
//   symbol is published in a window;
// - a server that batches writes each reader once per pass, and near its
//   latency bound every one of the N readers has something in every pass,
//   so a pass is N writes and a tick that arrives just after its reader was
//   written waits about one: if N writes near the bound, the batching
//   server's max sits where the machine's cost per write crosses it, and a
//   few per cent more per write (a noisier host) moves that max severalfold.
//
// Either way the "max at p99 ≤ bound" would measure the shape, not the
// server. So the run measures the floor's µs per write on the server core
// and calls the latency-bounded table a ranking only when the largest pass
// stays within half the bound and the pass over every reader within a
// third: a batching server's own write costs 1.25-1.6x the floor's (the hot
// section measures both), and its p99 is 1.2-1.5x its pass (the late ticks
// experiment), so a floor pass of a third leaves it about half the bound
// for the ticks themselves. 5,000 readers at the floor's 9.3 µs (46.5 ms,
// within half) still put wsps's max at 52k-67k deliveries/s in one run and
// 543k-552k at 2,500 in the next
// (docs/benchmarks/experiments.md#fanout-shape-2026-11-26, record in commit
// f66fdc2).

import { SERVERS } from '../servers.js'
import { startFleet } from '../fleet.js'
import { sleep } from '@wsps/testkit'
import { hostNote, log, round } from '../bench-run.js'
import { P99_LIMIT_MS } from '../profiles.js'

/** The most a pass over the hottest symbol's readers may take at the floor. */
const LARGEST_PASS_MAX_MS = P99_LIMIT_MS / 2
/** The most a pass over every reader may take at the floor. */
const EVERY_READER_PASS_MAX_MS = P99_LIMIT_MS / 3

/** Connections of the calibration: enough writes per publish that per-write cost dominates. */
const CAL_CONNS = 2000
/** Publishes per second of the one symbol (× CAL_CONNS writes each). */
const CAL_RATE = 10

/**
 * The floor's server CPU per write, from one short step on the server core.
 *
 * @param {import('../bench-run.js').BenchRun} run
 * @returns {Promise<{usPerWrite: number, conns: number, delivered: number, p99: number}>}
 */
export async function floorCost (run) {
  const prefix = 'fcal'
  await run.setLast(prefix)
  const srv = await SERVERS.floor.start({ redisUrl: run.redisUrl, core: run.serverCore, runDir: run.runDir, prefix, bin: run.bin })
  try {
    const fleet = await startFleet({
      bin: run.bin.loadgen, adapter: srv.adapter, url: srv.url, conns: Math.min(CAL_CONNS, run.P.fanConns), procs: 1,
      symbols: 1, k: 1, zipf: 0, core: run.loadCore, maxSeconds: 300, concurrency: 64, readyTimeout: run.P.readyTimeout
    })
    try {
      await sleep(500)
      const s = await run.step({ fleet, roots: srv.roots, rate: CAL_RATE, settleMs: 1000, measureMs: 3000, prefix, symbols: 1 })
      run.setRate(0, prefix)
      const usPerWrite = s.delivered > 0 ? round(s.cpu.server * 1e6 / s.delivered, 2) : NaN
      log(`  floor: ${fleet.conns} connections on one symbol, ${s.delivered} writes/s: ${usPerWrite} µs server CPU per write, p99 ${s.p99} ms ${hostNote(s)}`)
      return { usPerWrite, conns: fleet.conns, delivered: s.delivered, p99: s.p99 }
    } finally {
      await fleet.stop()
    }
  } finally {
    await srv.stop()
  }
}

/**
 * The verdict on the fan-out's shape: its largest audience and its
 * connections (every server's fleet has the same plan: same seed, same
 * shape) times the floor's cost.
 *
 * @param {{usPerWrite: number}} floor
 * @param {Record<string, any>} fanout results.fanout
 */
export function judgeShape (floor, fanout) {
  const most = (/** @type {string} */ key) => {
    const xs = Object.values(fanout).map((x) => x[key]).filter((a) => Number.isFinite(a))
    return xs.length ? Math.max(...xs) : NaN
  }
  const largestAudience = most('maxSubsPerSymbol')
  const connections = most('conns')
  const largestPassMs = round(largestAudience * floor.usPerWrite / 1000, 1)
  const everyReaderPassMs = round(connections * floor.usPerWrite / 1000, 1)
  const largestOk = largestPassMs <= LARGEST_PASS_MAX_MS
  const everyOk = everyReaderPassMs <= EVERY_READER_PASS_MAX_MS
  const ranking = largestOk && everyOk
  const passes = `largest pass at the floor ${largestPassMs} ms (${largestAudience} readers × ${floor.usPerWrite} µs), a pass over every reader ${everyReaderPassMs} ms (${connections} connections)`
  return {
    usPerWrite: floor.usPerWrite,
    largestAudience,
    largestPassMs,
    connections,
    everyReaderPassMs,
    boundMs: P99_LIMIT_MS,
    largestPassMaxMs: LARGEST_PASS_MAX_MS,
    everyReaderPassMaxMs: round(EVERY_READER_PASS_MAX_MS, 1),
    ranking,
    /** Which pass is over its limit (the largest one first), null when neither. */
    tooLong: !largestOk ? 'largest' : !everyOk ? 'everyReader' : null,
    verdict: ranking
      ? `${passes}: within half the ${P99_LIMIT_MS} ms bound and a third of it: the latency-bounded table ranks servers`
      : !largestOk
        ? `${passes}: the largest pass exceeds half the ${P99_LIMIT_MS} ms bound: this shape cannot rank servers by latency (a window fails whenever the hottest symbol is published in it, whatever the server); the table is not a ranking`
        : `${passes}: the pass over every reader exceeds a third of the ${P99_LIMIT_MS} ms bound: this shape cannot rank servers by latency (a batching server's max sits where the machine's cost per write crosses the bound); the table is not a ranking`
  }
}
