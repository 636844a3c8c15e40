// The host hiccup meter: one `hiccup` program per core, pinned there at
// real-time priority for the whole run (loadgen/cmd/hiccup), and what the
// bench reads of it: the longest stall of the platform in a window.

import { cpus } from 'node:os'
import { percentile } from '../../testkit/src/stats.js'
import { start } from './spawn.js'

/** CLOCK_MONOTONIC in ms: the meter's clock (libuv's hrtime reads the same one). */
export const monoMs = () => Number(process.hrtime.bigint() / 1000n) / 1000

/**
 * @typedef {{type: 'hiccup', core: number, tUs: number, atUs: number, maxUs: number, n: number}} HiccupLine
 *   one interval of one core: its latest wake-up was maxUs late at atUs, so
 *   the core stalled over [atUs - maxUs, atUs]
 */

/**
 * The longest stall of one core that overlaps [m0, m1] (monotonic ms), in
 * ms; null when the meter reported no interval ending in or after the window
 * (it was not running: unknown, not zero).
 *
 * @param {HiccupLine[]} lines
 * @param {number} m0
 * @param {number} m1
 * @returns {number | null}
 */
export function stallIn (lines, m0, m1) {
  let max = null
  for (const l of lines) {
    if (l.type !== 'hiccup' || l.tUs / 1000 <= m0) continue
    if (max === null) max = 0
    const at = l.atUs / 1000
    const ms = l.maxUs / 1000
    if (at >= m0 && at - ms <= m1) max = Math.max(max, ms)
  }
  return max
}

/**
 * Quantiles of the per-interval maxima (ms) over every core's lines.
 *
 * @param {HiccupLine[]} lines
 * @returns {{intervals: number, maxMs: number | null, p99Ms: number | null}}
 */
export function hiccupSummary (lines) {
  const xs = lines.filter((l) => l.type === 'hiccup').map((l) => l.maxUs / 1000)
  if (xs.length === 0) return { intervals: 0, maxMs: null, p99Ms: null }
  return { intervals: xs.length, maxMs: Math.max(...xs), p99Ms: percentile(xs, 99) }
}

/** One meter process per core, started once per run. */
export class HiccupMeter {
  /** @type {{core: string, child: import('./spawn.js').Child, ready: any}[]} */
  #cores = []

  /**
   * Starts one meter per core (taskset) and waits for each to say whether
   * it got SCHED_FIFO.
   *
   * @param {string} bin the hiccup program (loadgen/cmd/hiccup)
   * @param {string[]} [cores] default: every CPU
   */
  static async start (bin, cores = cpus().map((_, i) => String(i))) {
    const m = new HiccupMeter()
    for (const core of cores) {
      const child = start(bin, [`-core=${core}`], { core, name: `hiccup-${core}` })
      m.#cores.push({ core, child, ready: null })
    }
    for (const c of m.#cores) c.ready = await c.child.waitLine((l) => l.type === 'ready', 10_000)
    return m
  }

  /** @returns {boolean} every meter runs at real-time priority */
  get realtime () {
    return this.#cores.every((c) => c.ready?.rt)
  }

  /** @returns {string[]} why real-time priority was refused, per core that was */
  get refusals () {
    return this.#cores.filter((c) => !c.ready?.rt).map((c) => `core ${c.core}: ${c.ready?.rtError}`)
  }

  /**
   * The longest stall per core over [m0, m1] (monotonic ms).
   *
   * @param {number} m0
   * @param {number} m1
   * @returns {(number | null)[]} in core order
   */
  stalls (m0, m1) {
    return this.#cores.map((c) => stallIn(c.child.lines, m0, m1))
  }

  /** Waits (up to timeoutMs) until every meter reported an interval ending after m (monotonic ms). */
  async reportedAfter (/** @type {number} */ m, timeoutMs = 2000) {
    // From the last line on: waitLine scans from `from` at every line.
    await Promise.all(this.#cores.map((c) => c.child.waitLine((l) => l.type === 'hiccup' && l.tUs / 1000 > m, timeoutMs, Math.max(0, c.child.lines.length - 1)).catch(() => null)))
  }

  /** The run so far: real-time or not, and max and p99 of the 100 ms intervals, per core. */
  summary () {
    return {
      realtime: this.realtime,
      refusals: this.refusals,
      cores: this.#cores.map((c) => ({ core: c.core, ...hiccupSummary(c.child.lines) }))
    }
  }

  async stop () {
    await Promise.all(this.#cores.map((c) => c.child.stop('SIGTERM', { graceMs: 2000, killAfterMs: 2000 })))
  }
}
