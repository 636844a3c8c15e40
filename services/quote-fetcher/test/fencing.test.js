// Fencing (issue 46, "No old quote is ever news") on a real redis-server:
// the fencing tokens the claim and schedule scripts draw, and the publish
// script refusing a quote whose claim was superseded or whose ts is older
// than its symbol's newest, with nothing of it written.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { latestQuotes } from '@wsps/shared/latest'
import { FENCE_FUTURE_MS, publishArgs } from '@wsps/shared/scripts'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { Publisher } from '../src/publisher.js'

const db = useScriptedRedis()

let n = 0
const freshKeys = () => redisKeys(`f${n++}`)

/**
 * Quotes of one call through the publish script, as the fetcher sends them.
 * @param {import('@wsps/shared/keys').RedisKeys} k
 * @param {{symbol?: string, ts: number, token?: number, bid?: number}[]} quotes
 * @param {{pushLeaseMs?: number, historySize?: number, defer?: boolean, notAfterMs?: number}} [o]
 */
function publish (k, quotes, { pushLeaseMs = 0, historySize = 100, defer = false, notAfterMs = 0 } = {}) {
  const entries = quotes.map(({ symbol = 'S', ts, token = 0, bid = 1 }) => ({ symbol, ts, token, floor: 0, body: JSON.stringify({ symbol, ts, bid }) }))
  return db.r.wspsPublish(...publishArgs(k, entries, { ttlMs: 60_000, sharded: false, pushLeaseMs, historySize, defer, notAfterMs }))
}

/**
 * Everything a refused quote must leave as it was.
 * @param {import('@wsps/shared/keys').RedisKeys} k
 * @param {string} symbol
 */
async function state (k, symbol) {
  const [latest] = await latestQuotes(db.r, k, [symbol])
  return { seq: await db.r.get(k.seq(symbol)), history: await db.r.xrange(k.history(symbol), '-', '+'), latest, fence: await db.r.get(k.fence(symbol)) }
}

/**
 * Every message published on the symbol's channel.
 * @param {import('@wsps/shared/keys').RedisKeys} k
 * @param {string} symbol
 */
async function listen (k, symbol) {
  const sub = new Redis(db.redis.url)
  /** @type {any[]} */
  const got = []
  sub.on('message', (_ch, msg) => got.push(JSON.parse(msg)))
  await sub.subscribe(k.channel(symbol))
  return { got, close: () => sub.disconnect() }
}

test('a quote with a lower token than one published before is refused (fenced): no seq, history, latest quote, fence change or message', async () => {
  const k = freshKeys()
  const l = await listen(k, 'S')
  assert.deepEqual(await publish(k, [{ ts: 10, token: 200, bid: 1 }]), [1])
  const before = await state(k, 'S')
  assert.equal(before.fence, '200 10', 'the fence: the highest token and the newest ts')
  // The held-up fetcher's quotes: newer by ts, but of the claim before.
  assert.deepEqual(await publish(k, [{ ts: 20, token: 100, bid: 2 }, { ts: 21, token: 199, bid: 3 }]), [-1, -1])
  assert.deepEqual(await state(k, 'S'), before)
  assert.deepEqual(await publish(k, [{ ts: 22, token: 200, bid: 4 }]), [2], 'the claim that holds it publishes on')
  await new Promise((resolve) => setTimeout(resolve, 50))
  assert.deepEqual(l.got.map((m) => [m.seq, m.bid]), [[1, 1], [2, 4]], 'subscribers never saw a refused quote')
  l.close()
})

test('a call that reaches Redis after its notAfterMs (Redis\' clock) is refused as late, all of it, with nothing written; before it, published', async () => {
  const k = freshKeys()
  const [s, us] = await db.r.time()
  const redisNow = Number(s) * 1000 + Math.floor(Number(us) / 1000)
  const before = await state(k, 'S')
  assert.deepEqual(await publish(k, [{ ts: 10, token: 5 }, { symbol: 'T', ts: 10, token: 5 }], { notAfterMs: redisNow - 1 }), [-3, -3])
  assert.deepEqual(await state(k, 'S'), before)
  assert.equal(await db.r.get(k.seq('T')), null)
  assert.deepEqual(await publish(k, [{ ts: 10, token: 5 }], { notAfterMs: redisNow + 60_000 }), [1])
  assert.deepEqual(await publish(k, [{ ts: 11, token: 5 }], { notAfterMs: 0 }), [2], '0: no deadline')
})

