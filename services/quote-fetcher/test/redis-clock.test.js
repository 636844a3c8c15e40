// RedisClock: the fetcher's one clock is Redis', so a host clock that is off
// skews neither quotes' ts nor the times it shares through Redis.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { RedisClock } from '../src/redis-clock.js'

/** A stand-in for TIME on a server whose clock runs `aheadMs` ahead of this host's. @param {number} aheadMs */
const server = (aheadMs, { fail = 0 } = {}) => {
  let calls = 0
  return {
    calls: () => calls,
    async time () {
      if (calls++ < fail) throw new Error('Connection is closed.')
      const t = Date.now() + aheadMs
      return [String(Math.floor(t / 1000)), String((t % 1000) * 1000)]
    }
  }
}

test('now() follows Redis\' clock once measured: 8 s ahead there, 8 s ahead here', async () => {
  const clock = new RedisClock(server(8000))
  assert.equal(clock.measured, false)
  assert.ok(Math.abs(clock.now() - Date.now()) < 50, 'before the first measurement: this host\'s clock')
  assert.equal(await clock.start(), true)
  assert.ok(clock.measured)
  assert.ok(Math.abs(clock.now() - (Date.now() + 8000)) < 50, `offset ${clock.now() - Date.now()} ms`)
  clock.stop()
})

test('a measurement uses its sample with the shortest round trip: a first TIME that waited for the connection does not put the clock ahead', async () => {
  let calls = 0
  const clock = new RedisClock({
    async time () {
      // The first call is sent 30 ms late (the connection becoming ready):
      // Redis reads its clock at the end of the round trip, not the middle.
      if (calls++ === 0) await new Promise((resolve) => setTimeout(resolve, 30))
      const t = Date.now()
      return [String(Math.floor(t / 1000)), String((t % 1000) * 1000)]
    }
  })
  assert.equal(await clock.start(), true)
  assert.ok(calls >= 3, `${calls} samples`)
  const ahead = clock.now() - Date.now()
  assert.ok(ahead >= -2 && ahead <= 2, `offset ${ahead} ms (the late sample alone: about +15 ms)`)
  clock.stop()
})

test('start() waits for the first answer, retrying while Redis refuses, and gives up after its wait', async () => {
  const flaky = server(-3000, { fail: 2 })
  const clock = new RedisClock(flaky)
  assert.equal(await clock.start(2000), true)
  assert.ok(flaky.calls() >= 3)
  assert.ok(Math.abs(clock.now() - (Date.now() - 3000)) < 50)
  clock.stop()
  const dead = new RedisClock(server(0, { fail: Infinity }))
  const t0 = Date.now()
  assert.equal(await dead.start(300), false)
  assert.ok(Date.now() - t0 >= 290)
  dead.stop()
})

test('now() never goes back, not even when a new measurement is lower', async () => {
  let ahead = 5000
  const clock = new RedisClock({ async time () { const t = Date.now() + ahead; return [String(Math.floor(t / 1000)), String((t % 1000) * 1000)] } })
  assert.equal(await clock.start(), true)
  const before = clock.now()
  clock.stop()
  // Measured again 5 s lower (a failover to a server whose clock is behind).
  ahead = 0
  assert.equal(await clock.start(), true)
  assert.ok(clock.now() >= before, `now() went back by ${before - clock.now()} ms`)
  clock.stop()
})
