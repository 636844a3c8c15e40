import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BreakerOpenError } from '../src/errors.js'
import { BreakerState, CircuitBreaker } from '../src/providers/breaker.js'

test('opens after threshold failures, rejects during cooldown, closes after a good trial', async () => {
  let now = 0
  const states = []
  const b = new CircuitBreaker({ threshold: 3, cooldownMs: 1000, now: () => now, onState: (s) => states.push(s) })
  const fail = () => Promise.reject(new Error('down'))
  for (let i = 0; i < 3; i++) await assert.rejects(b.run(fail), /down/)
  assert.equal(b.state, BreakerState.OPEN)
  let called = false
  await assert.rejects(b.run(async () => { called = true }), BreakerOpenError)
  assert.equal(called, false, 'no request while open')
  now = 1001
  assert.equal(await b.run(async () => 'ok'), 'ok')
  assert.equal(b.state, BreakerState.CLOSED)
  assert.deepEqual(states, [BreakerState.OPEN, BreakerState.HALF_OPEN, BreakerState.CLOSED])
})

test('a failed trial reopens at once; only one trial runs at a time', async () => {
  let now = 0
  const b = new CircuitBreaker({ threshold: 1, cooldownMs: 100, now: () => now })
  await assert.rejects(b.run(() => Promise.reject(new Error('x'))))
  now = 200
  /** @type {(v?: unknown) => void} */
  let release = () => {}
  const trial = b.run(() => new Promise((resolve, reject) => { release = () => reject(new Error('still down')) }))
  await assert.rejects(b.run(async () => 'second'), BreakerOpenError)
  release()
  await assert.rejects(trial, /still down/)
  assert.equal(b.state, BreakerState.OPEN)
})