test('a quote older by ts than the symbol\'s newest is refused (old), whatever its token; an equal ts passes', async () => {
  const k = freshKeys()
  assert.deepEqual(await publish(k, [{ ts: 10, token: 5 }]), [1])
  const before = await state(k, 'S')
  assert.deepEqual(await publish(k, [{ ts: 9, token: 5 }, { ts: 9, token: 6 }]), [-2, -2])
  assert.deepEqual(await state(k, 'S'), before)
  assert.deepEqual(await publish(k, [{ ts: 10, token: 5 }, { ts: 10, token: 6 }]), [2, 3], 'equal ts: published (quotes of one ms)')
  assert.equal(await db.r.get(k.fence('S')), '6 10')
  // History off: the same rules, the `last` key untouched.
  const off = freshKeys()
  assert.deepEqual(await publish(off, [{ ts: 10, token: 5 }, { ts: 9, token: 5 }, { ts: 11, token: 4 }], { historySize: 0 }), [1, -2, -1])
  assert.equal(JSON.parse(/** @type {string} */ (await db.r.get(off.latest('S')))).ts, 10)
})

test('in one call each quote meets the fence the quotes before it left; other symbols are not held back', async () => {
  const k = freshKeys()
  const reply = await publish(k, [
    { symbol: 'A', ts: 1, token: 5 },
    { symbol: 'A', ts: 2, token: 4 },
    { symbol: 'B', ts: 1, token: 1 },
    { symbol: 'A', ts: 0, token: 5 },
    { symbol: 'A', ts: 3, token: 6 }
  ])
  assert.deepEqual(reply, [1, -1, 1, -2, 2])
  assert.equal(await db.r.get(k.fence('A')), '6 3')
  assert.equal(await db.r.get(k.fence('B')), '1 1')
})

test('publish API quotes hold no claim: not checked by token, and they leave the fence\'s token as it was; by ts they are', async () => {
  const k = freshKeys()
  assert.deepEqual(await publish(k, [{ ts: 10, token: 500 }]), [1])
  assert.deepEqual(await publish(k, [{ ts: 30 }], { pushLeaseMs: 5000 }), [2])
  assert.match(String(await db.r.get(k.fence('S'))), /^500 30 [0-9a-f]{16}$/, 'the token kept; the push\'s ts and digest')
  // Two fetchers took pushes of the symbol; the one held up writes last.
  assert.deepEqual(await publish(k, [{ ts: 25 }], { pushLeaseMs: 5000 }), [-2])
  // A provider quote now: pushed first, whatever its token and ts.
  assert.deepEqual(await publish(k, [{ ts: 40, token: 600 }]), [0])
})

test('a pushed quote that is the very quote published last (a retried request) is refused as old; an equal ts with other fields passes', async () => {
  const k = freshKeys()
  const push = (/** @type {{symbol?: string, ts: number, bid?: number}[]} */ quotes) => publish(k, quotes, { pushLeaseMs: 5000 })
  // A request of three quotes; Redis failed after the first two were published.
  assert.deepEqual(await push([{ symbol: 'A', ts: 10 }, { symbol: 'A', ts: 20 }]), [1, 2])
  const { got, close } = await listen(k, 'A')
  // The whole request again: only what had not gone out is published.
  assert.deepEqual(await push([{ symbol: 'A', ts: 10 }, { symbol: 'A', ts: 20 }, { symbol: 'B', ts: 20 }]), [-2, -2, 1])
  assert.equal(await db.r.get(k.seq('A')), '2', 'no seq drawn for the repeats')
  assert.deepEqual(await push([{ symbol: 'A', ts: 20, bid: 2 }]), [3], 'same ts, another quote: news')
  assert.deepEqual(await push([{ symbol: 'A', ts: 20, bid: 2 }]), [-2])
  // Provider quotes are not compared by content (a poll may well see an unchanged quote).
  assert.deepEqual(await publish(k, [{ symbol: 'C', ts: 5, token: 1 }]), [1])
  assert.deepEqual(await publish(k, [{ symbol: 'C', ts: 5, token: 1 }]), [2])
  await new Promise((resolve) => setTimeout(resolve, 50))
  close()
  assert.deepEqual(got.map((q) => [q.seq, q.bid]), [[3, 2]])
})

