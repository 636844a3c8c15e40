// Benchmark profiles: the sizes and pacing of each part of `make bench`.
// `full` is the committed run; `quick` is for iterating; `smoke` checks the
// harness end to end in seconds.

const full = {
  conns: 10_000, procs: 4, symbols: 2000, k: 20, zipf: 1.0,
  // The fan-out's own shape (issue 29): its largest audience and its
  // connections times the floor's µs per write must stay well under the
  // latency bound, or the bound measures the shape, not the server
  // (sections/shape.js). 2,500 connections x 10 of 500 symbols at Zipf 0.5:
  // the hottest symbol has ~520 readers, and a pass over every reader is
  // ~20-26 ms at the floor's 7.7-10.3 µs (the run prints what it measured).
  // At 5,000 connections that pass was 38-52 ms, half the bound: a batching
  // server's max then moved 52k-340k deliveries/s between runs with the
  // machine's cost per write (docs/benchmarks/experiments.md#fanout-shape-2026-11-26,
  // record in commit f66fdc2).
  fanConns: 2500, fanSymbols: 500, fanK: 10, fanZipf: 0.5,
  // The fan-out's load generator pauses this long after each batch of
  // socket events (loadgen -coalesce-us): one wake-up then reads many
  // frames, so the shared load core is less often the limit. It adds at most
  // this to a measured latency (0.5 ms of the 100 ms bound).
  fanCoalesceUs: 500,
  startDeliveries: 20_000, factor: 1.6, saturationDeliveries: 2_000_000, maxPublish: 40_000, settleMs: 2000, measureMs: 5000, maxSteps: 12, latMeasureMs: 10_000, drainMs: 20_000,
  storm: 18_000, stormProcs: 4, idleExtra: 1500, readyTimeout: 100,
  // The proxy section (sections/proxy-plan.js): every path at one delivery
  // rate far from the gateway's limit (~70k/s on one core), so what a proxy
  // adds is not the gateway's queue; and the 2026-11-22 run's own rate.
  proxyConns: 4000, proxyDeliveries: 20_000, proxyReps: 4, proxyAltReps: 2, proxyOldDeliveries: 60_000, proxyMeasureMs: 5000,
  simProcs: [1, 2, 4], simConns: 6000, simDeliveries: 60_000, simMeasureMs: 6000,
  hotSweep: [2500, 5000, 10_000], hotPerConnRate: 4.2, hotSymbols: 5, hotZipf: 2.0,
  ingestBatches: [1, 100, 1000], ingestSymbols: 100, ingestMeasureMs: 5000, ingestConcurrency: 4,
  historySizes: [0, 100, 1000], historySymbols: 100, historyBatch: 100, historyConcurrency: 4, historyRounds: 7, historyMeasureMs: 3000,
  recoveryClients: 1000, recoveryProcs: 2, recoverySymbols: 100, recoveryK: 5, recoveryTickRates: [2, 10], recoveryGapMs: 5000,
  compressionClients: 200, compressionK: 20, compressionSymbols: 200, compressionRate: 400, compressionRounds: 3, compressionSettleMs: 2000, compressionMeasureMs: 5000,
  // The book section (sections/books.js): 50 books at 30 updates/s each,
  // subscribers at depth 25 stepped up to the 10,000 (one
  // load-generator process per 2,500, at most booksProcs), from 250: on a
  // shared machine the larger steps may all miss the latency bound.
  // Subscribers not holding their book after max(30 s, n /
  // booksConnectPerSec) are cut and fail the step (2026-12-04 on the shared
  // machine: ~130 connected per second with the books moving).
  booksCount: 50, booksRate: 30, booksSubs: [250, 1000, 2500, 5000, 10_000], booksProcs: 4, booksSettleMs: 2000, booksMeasureMs: 5000, booksConnectPerSec: 100
}

/** `smoke` and `quick` say only where they differ from `full`. */
export const PROFILES = {
  full,
  smoke: {
    ...full,
    conns: 200, procs: 1, symbols: 100, k: 5,
    fanConns: 200, fanSymbols: 100, fanK: 5,
    startDeliveries: 2000, factor: 2, saturationDeliveries: 10_000, maxPublish: 2000, settleMs: 1000, measureMs: 2000, maxSteps: 2, latMeasureMs: 2000, drainMs: 3000,
    storm: 300, stormProcs: 1, idleExtra: 50, readyTimeout: 20,
    proxyConns: 100, proxyDeliveries: 2000, proxyReps: 1, proxyAltReps: 1, proxyOldDeliveries: 4000, proxyMeasureMs: 2000,
    simProcs: [1, 2], simConns: 200, simDeliveries: 2000, simMeasureMs: 2000,
    hotSweep: [100, 200],
    ingestSymbols: 20, ingestMeasureMs: 1000, ingestConcurrency: 2,
    historySymbols: 20, historyRounds: 1, historyMeasureMs: 500,
    recoveryClients: 100, recoveryProcs: 1, recoverySymbols: 20, recoveryGapMs: 2000,
    compressionClients: 20, compressionK: 5, compressionSymbols: 20, compressionRate: 100, compressionRounds: 1, compressionSettleMs: 500, compressionMeasureMs: 1000,
    booksCount: 10, booksRate: 10, booksSubs: [100], booksProcs: 1, booksSettleMs: 500, booksMeasureMs: 1000
  },
  quick: {
    ...full,
    conns: 2000, procs: 2, symbols: 1000,
    fanConns: 2000,
    factor: 2, saturationDeliveries: 200_000, settleMs: 1000, measureMs: 2500, maxSteps: 4, latMeasureMs: 3000, drainMs: 5000,
    storm: 3000, stormProcs: 2, idleExtra: 0, readyTimeout: 20,
    proxyConns: 1000, proxyReps: 1, proxyAltReps: 1, proxyMeasureMs: 3000,
    simProcs: [1, 2], simConns: 2000, simDeliveries: 20_000, simMeasureMs: 2000,
    hotSweep: [750, 1500, 3000],
    ingestMeasureMs: 2500,
    historyRounds: 5, historyMeasureMs: 1000,
    booksSubs: [250, 1000], booksProcs: 2, booksSettleMs: 1000, booksMeasureMs: 3000
  }
}

/** A step fails when p99 publish→client latency is over this. */
export const P99_LIMIT_MS = 100
/** ...or when fewer than this share of the offered deliveries arrived. */
export const KEEP_UP = 0.85
/**
 * The load core (load generator, Redis, publisher) busier than this share of
 * a core: the step may be measuring the load generator, so its figure is a
 * lower bound for the server.
 */
export const LOAD_CORE_LIMIT = 0.85
/**
 * Processes the bench did not start busier than this share of a core in a
 * step's window (`others`): the machine was not the bench's alone, and a
 * step that failed may have failed for them.
 */
export const OTHERS_LIMIT = 0.1
/** @typedef {typeof PROFILES.full} Profile */
