import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Tally, allChecks, bucketBounds, bucketOf, decodeTallies, encodeTally, histPercentile } from './tally.js'

/** What k6 would hand handleSummary after these check names were emitted. */
function asChecks (/** @type {string[]} */ names) {
  /** @type {Map<string, number>} */
  const passes = new Map()
  for (const n of names) passes.set(n, (passes.get(n) ?? 0) + 1)
  return [...passes].map(([name, p]) => ({ name, passes: p, fails: 0 }))
}

test('encodeTally: one name per set bit; decodeTallies sums them back', () => {
  assert.deepEqual(encodeTally('q', 'gateway-1', 13), ['wsps|q|gateway-1|0', 'wsps|q|gateway-1|2', 'wsps|q|gateway-1|3'])
  assert.deepEqual(encodeTally('q', 'x', 0), [])
  const big = 2 ** 40 + 12345
  const names = [...encodeTally('q', 'a', big), ...encodeTally('q', 'b', 7), ...encodeTally('err', 'RATE_LIMITED', 2)]
  assert.deepEqual(decodeTallies(asChecks(names)), { q: { a: big, b: 7 }, err: { RATE_LIMITED: 2 } })
})

test('tallies emitted in several flushes add up', () => {
  const names = [...encodeTally('conn', 'p1', 5), ...encodeTally('conn', 'p1', 3), ...encodeTally('conn', 'p2', 1)]
  assert.deepEqual(decodeTallies(asChecks(names)), { conn: { p1: 8, p2: 1 } })
})

test('keys cannot break the name format; other checks are ignored', () => {
  const names = encodeTally('q', 'a|b::c', 1)
  assert.deepEqual(names, ['wsps|q|a_b__c|0'])
  assert.deepEqual(decodeTallies([{ name: 'status is 200', passes: 5 }, { name: names[0], passes: 1 }]), { q: { a_b__c: 1 } })
})

test('allChecks walks nested groups', () => {
  const root = { checks: [{ name: 'a', passes: 1 }], groups: [{ checks: [{ name: 'b', passes: 2 }], groups: [] }] }
  assert.deepEqual(allChecks(root).map((c) => c.name), ['a', 'b'])
})

test('Tally.drain gives unique names (one check() call can carry them all)', () => {
  const t = new Tally()
  t.add('q', 'p1', 1000)
  t.add('q', 'p1', 23)
  t.add('q', 'p2', 7)
  t.add('gap', 'p1', 0)
  const buckets = new Array(256).fill(0)
  buckets[bucketOf(12)] = 40
  buckets[bucketOf(250)] = 2
  t.addBuckets('lat', buckets)
  assert.equal(buckets.reduce((a, b) => a + b, 0), 0)
  const names = t.drain()
  assert.equal(new Set(names).size, names.length)
  const back = decodeTallies(asChecks(names))
  assert.deepEqual(back.q, { p1: 1023, p2: 7 })
  assert.equal(back.gap, undefined)
  assert.deepEqual(back['h.lat'], { [bucketOf(12)]: 40, [bucketOf(250)]: 2 })
  assert.deepEqual(t.drain(), [])
})

test('histogram buckets: ~12% wide, every value inside its bucket', () => {
  assert.equal(bucketOf(0), 0)
  assert.equal(bucketOf(0.5), 0)
  assert.equal(bucketOf(-3), 0)
  for (const v of [1, 1.5, 9.99, 10, 42, 999, 1000, 12345.6]) {
    const [lo, hi] = bucketBounds(bucketOf(v))
    assert.ok(v >= lo - 1e-9 && v < hi, `${v} in [${lo}, ${hi})`)
    assert.ok(hi / lo < 1.13)
  }
})

test('histPercentile returns the upper bound of the bucket holding the rank', () => {
  /** @type {Record<string, number>} */
  const h = {}
  for (let v = 1; v <= 100; v++) h[bucketOf(v)] = (h[bucketOf(v)] ?? 0) + 1
  const p50 = /** @type {number} */ (histPercentile(h, 50))
  const p99 = /** @type {number} */ (histPercentile(h, 99))
  assert.ok(p50 >= 50 && p50 <= 50 * 1.13, String(p50))
  assert.ok(p99 >= 99 && p99 <= 99 * 1.13, String(p99))
  assert.equal(histPercentile({}, 50), null)
})
