// A user's sessions over the fleet on a real redis-server: at most `max`
// places, taken atomically (racing takes never exceed it), the oldest
// marked evicted under close-oldest and told at its next renewal, leases
// that free the places of a gateway that stopped renewing, a renewal that
// takes back a lapsed place only where there is room.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Redis } from 'ioredis'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { registerScripts } from '../src/scripts.js'
import { redisKeys } from '../src/keys.js'
import { sessionName, sessionOf, sessionSlots } from '../src/session-slots.js'

const db = useScriptedRedis()

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

test('a session name is its node and connection, whatever the node name holds', () => {
  assert.deepEqual(sessionOf(sessionName('gw-1/2', 17)), { node: 'gw-1/2', connection: 17 })
  assert.deepEqual(sessionOf(sessionName('a#b', 3)), { node: 'a#b', connection: 3 })
})

test('refuse: the cap holds; a released place is free again; the key is tagged by its user', async () => {
  const keys = redisKeys('cap-a')
  assert.equal(keys.userSessions('ann'), 'cap-a:{u:ann}:sessions')
  const slots = sessionSlots(db.r, keys, { leaseMs: 10_000, max: 2, policy: 'refuse' })
  assert.equal((await slots.take('ann', 'gw-1#1')).taken, true)
  assert.equal((await slots.take('ann', 'gw-2#1')).taken, true)
  assert.deepEqual(await slots.take('ann', 'gw-1#2'), { taken: false })
  assert.equal((await slots.take('bob', 'gw-1#3')).taken, true, 'another user counts apart')
  await slots.release('ann', 'gw-1#1')
  const again = await slots.take('ann', 'gw-1#4')
  assert.ok(again.taken && again.evicted.length === 0)
  assert.deepEqual((await db.r.hkeys(keys.userSessions('ann'))).sort(), ['gw-1#4', 'gw-2#1'])
  assert.ok(await db.r.pttl(keys.userSessions('ann')) > 10_000, 'the key outlives the leases')
})

test('racing takes on many connections never exceed the cap', async () => {
  const keys = redisKeys('cap-b')
  const conns = Array.from({ length: 8 }, () => registerScripts(new Redis(db.redis.url)))
  try {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      sessionSlots(conns[i % conns.length], keys, { leaseMs: 10_000, max: 3, policy: 'refuse' }).take('cy', `gw-${i % 2}#${i}`)))
    assert.equal(results.filter((r) => r.taken).length, 3)
    assert.equal(await db.r.hlen(keys.userSessions('cy')), 3)
  } finally {
    for (const c of conns) c.disconnect()
  }
})

test('close-oldest: the oldest makes room and is named; its renewal finds it lost; the others renew', async () => {
  const keys = redisKeys('cap-c')
  const slots = sessionSlots(db.r, keys, { leaseMs: 10_000, max: 2, policy: 'close-oldest' })
  const first = await slots.take('di', 'gw-1#1')
  await sleep(5)
  const second = await slots.take('di', 'gw-2#1')
  await sleep(5)
  const third = await slots.take('di', 'gw-2#2')
  assert.ok(first.taken && second.taken && third.taken)
  assert.deepEqual(third.evicted, ['gw-1#1'])
  assert.deepEqual(await slots.renew('di', [['gw-1#1', first.start]]), ['gw-1#1'], 'the evicted one is told')
  assert.deepEqual(await slots.renew('di', [['gw-2#1', second.start], ['gw-2#2', third.start]]), [])
  assert.equal(await db.r.hlen(keys.userSessions('di')), 2, 'the eviction mark is gone once told')
})

test('a lease nobody renews frees its place; a lapsed session takes it back only where there is room', async () => {
  const keys = redisKeys('cap-d')
  const slots = sessionSlots(db.r, keys, { leaseMs: 1000, max: 1, policy: 'refuse' })
  const dead = await slots.take('ed', 'gw-dead#1')
  assert.ok(dead.taken)
  assert.deepEqual(await slots.take('ed', 'gw-1#1'), { taken: false })
  await sleep(1100)
  const late = await slots.take('ed', 'gw-1#1')
  assert.ok(late.taken, 'the dead gateway\'s place is free after the lease')
  assert.deepEqual(await slots.renew('ed', [['gw-dead#1', dead.start]]), ['gw-dead#1'], 'come back: its place is taken')
  await slots.release('ed', 'gw-1#1')
  await sleep(1100)
  assert.deepEqual(await slots.renew('ed', [['gw-dead#1', dead.start]]), [], 'room again: taken back')
  assert.equal(await db.r.hget(keys.userSessions('ed'), 'gw-dead#1').then((v) => v?.split(':')[0]), String(dead.start), 'with its start')
})
