// One benchmark run's shared state: the profile, where things are pinned,
// Redis and the publisher that feeds every server, and the measured step
// every part of the run is built from.

import { bucketMs, quantiles } from './fleet.js'
import { CoreBusyMeter, CpuMeter, OthersCpuMeter, StealMeter, processTimes, rssBytes, tree } from '@wsps/testkit/proc'
import { sleep } from '@wsps/testkit'
import { KEEP_UP, LOAD_CORE_LIMIT, P99_LIMIT_MS } from './profiles.js'
import { monoMs } from './hiccup.js'

/**
 * The fleet's tick (loadgen -report-ms default): a window's latencies are
 * those of the ticks ending in it, so it reaches back up to one tick before
 * its start, and so does the host stall that counts against it.
 */
const FLEET_TICK_MS = 1000

export const log = (/** @type {string} */ msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`)

/** What the machine did during a step, for the log lines: its CPU steal, longest host stall and the CPU of processes not the bench's. */
export const hostNote = (/** @type {{steal: number, hiccupMs: number | null, others?: number}} */ s) => `steal ${round(s.steal * 100, 1)}% hiccup ${s.hiccupMs ?? 'n/a'} ms${s.others === undefined ? '' : ` others ${round(s.others * 100, 1)}%`}`

export class BenchRun {
  /**
   * @param {object} o
   * @param {import('./profiles.js').Profile} o.P
   * @param {import('./go-bin.js').GoBin} o.bin the bench's Go programs (load generator, floor)
   * @param {string | null} o.serverCore CPU list for servers under test
   * @param {string | null} o.loadCore CPU list for the load generator, Redis, publisher
   * @param {string} o.runDir scratch directory
   * @param {string} o.redisUrl
   * @param {number | null} o.redisPid
   * @param {ReturnType<typeof import('./spawn.js').start>} o.publisher
   * @param {import('./hiccup.js').HiccupMeter | null} [o.hiccup] the host hiccup meter (none: steps report no hiccup)
   */
  constructor ({ P, bin, serverCore, loadCore, runDir, redisUrl, redisPid, publisher, hiccup = null }) {
    this.P = P
    this.bin = bin
    this.serverCore = serverCore
    this.loadCore = loadCore
    this.runDir = runDir
    this.redisUrl = redisUrl
    this.redisPid = redisPid
    this.publisher = publisher
    this.hiccup = hiccup
    this.redisPids = this.redisPids.bind(this)
  }

  /** @returns {number[]} */
  redisPids () {
    return this.redisPid ? [this.redisPid] : []
  }

  /**
   * @param {number} rate quotes per second
   * @param {string} [prefix]
   * @param {number} [symbols] spread over the first this many symbols (default: all)
   */
  setRate (rate, prefix = 'wsps', symbols = undefined) {
    this.publisher.send({ cmd: 'rate', rate: Math.round(rate), prefix, symbols })
  }

  /** @param {string} [prefix] */
  async setLast (prefix = 'wsps') {
    const from = this.publisher.lines.length
    this.publisher.send({ cmd: 'setLast', prefix })
    await this.publisher.waitLine((l) => l.type === 'setLast' && l.prefix === prefix, 10_000, from)
  }

  /**
   * @param {number} t0
   * @param {number} t1
   */
  published (t0, t1) {
    const ticks = this.publisher.lines.filter((l) => l.type === 'tick' && l.t > t0 && l.t <= t1)
    const n = ticks.reduce((a, l) => a + l.published, 0)
    return ticks.length ? n / ticks.length : 0
  }

  /**
   * Offered deliveries per second in a window: every quote published times the
   * subscribers of its symbol (exact, not the mean: with skewed popularity a
   * few seconds of random symbols differ a lot from the average).
   *
   * @param {number} t0
   * @param {number} t1
   * @param {number[]} subsPerSymbol
   */
  offered (t0, t1, subsPerSymbol) {
    const ticks = this.publisher.lines.filter((l) => l.type === 'tick' && l.t > t0 && l.t <= t1)
    let n = 0
    for (const l of ticks) for (const [i, c] of Object.entries(l.perSymbol ?? {})) n += c * (subsPerSymbol[Number(i)] ?? 0)
    return ticks.length ? n / ticks.length : 0
  }

  /**
   * One measured step at a publish rate.
   *
   * strict: count deliveries tick by tick (frame entries, not the updates a
   * merged delta carries) and pass only with no seq gap and no tick lost:
   * for a server in distinct mode, which must deliver every tick.
   *
   * symbols: publish only the first this many symbols (default: all).
   *
   * meters: more processes whose CPU is read over the same window (name ->
   * root pids), reported in `cpu` by name (a proxy in front of the server).
   *
   * probe: the server's own metrics (a wsps gateway's /metrics), read at
   * the window's start and end: the share of its latency samples (quote ts
   * to the end of the write, distinct updates only) over the bound, beside
   * the clients' share, says whether a late quote was late leaving the
   * server or on its way to the client (kernel, load generator).
   *
   * @param {{fleet: import('./fleet.js').Fleet, roots: () => number[], rate: number, settleMs: number, measureMs: number, prefix?: string, strict?: boolean, symbols?: number, meters?: Record<string, () => number[]>, probe?: () => Promise<Record<string, number>>}} o
   */
  async step ({ fleet, roots, rate, settleMs, measureMs, prefix = 'wsps', strict = false, symbols = undefined, meters: more = {}, probe }) {
    this.setRate(rate, prefix, symbols)
    await sleep(settleMs)
    // One snapshot of every process starts all the window's CPU meters, and
    // one ends them: the same instants for all, and /proc read twice.
    const start = processTimes()
    const meters = {
      server: new CpuMeter(roots, start),
      loadgen: new CpuMeter(fleet.pids, start),
      redis: new CpuMeter(this.redisPids, start),
      publisher: new CpuMeter(() => [this.publisher.pid], start),
      ...Object.fromEntries(Object.entries(more).map(([k, r]) => [k, new CpuMeter(r, start)]))
    }
    const steal = new StealMeter()
    // Everything the bench did not start (a test run, a build): the machine
    // was not the bench's alone in this window when this is more than noise.
    const others = new OthersCpuMeter(() => [process.pid], start)
    // Whole cores, softirq included, when each role has one of its own.
    const single = (/** @type {string | null} */ c) => (c !== null && /^\d+$/.test(c) ? new CoreBusyMeter(c) : null)
    const coreMeters = { server: single(this.serverCore), load: single(this.loadCore) }
    const probed0 = probe ? await probe().catch(() => null) : null
    const t0 = Date.now()
    const m0 = monoMs()
    await sleep(measureMs)
    const t1 = Date.now()
    const m1 = monoMs()
    const probed1 = probe ? await probe().catch(() => null) : null
    const end = processTimes()
    const cpu = Object.fromEntries(Object.entries(meters).map(([k, m]) => [k, round(m.read(end), 3)]))
    const stolen = round(steal.read(), 3)
    const othersCpu = round(others.read(end), 3)
    const serverCore = coreMeters.server?.read() ?? null
    const loadCoreTime = coreMeters.load?.read() ?? null
    const cores = {
      server: serverCore && round(serverCore.busy, 3),
      serverSoftirq: serverCore && round(serverCore.softirq, 3),
      load: loadCoreTime && round(loadCoreTime.busy, 3),
      loadSoftirq: loadCoreTime && round(loadCoreTime.softirq, 3)
    }
    const rss = rssBytes(tree(roots(), end))
    await fleet.tickedAfter(t1)
    await this.hiccup?.reportedAfter(m1)
    const hiccup = this.hiccup ? this.hiccup.stalls(m0 - FLEET_TICK_MS, m1) : []
    const known = hiccup.filter((x) => x !== null)
    const w = fleet.window(t0, t1)
    const seconds = w.ticks / fleet.kids.length
    const pubPerSec = this.published(t0, t1)
    const expected = this.offered(t0, t1, fleet.subsPerSymbol)
    const delivered = seconds > 0 ? (strict ? w.entries : w.covered) / seconds : 0
    const [p50, p99, p999] = quantiles(w.hist, [0.5, 0.99, 0.999])
    // The load generator's own share: how long what it read had sat in its
    // sockets (epoll mode only; a lower bound per frame, loadgen Stats.Wait).
    const readWaitP99 = w.wait?.size ? quantiles(w.wait, [0.99])[0] : null
    // p99 to the clients' sockets instead of to their reads: what the server
    // and the kernel did, without the load generator's lag (an upper bound
    // per entry: the read's last segment may have come after the entry's).
    // The step is still judged by p99 (at the read): the conservative one.
    const socketP99 = w.arrived?.size ? quantiles(w.arrived, [0.99])[0] : null
    const clientsOver = shareOver(w.hist, P99_LIMIT_MS)
    const serverOver = probed0 && probed1 ? serverShareOver(probed0, probed1, P99_LIMIT_MS) : null
    const arrivalP99 = probed0 && probed1 ? gatewayQuantile(probed0, probed1, RECEIVE_LAG, 0.99) : null
    // prom-client resets its event-loop delay histogram at every scrape, so
    // the second one's p99 covers the window since the first.
    const loopLag = probed1 ? Object.entries(probed1).find(([k]) => k === LOOP_LAG_P99 || k.startsWith(`${LOOP_LAG_P99}{`))?.[1] : undefined
    const publisherKeptUp = pubPerSec >= 0.9 * rate
    const keptUp = delivered >= KEEP_UP * expected
    // Everything on the load core: past the limit the step may have measured
    // the load generator (a feed process of a server's own, like
    // Centrifugo's bridge, runs there too and is in its tree of pids only
    // when the server says so).
    // The core's own busy share counts what the processes' CPU time misses
    // (softirq work on it); the larger of the two decides.
    const loadCore = round(Math.max(cpu.loadgen + cpu.redis + cpu.publisher, cores.load ?? 0), 3)
    return {
      rate: Math.round(rate),
      published: Math.round(pubPerSec),
      expected: Math.round(expected),
      delivered: Math.round(delivered),
      entries: Math.round(seconds > 0 ? w.entries / seconds : 0),
      frames: Math.round(seconds > 0 ? w.frames / seconds : 0),
      quotesPerFrame: w.frames ? round(w.entries / w.frames, 2) : 0,
      gaps: w.gaps,
      ticksLost: w.ticksLost,
      errors: w.errors,
      p50: round(p50, 1),
      p99: round(p99, 1),
      p999: round(p999, 1),
      overBound: { clients: clientsOver === null ? null : round(clientsOver, 4), server: serverOver === null ? null : round(serverOver, 4) },
      // The gateway's sampled p99 age of quotes as it read them (publisher
      // ts to its hub): the part of the latency before the gateway.
      arrivalP99: arrivalP99 === null ? null : round(arrivalP99, 1),
      readWaitP99: readWaitP99 === null ? null : round(readWaitP99, 1),
      socketP99: socketP99 === null ? null : round(socketP99, 1),
      // The gateway's event-loop delay p99 over the window: the part of the
      // arrival lag the gateway's own loop adds (busy with a chunk, or GC).
      loopLagP99: loopLag === undefined ? null : round(loopLag * 1000, 1),
      cpu,
      cores,
      steal: stolen,
      // Cores' worth of CPU used by processes the bench did not start.
      others: othersCpu,
      hiccup: hiccup.map((x) => (x === null ? null : round(x, 1))),
      hiccupMs: known.length ? round(Math.max(...known), 1) : null,
      rssMiB: round(rss / 2 ** 20, 1),
      perCore: cpu.server > 0.05 ? Math.round(delivered / cpu.server) : null,
      publisherKeptUp,
      keptUp,
      loadCore,
      loadBound: loadCore > LOAD_CORE_LIMIT,
      strict,
      pass: p99 <= P99_LIMIT_MS && keptUp && publisherKeptUp && (!strict || (w.gaps === 0 && w.ticksLost === 0))
    }
  }

  /**
   * Waits until a fleet receives nothing for a whole tick (a saturated
   * server's backlog drained) or timeoutMs passed.
   *
   * @param {import('./fleet.js').Fleet} fleet
   * @param {number} timeoutMs
   */
  async drained (fleet, timeoutMs) {
    const end = Date.now() + timeoutMs
    while (Date.now() < end) {
      const t = Date.now()
      await sleep(1100)
      await fleet.tickedAfter(Date.now())
      const w = fleet.window(t, Date.now())
      if (w.entries === 0 && w.snaps === 0) return true
    }
    log('  (backlog still draining after the saturation step)')
    return false
  }
}

/** @param {any[]} list per-process {n,p50,p90,p99,max} @returns {any} n-weighted (approximate) */
export function mergeSummaries (list) {
  const n = list.reduce((a, s) => a + (s.n ?? 0), 0)
  const w = (/** @type {string} */ k) => round(list.reduce((a, s) => a + (s[k] ?? 0) * (s.n ?? 0), 0) / Math.max(1, n), 1)
  return { n, p50: w('p50'), p90: w('p90'), p99: w('p99'), max: round(Math.max(...list.map((s) => s.max ?? 0)), 1) }
}

/** @param {number[]} xs */
export function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN
}

/** @param {number} x @param {number} d */
export function round (x, d) {
  const f = 10 ** d
  return Math.round(x * f) / f
}

/**
 * The share of a loadgen latency histogram over `ms`.
 *
 * @param {Map<number, number>} hist loadgen bucket -> count
 * @param {number} ms
 * @returns {number | null} null when empty
 */
export function shareOver (hist, ms) {
  let all = 0
  let over = 0
  for (const [b, c] of hist) {
    all += c
    if (bucketMs(b) > ms) over += c
  }
  return all > 0 ? over / all : null
}

/** A Node server's event-loop delay p99 since the last scrape (prom-client's default metrics). */
const LOOP_LAG_P99 = 'nodejs_eventloop_lag_p99_seconds'

/** The gateway's sampled histogram of quote ts to read from Redis. */
const RECEIVE_LAG = 'wsps_gateway_receive_lag_seconds'

/**
 * A gateway histogram over the samples between two scrapes, its series
 * summed: each bucket's upper edge (ms; +Inf as Infinity) → samples at or
 * under it, in edge order, and the samples in all (the +Inf bucket's).
 *
 * @param {Record<string, number>} before parseMetrics of /metrics
 * @param {Record<string, number>} after
 * @param {string} name the histogram's name (seconds)
 * @returns {{ edges: [number, number][], total: number }}
 */
function bucketsBetween (before, after, name) {
  /** @type {Map<number, number>} */
  const cumulative = new Map()
  for (const [k, v] of Object.entries(after)) {
    if (!k.startsWith(`${name}_bucket{`)) continue
    const le = /le="([^"]+)"/.exec(k)?.[1]
    if (le === undefined) continue
    const edge = le === '+Inf' ? Infinity : Number(le) * 1000
    cumulative.set(edge, (cumulative.get(edge) ?? 0) + v - (before[k] ?? 0))
  }
  return { edges: [...cumulative].sort((a, b) => a[0] - b[0]), total: cumulative.get(Infinity) ?? 0 }
}

/**
 * A quantile of a gateway histogram over the samples between two scrapes
 * (its series summed), linear within the bucket it falls in; past the last
 * finite bucket, that bucket's edge (a lower bound).
 *
 * @param {Record<string, number>} before parseMetrics of /metrics
 * @param {Record<string, number>} after
 * @param {string} name the histogram's name (seconds)
 * @param {number} q 0..1
 * @returns {number | null} ms; null without samples (or without the histogram)
 */
export function gatewayQuantile (before, after, name, q) {
  const { edges, total } = bucketsBetween(before, after, name)
  if (total <= 0) return null
  const rank = q * total
  let lowEdge = 0
  let lowCount = 0
  for (const [edge, count] of edges) {
    if (count >= rank) return edge === Infinity ? lowEdge : lowEdge + (edge - lowEdge) * (count > lowCount ? (rank - lowCount) / (count - lowCount) : 1)
    lowEdge = edge
    lowCount = count
  }
  return lowEdge
}

/** The gateway's histogram of quote ts to written (wsps_gateway_publish_to_send_seconds). */
const SEND_AGE = 'wsps_gateway_publish_to_send_seconds'

/**
 * The share of the gateway's latency samples between two scrapes that were
 * over `ms` (its histogram has a bucket at 100 ms: the bound).
 *
 * @param {Record<string, number>} before parseMetrics of /metrics
 * @param {Record<string, number>} after
 * @param {number} ms a bucket edge of the histogram
 * @returns {number | null} null without samples (merge mode records none)
 */
export function serverShareOver (before, after, ms) {
  const { edges, total: n } = bucketsBetween(before, after, SEND_AGE)
  if (n <= 0) return null
  const under = edges.find(([edge]) => edge === ms)?.[1] ?? 0
  return (n - under) / n
}
