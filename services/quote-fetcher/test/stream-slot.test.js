// Upstream connection slots (WSPS_STREAM_MAX_CONNECTIONS) on a real
// redis-server: at most N holders, renewal keeps a slot, a dead holder's slot
// is free after the lease, release frees it at once.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { redisKeys } from '@wsps/shared/keys'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { ConnectionSlot } from '../src/providers/stream-slot.js'

const db = useScriptedRedis()

test('the slot script: at most max holders; renewal keeps a slot; an unrenewed slot is free after the lease', async () => {
  const k = redisKeys('slots')
  const now = Date.now()
  const slot = (/** @type {string} */ me, /** @type {number} */ at, max = 1) => db.r.wspsSlot(k.streamConnections, me, at, 3000, max)
  assert.equal(await slot('a', now), 1)
  assert.equal(await slot('b', now), 0, 'one slot, held')
  assert.equal(await slot('a', now + 2000), 1, 'renewed')
  assert.equal(await slot('b', now + 4000), 0, 'renewed at +2 s: still held at +4 s')
  assert.equal(await slot('b', now + 5001), 1, 'a stopped renewing: free after its lease')
  assert.equal(await slot('a', now + 5002), 0)
  assert.equal(await slot('c', now + 5003, 2), 1, 'two slots: a second holder')
  assert.ok(await db.r.pttl(k.streamConnections) > 0, 'the key expires when nobody renews')
})

test('ConnectionSlot: held while it surely lasts; release frees the slot at once', async () => {
  const keys = redisKeys('slot-class')
  const one = new ConnectionSlot({ redis: db.r, keys, node: 'one', leaseMs: 3000, max: 1 })
  const two = new ConnectionSlot({ redis: db.r, keys, node: 'two', leaseMs: 3000, max: 1 })
  assert.equal(await one.acquire(), true)
  assert.equal(await two.acquire(), false)
  const now = Date.now()
  assert.equal(one.held(now, 1000), true)
  assert.equal(one.held(now + 2500, 1000), false, 'a slot about to lapse is not counted on')
  assert.equal(two.held(now, 0), false)
  await one.release()
  assert.equal(one.held(now, 0), false)
  assert.equal(await two.acquire(), true, 'taken over at once')
})

test('ConnectionSlot: leases on the clock it is given (Redis\'), so a replica whose host clock is ahead does not keep a dead slot', async () => {
  const keys = redisKeys('slot-clock')
  // One replica's clock 60 s ahead of the other's: on host clocks its slot
  // would outlive its lease by a minute at the other.
  const ahead = new ConnectionSlot({ redis: db.r, keys, node: 'ahead', leaseMs: 3000, max: 1, now: () => Date.now() + 60_000 })
  assert.equal(await ahead.acquire(), true)
  const [, until] = await db.r.zrange(keys.streamConnections, 0, -1, 'WITHSCORES')
  assert.ok(Number(until) > Date.now() + 60_000, 'the lease is on the clock the slot was given')
  const fair = new ConnectionSlot({ redis: db.r, keys, node: 'fair', leaseMs: 3000, max: 1, now: () => Date.now() + 60_000 + 3001 })
  assert.equal(await fair.acquire(), true, 'on one clock, a slot not renewed is free after its lease')
})
