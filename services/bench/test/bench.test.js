// Unit tests of the bench's pure parts: latency histogram quantiles, the
// Markdown report. (The benchmark itself is `make bench`, never `make test`.)

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { bucketMs, quantiles } from '../src/fleet.js'
import { renderMarkdown } from '../src/report.js'

test('bucketMs matches the Go load generator buckets (0.1 ms below 100 ms, 1 ms above)', () => {
  assert.equal(bucketMs(0), 0.1)
  assert.equal(bucketMs(999), 100)
  assert.equal(bucketMs(1000), 101)
  assert.equal(bucketMs(1899), 1000)
})

test('quantiles walk the histogram in bucket order', () => {
  const h = new Map([[10, 50], [0, 49], [1500, 1]])
  const [p50, p99, p100] = quantiles(h, [0.5, 0.99, 1])
  assert.equal(p50, bucketMs(10))
  assert.equal(p99, bucketMs(10))
  assert.equal(p100, bucketMs(1500))
  assert.ok(Number.isNaN(quantiles(new Map(), [0.5])[0]))
})

test('the report renders a headline row per server with the ratio to the naive baseline', () => {
  const step = (delivered, cpu) => ({ rate: 1, published: 1, expected: delivered, delivered, entries: delivered, frames: delivered, quotesPerFrame: 1, p50: 1, p99: 2, p999: 3, cpu: { server: cpu, loadgen: 0.1, redis: 0.1, publisher: 0.1 }, rssMiB: 10, perCore: delivered / cpu, pass: true })
  const md = renderMarkdown({
    profile: 'test',
    startedAt: 'now',
    machine: { cpus: 2, model: 'x', memGiB: 1, node: 'v20', loadavgStart: [1, 1, 1] },
    placement: { serverCore: '1', loadCore: '0' },
    params: { conns: 10, k: 2, symbols: 5, zipf: 1, storm: 10, stormProcs: 1, nginxConns: 1, nginxReps: 1, simConns: 1 },
    fanout: {
      wsps: { label: 'wsps gateway', steps: [step(5000, 0.5)], max: step(5000, 0.5), limit: 'p99', at50: step(2500, 0.2), saturated: step(6000, 1) },
      naive: { label: 'naive', steps: [step(1000, 0.5)], max: step(1000, 0.5), limit: 'p99', at50: step(500, 0.2), saturated: step(1200, 1) }
    },
    idle: {},
    nginx: null,
    sim: null
  })
  assert.match(md, /\| wsps gateway \| 5,000 \| 5\.0× \|/)
  assert.match(md, /\| naive \| 1,000 \| 1\.0× \|/)
})
