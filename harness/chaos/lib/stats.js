// Small numeric helpers shared by scenarios and their child processes.

/**
 * @param {number[]} values
 * @param {number} p 0..100
 */
export function percentile (values, p) {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[i]
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
    if (this.n === 0) return NaN
    const target = Math.ceil((p / 100) * this.n)
    let seen = 0
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]
      if (seen >= target) return i
    }
    return this.max
  }

  summary () {
    return { count: this.n, p50: this.quantile(50), p99: this.quantile(99), max: this.max }
  }

  toJSON () {
    return { counts: this.counts, n: this.n, max: this.max }
  }
}

/** @param {number} bytes */
export const mb = (bytes) => Math.round(bytes / 1e5) / 10
