// Per-node tallies and histograms that survive into handleSummary.
//
// k6 tags every wsps_* sample with the node, but its end-of-test summary only
// breaks a metric down by tag for submetrics declared in `thresholds`, and
// pod names are not known before the run (3-4 pods, new names after a
// rolling update). Checks are the one place where k6 keeps counts under
// names chosen at run time: handleSummary gets every check with its passes.
// So each VU adds up its counts locally and flushes them now and then as
// checks named `wsps|<kind>|<key>|<bit>`, one passing check per set bit of
// the count (a count of 13 = 8+4+1 costs 3 checks). decodeTallies() sums
// passes * 2^bit back. Exact, cheap (log2 of the count per flush), and
// independent of how many nodes there are.

import { histogramPercentile } from '../../harness/testkit/src/stats.js'

export const TALLY_PREFIX = 'wsps|'

/**
 * Histogram buckets: 20 per decade (each ~12% wide), bucket 0 holds values
 * below 1. Index of value v >= 1 is 1 + floor(20 * log10(v)).
 */
export const BUCKETS_PER_DECADE = 20

/** @param {number} v */
export function bucketOf (v) {
  return v < 1 ? 0 : 1 + Math.floor(BUCKETS_PER_DECADE * Math.log10(v))
}

/**
 * [low, high) bounds of a bucket.
 * @param {number} i
 * @returns {[number, number]}
 */
export function bucketBounds (i) {
  if (i <= 0) return [0, 1]
  return [Math.pow(10, (i - 1) / BUCKETS_PER_DECADE), Math.pow(10, i / BUCKETS_PER_DECADE)]
}

/**
 * The p-th percentile (0-100) of a histogram {bucket: count}, as the upper
 * bound of the bucket holding it (conservative, within ~12%).
 *
 * @param {Record<string, number>} hist
 * @param {number} p
 * @returns {number | null}
 */
export function histPercentile (hist, p) {
  const v = histogramPercentile(Object.entries(hist), p, (k) => bucketBounds(k)[1])
  return Number.isNaN(v) ? null : v
}

/**
 * @param {Record<string, number>} hist
 * @returns {number}
 */
export function histCount (hist) {
  return Object.values(hist).reduce((t, n) => t + n, 0)
}

/**
 * Check names (with repeat counts) that carry `n` for kind/key.
 *
 * @param {string} kind
 * @param {string} key
 * @param {number} n a non-negative integer
 * @returns {string[]} one name per set bit
 */
export function encodeTally (kind, key, n) {
  const out = []
  let v = Math.floor(n)
  const safeKey = String(key).replace(/[|:]/g, '_') || '-'
  for (let bit = 0; v > 0; bit++) {
    // Beyond 2^31 bitwise operators would wrap; use arithmetic.
    if (v % 2 === 1) out.push(`${TALLY_PREFIX}${kind}|${safeKey}|${bit}`)
    v = Math.floor(v / 2)
  }
  return out
}

/**
 * Sums the tallies back from handleSummary's checks.
 *
 * @param {{name: string, passes: number}[]} checks
 * @returns {Record<string, Record<string, number>>} kind -> key -> count
 */
export function decodeTallies (checks) {
  /** @type {Record<string, Record<string, number>>} */
  const out = {}
  for (const c of checks) {
    if (!c.name.startsWith(TALLY_PREFIX)) continue
    const parts = c.name.slice(TALLY_PREFIX.length).split('|')
    if (parts.length !== 3) continue
    const [kind, key, bit] = parts
    const byKey = (out[kind] ??= {})
    byKey[key] = (byKey[key] ?? 0) + c.passes * Math.pow(2, Number(bit))
  }
  return out
}

/** Walks k6's root_group (and nested groups) and returns every check. */
export function allChecks (/** @type {any} */ group) {
  /** @type {{name: string, passes: number}[]} */
  const out = []
  const walk = (/** @type {any} */ g) => {
    if (!g) return
    for (const c of g.checks ?? []) out.push(c)
    for (const sub of g.groups ?? []) walk(sub)
  }
  walk(group)
  return out
}

/**
 * Counts kept by one VU between flushes: kind -> key -> n, plus histograms
 * (kind `h.<name>`, key = bucket index).
 */
export class Tally {
  constructor () {
    /** @type {Map<string, Map<string, number>>} */
    this.counts = new Map()
  }

  /**
   * @param {string} kind
   * @param {string} key
   * @param {number} [n]
   */
  add (kind, key, n = 1) {
    if (!(n > 0)) return
    let byKey = this.counts.get(kind)
    if (!byKey) this.counts.set(kind, (byKey = new Map()))
    byKey.set(key, (byKey.get(key) ?? 0) + n)
  }

  /**
   * Adds a value to histogram `name`.
   *
   * @param {string} name
   * @param {number} value
   */
  observe (name, value) {
    this.add(`h.${name}`, String(bucketOf(value)))
  }

  /**
   * Adds a whole local histogram (an array: bucket index -> count) and clears it.
   *
   * @param {string} name
   * @param {number[]} buckets
   */
  addBuckets (name, buckets) {
    for (let i = 0; i < buckets.length; i++) {
      if (buckets[i] > 0) {
        this.add(`h.${name}`, String(i), buckets[i])
        buckets[i] = 0
      }
    }
  }

  /**
   * Empties the tally and returns the check names to emit (a name may repeat).
   * @returns {string[]}
   */
  drain () {
    /** @type {string[]} */
    const names = []
    for (const [kind, byKey] of this.counts) {
      for (const [key, n] of byKey) names.push(...encodeTally(kind, key, n))
    }
    this.counts.clear()
    return names
  }
}
