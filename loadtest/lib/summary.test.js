import assert from 'node:assert/strict'
import { test } from 'node:test'
import { balance, buildSummary, fmt, mergeSummaries, renderText, thresholdValue } from './summary.js'
import { Tally, bucketOf } from './tally.js'

const META = { scenario: 'ramp', target: 100, peakConns: 100, vus: 10, connsPerVu: 10, subs: 5, symbols: 200, skew: 1, urls: ['ws://localhost:8080/ws'], reconnect: false, rampMs: 10000, holdMs: 20000 }

/**
 * Fake k6 handleSummary data: per-node tallies as checks, some metrics.
 *
 * @param {Record<string, number>} conns
 * @param {{latOk?: boolean, lat?: number}} [opts]
 */
function fakeData (conns, { latOk = true, lat = 12 } = {}) {
  const t = new Tally()
  for (const [node, n] of Object.entries(conns)) {
    t.add('conn', node, n)
    t.add('q', node, n * 100)
    t.add('qh', node, n * 100)
    t.add('lat', node, n * 100 * lat)
    for (let i = 0; i < n * 100; i++) t.observe('lat', lat)
  }
  t.add('err', 'RATE_LIMITED', 2)
  /** @type {Map<string, number>} */
  const passes = new Map()
  for (const n of t.drain()) passes.set(n, (passes.get(n) ?? 0) + 1)
  const quotes = Object.values(conns).reduce((a, b) => a + b, 0) * 100
  return {
    state: { testRunDurationMs: 30000 },
    root_group: { name: '', checks: [...passes].map(([name, p]) => ({ name, passes: p, fails: 0 })), groups: [] },
    metrics: {
      wsps_quote_latency: { type: 'trend', values: { avg: lat, med: lat, 'p(90)': lat, 'p(95)': lat, 'p(99)': lat, max: lat, count: quotes }, thresholds: { 'p(95)<250': { ok: latOk } } },
      wsps_quotes: { type: 'counter', values: { count: quotes, rate: quotes / 30 }, thresholds: { 'count>0': { ok: true } } },
      wsps_connect_success: { type: 'rate', values: { rate: 1, passes: 100, fails: 0 }, thresholds: { 'rate>=0.99': { ok: true } } },
      wsps_seq_gaps: { type: 'counter', values: { count: 0, rate: 0 }, thresholds: { 'count==0': { ok: true } } }
    }
  }
}

test('thresholdValue picks the aggregation a threshold tests', () => {
  assert.equal(thresholdValue({ 'p(95)': 12.5 }, 'p(95)<250'), 12.5)
  assert.equal(thresholdValue({ 'p(99.9)': 3 }, 'p(99.9) < 5'), 3)
  assert.equal(thresholdValue({ rate: 0.5 }, 'rate>=0.99'), 0.5)
  assert.equal(thresholdValue({ count: 0 }, 'count==0'), 0)
  assert.equal(thresholdValue({}, 'count==0'), null)
})

test('buildSummary: per-pod counts from the tallies, thresholds, errors', () => {
  const s = buildSummary(fakeData({ 'gateway-1': 60, 'gateway-2': 40 }), META)
  assert.equal(s.ok, true)
  assert.deepEqual(Object.keys(s.pods).sort(), ['gateway-1', 'gateway-2'])
  assert.equal(s.pods['gateway-1'].conns, 60)
  assert.equal(s.pods['gateway-2'].quotes, 4000)
  assert.equal(s.totals.quotes, 10000)
  assert.equal(s.totals.quotesHold, 10000)
  assert.deepEqual(s.errors, { RATE_LIMITED: 2 })
  assert.equal(s.thresholds.length, 4)
  assert.equal(s.trends.lat.p95, 12)
  assert.equal(s.hist.lat[bucketOf(12)], 10000)
})

test('renderText shows every pod, the balance and the verdict', () => {
  const pass = renderText(buildSummary(fakeData({ 'gw-a': 30, 'gw-b': 30, 'gw-c': 20, 'gw-d': 20 }), META))
  for (const pod of ['gw-a', 'gw-b', 'gw-c', 'gw-d']) assert.match(pass, new RegExp(`\\n  ${pod} +\\d`))
  assert.match(pass, /balance over 4 pod\(s\): max 30 \/ min 20 = 1\.50/)
  assert.match(pass, /during the hold: 500 quotes\/s/)
  assert.match(pass, /RATE_LIMITED 2/)
  assert.match(pass, /RESULT: PASS \(4 thresholds\)/)
  const fail = renderText(buildSummary(fakeData({ 'gw-a': 1 }, { latOk: false }), META))
  assert.match(fail, /FAIL +wsps_quote_latency +p\(95\)<250/)
  assert.match(fail, /RESULT: FAIL \(1 of 4 thresholds failed: wsps_quote_latency\)/)
})

test('mergeSummaries adds counts, merges histograms and fails if any shard failed', () => {
  const a = buildSummary(fakeData({ 'gateway-1': 50, 'gateway-2': 50 }, { lat: 10 }), META)
  const b = buildSummary(fakeData({ 'gateway-1': 30, 'gateway-3': 70 }, { lat: 100, latOk: false }), META)
  const m = mergeSummaries([a, b])
  assert.equal(m.shards, 2)
  assert.equal(m.ok, false)
  assert.equal(m.meta.target, 200)
  assert.deepEqual(Object.fromEntries(Object.entries(m.pods).map(([k, p]) => [k, p.conns])), { 'gateway-1': 80, 'gateway-2': 50, 'gateway-3': 70 })
  assert.equal(m.totals.quotes, 20000)
  assert.deepEqual(m.errors, { RATE_LIMITED: 4 })
  // half the quotes at 10 ms, half at 100 ms
  assert.ok(/** @type {number} */ (m.trends.lat.med) >= 10 && /** @type {number} */ (m.trends.lat.med) < 11.3)
  assert.ok(/** @type {number} */ (m.trends.lat.p99) >= 100 && /** @type {number} */ (m.trends.lat.p99) < 113)
  assert.equal(m.trends.lat.max, 100)
  assert.equal(m.trends.lat.avg, 55)
  assert.equal(m.thresholds.filter((t) => t.shard === 1).length, 4)
  assert.match(renderText(m), /2 k6 processes merged/)
  assert.equal(mergeSummaries([a]), a)
})

test('balance and fmt', () => {
  assert.deepEqual(balance({}), { max: 0, min: 0, ratio: null, spread: null, pods: 0 })
  const b = balance({ a: { conns: 30 }, b: { conns: 10 }, c: { conns: 0 } })
  assert.equal(b.pods, 2)
  assert.equal(b.ratio, 3)
  assert.equal(b.spread, 1)
  assert.equal(fmt(1234567), '1,234,567')
  assert.equal(fmt(1234.5678, 2), '1,234.57')
  assert.equal(fmt(null), '-')
  assert.equal(fmt(NaN), '-')
})
