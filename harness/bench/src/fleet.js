// A fleet of loadgen processes against one server: spread over processes
// and fresh loopback source addresses, pinned to the load generator's core.

import { histogramPercentile } from '../../testkit/src/stats.js'
import { start } from './spawn.js'

let nextIp = 20
/** A fresh 127.0.0.x for every loadgen process of the run (no port reuse, no TIME_WAIT clashes). */
function freshIp () {
  const n = nextIp++
  return `127.0.${1 + Math.floor(n / 250)}.${1 + (n % 250)}`
}

/**
 * @typedef {object} FleetOptions
 * @property {string} bin the load generator program (loadgen/cmd/loadgen)
 * @property {string} adapter
 * @property {string} url
 * @property {number} conns total
 * @property {number} procs
 * @property {number} symbols
 * @property {number} k
 * @property {number} zipf
 * @property {number} [seed]
 * @property {number} [first] global index of the first connection
 * @property {number} [concurrency] handshakes in flight per process
 * @property {boolean} [waitSnap]
 * @property {string | null} core
 * @property {number} maxSeconds
 * @property {number} [readyTimeout] seconds; then go on with the connections ready so far (0: wait for all)
 * @property {'goroutine' | 'epoll'} [mode] the load generator's client (loadgen -mode; epoll only for EPOLL_ADAPTERS)
 * @property {string[]} [extraArgs] more loadgen flags
 * @property {AbortSignal} [signal] aborted: stop connecting now and go on with the connections ready so far
 */

/**
 * The adapters the load generator's epoll mode speaks (a client that only
 * subscribes): far less of the load core per frame than a goroutine and a
 * gorilla connection each, so the load generator stays out of the way of the
 * servers it measures. The others (handshakes, pings) need the goroutine mode.
 */
export const EPOLL_ADAPTERS = new Set(['wsps', 'wsps-distinct', 'naive', 'pushpin', 'wsps-books', 'naive-books'])

/** @param {FleetOptions} o */
export async function startFleet (o) {
  if (o.mode === 'epoll' && !EPOLL_ADAPTERS.has(o.adapter)) throw new Error(`the load generator's epoll mode does not speak ${o.adapter}`)
  const per = Math.ceil(o.conns / o.procs)
  const kids = []
  for (let i = 0; i < o.procs; i++) {
    const n = Math.min(per, o.conns - i * per)
    if (n <= 0) break
    kids.push(start(o.bin, [
      `-adapter=${o.adapter}`, `-url=${o.url}`, `-conns=${n}`, `-first=${(o.first ?? 0) + i * per}`,
      `-src=${freshIp()},${freshIp()}`, `-symbols=${o.symbols}`, `-k=${o.k}`, `-zipf=${o.zipf}`,
      `-seed=${o.seed ?? 1}`, `-concurrency=${o.concurrency ?? 64}`, `-wait-snap=${o.waitSnap ?? true}`,
      `-max-seconds=${o.maxSeconds}`, `-ready-timeout=${o.readyTimeout ?? 0}`, `-mode=${o.mode ?? 'goroutine'}`, ...(o.extraArgs ?? [])
    ], { core: o.core, name: `loadgen-${o.adapter}-${i}` }))
  }
  const cutAll = () => { for (const k of kids) k.send({ cmd: 'cut' }) }
  if (o.signal?.aborted) cutAll()
  o.signal?.addEventListener('abort', cutAll, { once: true })
  const t0 = performance.now()
  const readies = await Promise.all(kids.map((k) => k.waitLine((l) => l.type === 'ready', o.maxSeconds * 1000)))
  const elapsedMs = performance.now() - t0
  const subsPerSymbol = new Array(o.symbols).fill(0)
  for (const r of readies) r.subsPerSymbol.forEach((/** @type {number} */ v, /** @type {number} */ i) => { subsPerSymbol[i] += v })
  const errors = kids.flatMap((k) => k.lines.filter((l) => l.type === 'error').slice(0, 3).map((l) => l.error))
  return {
    kids,
    pids: () => kids.map((k) => k.pid),
    conns: readies.reduce((a, r) => a + r.conns, 0),
    failed: readies.reduce((a, r) => a + r.failed, 0),
    errors,
    elapsedMs,
    readies,
    subsPerSymbol,
    totalSubs: subsPerSymbol.reduce((a, b) => a + b, 0),
    /**
     * Sums the ticks of every process with t0 < t <= t1.
     * @param {number} t0
     * @param {number} t1
     */
    window (t0, t1) {
      const sum = { frames: 0, entries: 0, covered: 0, snaps: 0, gaps: 0, ticksLost: 0, dups: 0, errors: 0, ticks: 0 }
      /** @type {Map<number, number>} */
      const hist = new Map()
      /** @type {Map<number, number>} the epoll mode's read wait (loadgen Stats.Wait), same buckets */
      const wait = new Map()
      /** @type {Map<number, number>} the epoll mode's latency to the client's socket (loadgen Stats.Arrived) */
      const arrived = new Map()
      for (const k of kids) {
        for (const l of k.lines) {
          if (l.type !== 'tick' || l.t <= t0 || l.t > t1) continue
          sum.ticks++
          for (const f of /** @type {const} */ (['frames', 'entries', 'covered', 'snaps', 'gaps', 'ticksLost', 'dups', 'errors'])) sum[f] += l[f] ?? 0
          addBuckets(hist, l.hist)
          addBuckets(wait, l.wait)
          addBuckets(arrived, l.arrived)
        }
      }
      return { ...sum, hist, wait, arrived }
    },
    /** Waits until every process has reported a tick at or after t. */
    async tickedAfter (/** @type {number} */ t, timeoutMs = 3000) {
      await Promise.all(kids.map((k) => k.waitLine((l) => l.type === 'tick' && l.t >= t, timeoutMs).catch(() => null)))
    },
    /**
     * Sends a loadgen command to every process and waits for its answer:
     * `hold` marks the start of the hold, `check` sums the exact
     * per-connection counts (loadgen/cmd/loadgen/commands.go).
     *
     * @param {'hold' | 'check'} cmd
     * @param {number} [timeoutMs]
     */
    async command (cmd, timeoutMs = 30_000) {
      const answers = await Promise.all(kids.map((k) => {
        const from = k.lines.length
        k.send({ cmd })
        return k.waitLine((l) => l.type === cmd, timeoutMs, from)
      }))
      return answers
    },
    async stop () { await Promise.all(kids.map((k) => k.stop('SIGTERM', { graceMs: 8000, killAfterMs: 3000 }))) }
  }
}

/** @typedef {Awaited<ReturnType<typeof startFleet>>} Fleet */

/** Upper edge of a loadgen latency bucket, in ms. @param {number} b */
export function bucketMs (b) {
  return b < 1000 ? (b + 1) * 0.1 : 100 + (b - 1000 + 1)
}

/**
 * Adds a tick line's histogram (loadgen bucket -> count; absent: nothing) into a sum.
 *
 * @param {Map<number, number>} into
 * @param {Record<string, number> | undefined} buckets
 */
function addBuckets (into, buckets) {
  for (const [b, c] of Object.entries(buckets ?? {})) into.set(Number(b), (into.get(Number(b)) ?? 0) + c)
}

/**
 * @param {Map<number, number>} hist loadgen bucket -> count
 * @param {number[]} qs quantiles (0..1)
 * @returns {number[]} ms (upper bucket edges; NaN when empty)
 */
export function quantiles (hist, qs) {
  return qs.map((q) => histogramPercentile(hist, q * 100, bucketMs))
}
