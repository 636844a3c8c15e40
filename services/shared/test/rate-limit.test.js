import assert from 'node:assert/strict'
import { test } from 'node:test'
import { RateLimit } from '../src/rate-limit.js'

/**
 * @param {RateLimit} limit
 * @param {number} tat
 * @param {number} now
 * @param {number} n
 */
function takeMany (limit, tat, now, n) {
  let admitted = 0
  for (let i = 0; i < n; i++) {
    const next = limit.take(tat, now)
    if (next < 0) continue
    tat = next
    admitted++
  }
  return { admitted, tat }
}

test('a new connection gets exactly the burst at once', () => {
  for (const [rate, burst] of [[100, 100], [3, 7], [1, 20], [1000, 1], [7, 3]]) {
    const limit = new RateLimit(rate, burst)
    assert.equal(takeMany(limit, 0, 1_700_000_000_000, burst * 3).admitted, burst, `rate ${rate} burst ${burst}`)
  }
})

test('after the burst, requests are admitted at the sustained rate', () => {
  const limit = new RateLimit(10, 5)
  const t0 = 1_700_000_000_000
  let { tat } = takeMany(limit, 0, t0, 5)
  assert.equal(limit.take(tat, t0), -1)
  // 1 s later: 10 more (the rate), not 10 + the burst.
  let admitted = 0
  for (let ms = 1; ms <= 1000; ms++) {
    const next = limit.take(tat, t0 + ms)
    if (next >= 0) { tat = next; admitted++ }
  }
  assert.equal(admitted, 10)
})

test('a quiet period refills the bucket but never beyond the burst', () => {
  const limit = new RateLimit(10, 5)
  const t0 = 1_700_000_000_000
  const { tat } = takeMany(limit, 0, t0, 5)
  assert.equal(takeMany(limit, tat, t0 + 60_000, 50).admitted, 5)
})

test('a refused request leaves the state unchanged', () => {
  const limit = new RateLimit(1, 1)
  const tat = limit.take(0, 1000)
  assert.equal(tat, 2000)
  assert.equal(limit.take(tat, 1400), -1)
  assert.equal(limit.take(tat, 1400), -1)
  assert.equal(limit.take(tat, 2000), 3000)
})

test('a request costing many units is admitted within the burst, then the client owes them', () => {
  const limit = new RateLimit(100, 100) // 100 units/s, 10 ms each
  const now = 1_000_000
  const tat = limit.take(0, now, 500)
  assert.equal(tat, now + 5000, 'a batch of 500 is admitted whole and owed')
  assert.equal(limit.take(tat, now + 1000, 1), -1, 'nothing more until the debt is nearly paid')
  assert.ok(limit.take(tat, now + 4100, 1) > 0, 'within one burst of the TAT again: admitted')
})
