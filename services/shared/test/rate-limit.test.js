import assert from 'node:assert/strict'
import { test } from 'node:test'
import { RateLimit } from '../src/rate-limit.js'

test('a request costing many units is admitted within the burst, then the client owes them', () => {
  const limit = new RateLimit(100, 100) // 100 units/s, 10 ms each
  const now = 1_000_000
  const tat = limit.take(0, now, 500)
  assert.equal(tat, now + 5000, 'a batch of 500 is admitted whole and owed')
  assert.equal(limit.take(tat, now + 1000, 1), -1, 'nothing more until the debt is nearly paid')
  assert.ok(limit.take(tat, now + 4100, 1) > 0, 'within one burst of the TAT again: admitted')
})
