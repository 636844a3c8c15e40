// watchPrimary: a reconnect that lands on another address is a failover
// seen; the time from losing the connection to ready again is an outage.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { watchPrimary } from '@wsps/shared/redis'

/** A stand-in for an ioredis client: events and the socket it is on. */
function fakeClient () {
  const c = Object.assign(new EventEmitter(), {
    stream: { remoteAddress: '', remotePort: 6379 },
    /** @param {string} address ready on this primary */
    readyOn (address) {
      c.stream = { remoteAddress: address, remotePort: 6379 }
      c.emit('ready')
    }
  })
  return c
}

test('watchPrimary: the first connect is neither a failover nor an outage; a reconnect to the same primary is an outage only', () => {
  const c = fakeClient()
  let failovers = 0
  /** @type {number[]} */
  const outages = []
  watchPrimary(/** @type {any} */ (c), { onFailover: () => failovers++, onOutage: (s) => outages.push(s) })
  c.readyOn('10.0.0.1')
  assert.equal(failovers, 0)
  assert.deepEqual(outages, [])
  c.emit('close')
  c.emit('close') // each failed attempt closes again: the outage starts at the first
  c.readyOn('10.0.0.1')
  assert.equal(failovers, 0)
  assert.equal(outages.length, 1)
  assert.ok(outages[0] >= 0 && outages[0] < 1)
})

test('watchPrimary: ready on another address after a loss counts one failover and one outage', async () => {
  const c = fakeClient()
  let failovers = 0
  /** @type {number[]} */
  const outages = []
  watchPrimary(/** @type {any} */ (c), { onFailover: () => failovers++, onOutage: (s) => outages.push(s) })
  c.readyOn('10.0.0.1')
  c.emit('close')
  await new Promise((resolve) => setTimeout(resolve, 30))
  c.readyOn('10.0.0.2')
  assert.equal(failovers, 1)
  assert.equal(outages.length, 1)
  assert.ok(outages[0] >= 0.02, `outage ${outages[0]} s`)
  c.emit('close')
  c.readyOn('10.0.0.1')
  assert.equal(failovers, 2)
})
