// The harness's numeric helpers (src/stats.js): pure, no processes.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Histogram, histogramPercentile, mb, percentile } from '../src/stats.js'

test('percentile is nearest-rank over unsorted samples; NaN when there are none', () => {
  const xs = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6]
  assert.equal(percentile(xs, 50), 5)
  assert.equal(percentile(xs, 90), 9)
  assert.equal(percentile(xs, 99), 10)
  assert.equal(percentile(xs, 100), 10)
  assert.equal(percentile(xs, 0), 1)
  assert.deepEqual(xs.slice(0, 2), [5, 1], 'the input is not sorted in place')
  assert.ok(Number.isNaN(percentile([], 50)))
})

test('histogramPercentile walks buckets in numeric order and returns the upper edge of the rank\'s bucket', () => {
  // 10 samples in bucket 2, 90 in bucket 10, as unordered string keys
  const hist = { 10: 90, 2: 10 }
  assert.equal(histogramPercentile(Object.entries(hist), 10), 2)
  assert.equal(histogramPercentile(Object.entries(hist), 11), 10)
  assert.equal(histogramPercentile(new Map([[10, 90], [2, 10]]), 99, (b) => b * 100), 1000)
  assert.ok(Number.isNaN(histogramPercentile([], 50)))
})

test('Histogram keeps 1 ms buckets, merges, and agrees with percentile on whole-ms samples', () => {
  const samples = Array.from({ length: 500 }, (_, i) => (i * 37) % 250)
  const a = new Histogram(1000)
  const b = new Histogram(1000)
  samples.forEach((ms, i) => (i % 2 ? a : b).add(ms))
  const h = new Histogram(1000).merge(a.toJSON()).merge(b.toJSON())
  assert.equal(h.n, samples.length)
  for (const p of [50, 90, 99, 100]) assert.equal(h.quantile(p), percentile(samples, p))
  assert.deepEqual(h.summary(), { count: 500, p50: percentile(samples, 50), p99: percentile(samples, 99), max: 249 })
  assert.equal(mb(2_345_678), 2.3)
})
