// The harness's one set of numeric helpers: percentiles of samples and of
// histograms, and a mergeable 1 ms latency histogram. Plain ESM without
// imports or Node APIs: the testkit, chaos, bench, the e2e fleet and the k6
// scripts (loadtest/lib/tally.js) all use it.

/**
 * The nearest-rank p-th percentile of `values`.
 *
 * @param {number[]} values
 * @param {number} p 0..100
 * @returns {number} NaN when there are no values
 */
export function percentile (values, p) {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[rankIndex(sorted.length, p)]
}

/**
 * The nearest-rank p-th percentile of a histogram: the upper bound of the
 * bucket that holds that rank (so within one bucket's width, never below).
 *
 * @param {Iterable<[number | string, number]>} buckets [bucket, count] pairs, any order (a Map, Object.entries(...))
 * @param {number} p 0..100
 * @param {(bucket: number) => number} [upperBound] value of a bucket's upper edge (default: the bucket itself)
 * @returns {number} NaN when the histogram is empty
 */
export function histogramPercentile (buckets, p, upperBound = (b) => b) {
  const sorted = [...buckets].map(([b, n]) => [Number(b), n]).sort((x, y) => x[0] - y[0])
  const total = sorted.reduce((t, [, n]) => t + n, 0)
  if (total === 0) return NaN
  const rank = rankIndex(total, p) + 1
  let seen = 0
  for (const [b, n] of sorted) {
    seen += n
    if (seen >= rank) return upperBound(b)
  }
  return upperBound(sorted[sorted.length - 1][0])
}

/**
 * @param {number} n
 * @param {number} p 0..100
 */
function rankIndex (n, p) {
  return Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1))
}

/**
 * A latency histogram with 1 ms buckets up to `maxMs` (and one overflow
 * bucket), cheap enough to keep per phase in every client process and to
 * merge across processes.
 */
export class Histogram {
  /** @param {number} [maxMs] */
  constructor (maxMs = 10_000) {
    this.counts = new Array(maxMs + 2).fill(0)
    this.n = 0
    this.max = 0
  }

  /** @param {number} ms */
  add (ms) {
    const v = Math.max(0, Math.round(ms))
    this.counts[Math.min(v, this.counts.length - 1)]++
    this.n++
    if (v > this.max) this.max = v
  }

  /** @param {{counts: number[], n: number, max: number}} other */
  merge (other) {
    for (let i = 0; i < other.counts.length && i < this.counts.length; i++) this.counts[i] += other.counts[i]
    this.n += other.n
    this.max = Math.max(this.max, other.max)
    return this
  }

  /** @param {number} p 0..100 */
  quantile (p) {
    return histogramPercentile(this.counts.entries(), p)
  }

  summary () {
    return { count: this.n, p50: this.quantile(50), p99: this.quantile(99), max: this.max }
  }

  toJSON () {
    return { counts: this.counts, n: this.n, max: this.max }
  }
}

/** @param {number} bytes @returns {number} MB with one decimal */
export const mb = (bytes) => Math.round(bytes / 1e5) / 10
