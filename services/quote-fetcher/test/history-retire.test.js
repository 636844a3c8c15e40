// The Publisher's retire pass against a real redis-server: with history on,
// the latest quote lives in the history stream, so a quiet symbol's history
// is cut to that quote instead of expiring with it.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { latestQuotes } from '@wsps/shared/latest'
import { redisKeys } from '@wsps/shared/keys'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { waitFor } from '@wsps/testkit'
import { Publisher } from '../src/publisher.js'

const db = useScriptedRedis()

test('a symbol quiet for WSPS_HISTORY_TTL_MS keeps only its latest quote, for as long as the latest quote lives; a symbol still published keeps its history', async (t) => {
  const keys = redisKeys('retire')
  const pub = new Publisher({ redis: db.r, keys, ttlMs: 60_000, sharded: false, historySize: 100, historyTtlMs: 1000 })
  t.after(() => pub.stop())
  for (let ts = 1; ts <= 40; ts++) await pub.publish([{ symbol: 'QUIET', ts }, { symbol: 'BUSY', ts }])
  const quietAt = Date.now()
  const [latest] = await latestQuotes(db.r, keys, ['QUIET'])
  assert.equal(await db.r.xlen(keys.history('QUIET')), 40)
  let ts = 40
  const busy = setInterval(() => { pub.publish([{ symbol: 'BUSY', ts: ++ts }]).catch(() => {}) }, 100)
  t.after(() => clearInterval(busy))
  await waitFor(async () => await db.r.xlen(keys.history('QUIET')) === 1, { timeout: 10_000, message: 'the quiet symbol\'s history cut' })
  clearInterval(busy)
  assert.deepEqual(await latestQuotes(db.r, keys, ['QUIET']), [latest], 'its latest quote is still served, as it was')
  assert.equal(JSON.parse(/** @type {string} */ (latest)).seq, 40)
  const ttl = await db.r.pttl(keys.history('QUIET'))
  assert.ok(ttl > 60_000 - (Date.now() - quietAt), `and lives on at least as long as the latest quote would (${ttl} ms left)`)
  assert.ok(await db.r.xlen(keys.history('BUSY')) > 40, 'the busy symbol kept its history')
  assert.ok(await db.r.pttl(keys.history('BUSY')) > 59_000, 'and its stream outlives its latest quote by WSPS_QUOTE_TTL_MS')
  // Published again: the count and the epoch go on.
  await pub.publish([{ symbol: 'QUIET', ts: 41 }])
  const [again] = await latestQuotes(db.r, keys, ['QUIET'])
  assert.deepEqual([JSON.parse(/** @type {string} */ (again)).seq, JSON.parse(/** @type {string} */ (again)).epoch], [41, JSON.parse(/** @type {string} */ (latest)).epoch])
})
