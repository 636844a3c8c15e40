// The fleet view's records on a real redis-server: stamped and aged by
// Redis's clock (a writer whose host clock is off is neither shown late
// nor hidden when late), late after three intervals, dropped once expired.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { readFleet, removeStatus, writeStatus } from '../src/fleet-status.js'
import { redisKeys } from '../src/keys.js'

const db = useScriptedRedis()

/** @returns {Promise<number>} Redis's clock, ms */
async function redisNow () {
  const [s, us] = await db.r.time()
  return Number(s) * 1000 + Math.floor(Number(us) / 1000)
}

test('a record is stamped by Redis, read with its age by the same clock, and removed by a clean stop', async () => {
  const keys = redisKeys('fleet-a')
  const before = await redisNow()
  await writeStatus(db.r, keys, { role: 'gateway', node: 'gw-1', connections: 3 }, 1000)
  await writeStatus(db.r, keys, { role: 'fetcher', node: 'f-1' }, 1000)
  const [gw, f] = await readFleet(db.r, keys)
  assert.equal(gw.node, 'gw-1', 'gateways first')
  assert.equal(gw.connections, 3)
  assert.ok(gw.at >= before && gw.at <= before + 1000, `stamped by Redis: ${gw.at - before} ms after`)
  assert.equal(gw.intervalMs, 1000)
  assert.equal(gw.expiresAt, gw.at + 15 * 1000)
  assert.equal(gw.late, false)
  assert.equal(f.role, 'fetcher')
  await removeStatus(db.r, keys, { role: 'gateway', node: 'gw-1' })
  assert.deepEqual((await readFleet(db.r, keys)).map((p) => p.node), ['f-1'])
})

test('late after three intervals unwritten, dropped once expired: by the age Redis sees', async () => {
  const keys = redisKeys('fleet-b')
  const now = await redisNow()
  // As a writer that stopped writing left them, whatever its own clock said.
  await db.r.hset(keys.status, 'gateway/old', JSON.stringify({ role: 'gateway', node: 'old', at: now - 4000, intervalMs: 1000, expiresAt: now + 11_000 }))
  await db.r.hset(keys.status, 'gateway/gone', JSON.stringify({ role: 'gateway', node: 'gone', at: now - 16_000, intervalMs: 1000, expiresAt: now - 1000 }))
  await db.r.hset(keys.status, 'gateway/torn', '{"role":')
  const fleet = await readFleet(db.r, keys)
  assert.deepEqual(fleet.map((p) => [p.node, p.late]), [['old', true]])
  assert.ok(fleet[0].ageMs >= 4000 && fleet[0].ageMs < 5000)
  assert.deepEqual(await db.r.hkeys(keys.status), ['gateway/old'], 'the expired and the unreadable are deleted by the reader')
})