test('deferred (waiting for replicas): a refused quote gets its reason and no message to publish', async () => {
  const k = freshKeys()
  const l = await listen(k, 'S')
  const reply = await publish(k, [{ ts: 5, token: 9 }, { ts: 6, token: 8 }, { ts: 4, token: 9 }], { defer: true })
  assert.deepEqual(reply.slice(0, 3), [1, -1, -2])
  assert.equal(JSON.parse(String(reply[3])).seq, 1)
  assert.deepEqual(reply.slice(4), ['', ''])
  await new Promise((resolve) => setTimeout(resolve, 50))
  assert.deepEqual(l.got, [], 'deferred: the script published nothing itself')
  l.close()
})

test('a quote stamped in the future is published, but the fence remembers at most FENCE_FUTURE_MS ahead of Redis\' clock', async () => {
  const k = freshKeys()
  const now = Date.now()
  assert.deepEqual(await publish(k, [{ ts: now + 3_600_000, token: 1 }]), [1])
  const [, ts] = String(await db.r.get(k.fence('S'))).split(' ').map(Number)
  assert.ok(ts <= Date.now() + FENCE_FUTURE_MS && ts >= now, `the fence's ts is Redis' clock plus at most ${FENCE_FUTURE_MS} ms (${ts - now})`)
  assert.deepEqual(await publish(k, [{ ts: now + 2 * FENCE_FUTURE_MS, token: 1 }]), [2], 'so the next true quote is not held back for an hour')
  assert.deepEqual(await publish(k, [{ ts: now, token: 1 }]), [-2], 'and one older than that still is')
  assert.ok(await db.r.pttl(k.fence('S')) > 55_000, 'the fence lives as long as the latest quote')
})

test('claim tokens: one per symbol granted anew, above every earlier one; kept while held; a lapsed or forgotten claim gets a new one', async () => {
  const k = freshKeys()
  const now = Date.now()
  await db.r.wspsDemand(k.demand, k.due, now + 60_000, now, 'A', 'B')
  const claim = async (/** @type {string} */ me, /** @type {number} */ at, /** @type {string[]} */ held = []) => {
    const reply = await db.r.wspsClaim(k.demand, k.streamOwner, k.streamLease, k.streamToken, k.fenceToken, me, at, 3000, 10, ...held)
    /** @type {Map<string, number>} */
    const out = new Map()
    for (let i = 0; i < reply.length; i += 2) out.set(reply[i], Number(reply[i + 1]))
    return out
  }
  const first = await claim('one', now)
  assert.deepEqual([...first.keys()].sort(), ['A', 'B'])
  const t1 = /** @type {number} */ (first.get('A'))
  assert.ok(Number.isSafeInteger(t1) && t1 >= now * 1000, `a token from Redis' clock in µs (${t1})`)
  assert.equal(await db.r.hget(k.streamToken, 'A'), String(t1))
  const renewed = await claim('one', now + 1000, ['A', 'B'])
  assert.deepEqual(renewed, first, 'renewed: the same tokens')
  // "one" is held up past its lease; "two" takes the symbols over.
  const two = await claim('two', now + 5000)
  assert.ok(/** @type {number} */ (two.get('A')) > t1, 'the new owner\'s token is above the old one\'s')
  assert.deepEqual(await claim('one', now + 5100, ['A', 'B']), new Map(), 'the old owner holds nothing any more')
  // "two" restarts under the same name: it holds them in Redis but does
  // not know it; a new token, since its earlier self may still have writes on the way.
  const restarted = await claim('two', now + 5200)
  assert.ok(/** @type {number} */ (restarted.get('A')) > /** @type {number} */ (two.get('A')))
  assert.deepEqual(await claim('two', now + 5300, ['A', 'B']), restarted)
})

