// The usage records on a real redis-server: a record closes once (its
// gateway and a sweeper racing write it once), into every month it
// overlaps; a silent process's open records close at its last sign of life;
// the month's report sums per user, venue and level, clipped to the month.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { redisKeys } from '../src/keys.js'
import { aggregate, monthSpan, monthsOf, usageRecords } from '../src/usage-records.js'

const db = useScriptedRedis()
const NOV = Date.UTC(2026, 10, 10, 12)
const HOUR = 3_600_000

/**
 * @param {Partial<import('../src/usage-records.js').UsageRecord>} r
 * @returns {import('../src/usage-records.js').UsageRecord}
 */
const record = (r) => ({ id: 'i:1:1', user: 'ann', class: 'nonpro', venue: 'XNAS', level: 'realtime', start: NOV, end: null, gateway: 'gw-1', ...r })

test('months: a span by UTC, a record in every month it overlaps', () => {
  assert.deepEqual(monthSpan('2026-12'), [Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1)])
  assert.throws(() => monthSpan('2026-13'), RangeError)
  assert.deepEqual(monthsOf(NOV, NOV + HOUR), ['2026-11'])
  assert.deepEqual(monthsOf(Date.UTC(2026, 9, 31, 23), Date.UTC(2027, 0, 1, 1)), ['2026-10', '2026-11', '2026-12', '2027-01'])
  assert.deepEqual(monthsOf(Date.UTC(2026, 10, 1), Date.UTC(2026, 10, 1)), ['2026-11'], 'a start on the first ms of a month')
})

test('a record closes once, into each month it overlaps; the open ones are read as open', async () => {
  const keys = redisKeys('usage-a')
  const usage = usageRecords(db.r, keys)
  await usage.alive('i', Date.now())
  const across = record({ id: 'i:1:1', start: Date.UTC(2026, 9, 31, 23) })
  await usage.open('i', across)
  await usage.open('i', record({ id: 'i:2:1', user: 'bob' }))
  const closing = { ...across, end: NOV }
  const [first, second] = await Promise.all([usage.close('i', closing), usage.close('i', closing)])
  assert.equal(Number(first) + Number(second), 1, 'closed once by two racing closers')
  assert.equal(await db.r.xlen(keys.usageMonth('2026-10')), 1)
  assert.equal(await db.r.xlen(keys.usageMonth('2026-11')), 1)
  const nov = await usage.read('2026-11')
  assert.deepEqual(nov.map((r) => [r.user, r.end]).sort(), [['ann', NOV], ['bob', null]])
})

test('a process silent past the lease: its open records close at its last sign of life, swept once', async () => {
  const keys = redisKeys('usage-b')
  const usage = usageRecords(db.r, keys)
  const now = Date.now()
  await usage.alive('dead', now - 10_000)
  await usage.alive('live', now)
  await usage.open('dead', record({ id: 'dead:1:1', start: now - 60_000 }))
  await usage.open('live', record({ id: 'live:1:1', start: now - 1000 }))
  const swept = await Promise.all([usage.sweep(now, 5000), usage.sweep(now, 5000)])
  assert.deepEqual(swept.sort(), [0, 1], 'one sweeper closes it')
  const month = new Date(now).toISOString().slice(0, 7)
  const records = await usage.read(month)
  assert.deepEqual(records.map((r) => [r.id, r.end]).sort(), [['dead:1:1', now - 10_000], ['live:1:1', null]])
  assert.deepEqual(await db.r.hkeys(keys.usageAlive), ['live'])
})

test('the report: per user, venue and level, clipped to the month; distinct users per venue, level and class', () => {
  const dec = Date.UTC(2026, 11, 1)
  const report = aggregate('2026-11', [
    record({ id: 'a', end: NOV + HOUR }),
    record({ id: 'a', end: NOV + HOUR }),
    record({ id: 'b', start: NOV + 2 * HOUR, end: NOV + 3 * HOUR, gateway: 'gw-2' }),
    record({ id: 'c', start: dec - HOUR, end: dec + HOUR }),
    record({ id: 'd', user: 'bob', class: 'pro', venue: 'XNYS', level: 'delayed', start: NOV, end: null }),
    record({ id: 'e', user: 'cy', class: 'pro', start: dec + HOUR, end: dec + 2 * HOUR })
  ], NOV + HOUR)
  assert.deepEqual(report.rows.map((r) => [r.user, r.venue, r.level, r.class, r.sessions, r.accessSeconds, r.gateways]), [
    ['ann', 'XNAS', 'realtime', 'nonpro', 3, 3 * 3600, ['gw-1', 'gw-2']],
    ['bob', 'XNYS', 'delayed', 'pro', 1, 3600, ['gw-1']]
  ], 'a duplicate once, a record into December clipped, one of December left out, an open one until now')
  assert.equal(report.rows[0].firstAccess, new Date(NOV).toISOString())
  assert.equal(report.rows[0].lastAccess, new Date(dec).toISOString())
  assert.deepEqual(report.totals, [
    { venue: 'XNAS', level: 'realtime', class: 'nonpro', users: 1 },
    { venue: 'XNYS', level: 'delayed', class: 'pro', users: 1 }
  ])
})