test('job tokens: each schedule call that pushes jobs draws one, above the last; the counter lost (deleted) or behind the clock: still above', async () => {
  const k = freshKeys()
  const now = Date.now()
  await db.r.wspsDemand(k.demand, k.due, now + 60_000, now, 'A', 'B', 'C')
  const jobs = async (/** @type {number} */ at) => {
    await db.r.wspsSchedule(k.demand, k.due, k.jobs, k.push, k.fenceToken, at, 1000, 2, 100)
    const out = (await db.r.lrange(k.jobs, 0, -1)).map((j) => JSON.parse(j))
    await db.r.del(k.jobs)
    return out
  }
  const a = await jobs(now)
  assert.equal(a.length, 2)
  assert.equal(typeof a[0].f, 'string', 'the token as a decimal string (exact, unlike a JSON number from cjson)')
  assert.equal(a[0].f, a[1].f, 'one token per call')
  const b = await jobs(now + 1000)
  assert.ok(Number(b[0].f) > Number(a[0].f))
  // Redis lost the counter: TIME keeps the next token above.
  await db.r.del(k.fenceToken)
  const c = await jobs(now + 2000)
  assert.ok(Number(c[0].f) > Number(b[0].f), 'above the last token without the counter')
  // A counter ahead of the clock (tokens drawn faster than one per µs, or a
  // clock set back): counter + 1.
  const ahead = Number(c[0].f) + 10_000_000_000
  await db.r.set(k.fenceToken, String(ahead))
  const d = await jobs(now + 3000)
  assert.equal(Number(d[0].f), ahead + 1)
  assert.deepEqual(await jobs(now + 3100), [], 'nothing due')
  assert.equal(await db.r.get(k.fenceToken), String(ahead + 1), 'and then no token drawn')
})

test('FENCE raises a symbol\'s fence to a new owner\'s token before it published: the old owner\'s quotes are refused at once; never lowered', async () => {
  const k = freshKeys()
  assert.deepEqual(await publish(k, [{ ts: 50, token: 100 }]), [1])
  assert.equal(await db.r.wspsFence(k.fence('S'), 200, 60_000), 1)
  assert.equal(await db.r.get(k.fence('S')), '200 50', 'the ts kept')
  assert.equal(await db.r.wspsFence(k.fence('S'), 150, 60_000), 0)
  assert.equal(await db.r.get(k.fence('S')), '200 50')
  assert.deepEqual(await publish(k, [{ ts: 60, token: 100 }]), [-1], 'the old owner, though no newer quote was published')
  assert.deepEqual(await publish(k, [{ ts: 60, token: 200 }]), [2])
  assert.equal(await db.r.wspsFence(k.fence('NEW'), 7, 60_000), 1)
  assert.equal(await db.r.get(k.fence('NEW')), '7 0', 'no fence yet: one with the token and no ts')
  assert.ok(await db.r.pttl(k.fence('NEW')) > 55_000)
})

for (const sharded of [false, true]) {
  test(`the Publisher${sharded ? ' on the Cluster path (one quote per call, wspsPublishOne)' : ''}: refused quotes by reason, told once per call with their symbols; the seq floor only from what it published`, async () => {
    const k = freshKeys()
    /** @type {[import('../src/publisher.js').Refused, string[]][]} */
    const told = []
    const options = { redis: db.r, keys: k, ttlMs: 60_000, sharded, historySize: 100, historyTtlMs: 60_000 }
    const held = new Publisher({ ...options, onRefused: (refused, symbols) => told.push([{ ...refused }, symbols]) })
    const owner = new Publisher(options)
    const now = Date.now()
    assert.equal((await held.publish([{ symbol: 'A', ts: now }, { symbol: 'B', ts: now }], { tokens: 10 })).published, 2)
    // The claims passed to another fetcher, which published newer quotes.
    assert.equal((await owner.publish([{ symbol: 'A', ts: now + 5 }, { symbol: 'B', ts: now + 5 }], { tokens: [20, 20] })).published, 2)
    const res = await held.publish([{ symbol: 'A', ts: now + 1 }, { symbol: 'B', ts: now + 9 }, { symbol: 'C', ts: now + 1 }, { symbol: 'B', ts: now + 1 }], { tokens: [10, 10, 10, 20] })
    assert.deepEqual(res, { published: 1, refused: { pushed: 0, fenced: 2, old: 1, late: 0 }, seqs: [0, 0, 1, 0] }, 'the seq of the one published')
    assert.deepEqual(told, [[{ pushed: 0, fenced: 2, old: 1, late: 0 }, ['A', 'B']]])
    assert.equal(held.lastSeq.get('A'), 1, 'a refused quote raises no floor')
    assert.deepEqual((await latestQuotes(db.r, k, ['A', 'B'])).map((q) => JSON.parse(String(q)).ts), [now + 5, now + 5])
  })
}
