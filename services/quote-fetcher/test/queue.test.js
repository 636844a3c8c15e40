// The Redis scripts behind demand, scheduling and publishing, on a real
// redis-server.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { latestQuotes } from '@wsps/shared/latest'
import { publishArgs } from '@wsps/shared/scripts'

const db = useScriptedRedis()

let n = 0
const freshKeys = () => redisKeys(`t${n++}`)

/**
 * The symbol's latest quote, parsed, as every reader reads it.
 * @param {import('@wsps/shared/keys').RedisKeys} k
 * @param {string} symbol
 */
async function latestOf (k, symbol) {
  const [raw] = await latestQuotes(db.r, k, [symbol])
  if (raw instanceof Error) throw raw
  return raw === null ? null : JSON.parse(raw)
}

/**
 * One quote through the publish script; its seq (0: refused).
 * @param {import('@wsps/shared/keys').RedisKeys} k
 * @param {string} body
 * @param {{ttlMs?: number, floor?: number, pushLeaseMs?: number, historySize?: number}} [o]
 */
async function publishOne (k, body, { ttlMs = 60000, floor = 0, pushLeaseMs = 0, historySize = 0 } = {}) {
  const { symbol, ts } = JSON.parse(body)
  const [seq] = await db.r.wspsPublish(...publishArgs(k, [{ symbol, body, floor, ts }], { ttlMs, sharded: false, pushLeaseMs, historySize }))
  return seq
}

test('a demanded symbol is scheduled exactly once per interval, however many schedulers tick', async () => {
  const k = freshKeys()
  const now = 1_000_000
  await db.r.wspsDemand(k.demand, k.due, now + 60_000, now, 'AAPL', 'MSFT', 'IBM')
  const ticks = []
  // Three replicas tick at the same instant, then again 100 ms later.
  for (const t of [now, now, now, now + 100, now + 100]) ticks.push(await db.r.wspsSchedule(k.demand, k.due, k.jobs, k.push, k.fenceToken, t, 1000, 2, 100))
  assert.deepEqual(ticks.map((x) => x[0]), [3, 0, 0, 0, 0])
  const jobs = (await db.r.lrange(k.jobs, 0, -1)).map((j) => JSON.parse(j))
  assert.deepEqual(jobs.map((j) => j.s.length), [2, 1], 'batched by batch size')
  assert.deepEqual(jobs.flatMap((j) => j.s).sort(), ['AAPL', 'IBM', 'MSFT'])
  // One interval later they are due again, once.
  assert.equal((await db.r.wspsSchedule(k.demand, k.due, k.jobs, k.push, k.fenceToken, now + 1000, 1000, 50, 100))[0], 3)
  assert.equal((await db.r.wspsSchedule(k.demand, k.due, k.jobs, k.push, k.fenceToken, now + 1000, 1000, 50, 100))[0], 0)
})

test('competing consumers: each job is popped by exactly one worker', async () => {
  const k = freshKeys()
  const now = Date.now()
  const symbols = Array.from({ length: 40 }, (_, i) => `S${i}`)
  await db.r.wspsDemand(k.demand, k.due, now + 60_000, now, ...symbols)
  await db.r.wspsSchedule(k.demand, k.due, k.jobs, k.push, k.fenceToken, now, 1000, 1, 100)
  const workers = [new Redis(db.redis.url), new Redis(db.redis.url), new Redis(db.redis.url)]
  /** @type {string[][]} */
  const got = [[], [], []]
  await Promise.all(workers.map(async (w, i) => {
    for (;;) {
      const job = await w.blpop(k.jobs, 0.2)
      if (!job) break
      got[i].push(...JSON.parse(job[1]).s)
    }
    w.disconnect()
  }))
  assert.deepEqual(got.flat().sort(), [...symbols].sort(), 'every symbol once, none twice')
})

test('an expired lease stops scheduling; a renewed one keeps it; renewals never shorten a lease', async () => {
  const k = freshKeys()
  const now = 2_000_000
  await db.r.wspsDemand(k.demand, k.due, now + 500, now, 'OLD')
  await db.r.wspsDemand(k.demand, k.due, now + 5000, now, 'KEPT')
  await db.r.wspsDemand(k.demand, k.due, now + 100, now, 'KEPT') // another gateway, shorter: ignored
  const [, , expired] = await db.r.wspsSchedule(k.demand, k.due, k.jobs, k.push, k.fenceToken, now + 1000, 1000, 50, 100)
  assert.equal(expired, 1)
  assert.deepEqual(await db.r.zrange(k.demand, 0, -1), ['KEPT'])
  assert.deepEqual(await db.r.zrange(k.due, 0, -1), ['KEPT'])
})

test('publish: seq rises by one, latest is stored with a TTL, subscribers get the same text', async () => {
  const k = freshKeys()
  const sub = new Redis(db.redis.url)
  /** @type {string[]} */
  const got = []
  sub.on('message', (_ch, msg) => got.push(msg))
  await sub.subscribe(k.channel('AAPL'))
  const s1 = await publishOne(k, '{"symbol":"AAPL","ts":1,"bid":1}')
  const s2 = await publishOne(k, '{"symbol":"AAPL","ts":2,"bid":2}')
  assert.deepEqual([s1, s2], [1, 2])
  assert.deepEqual(await latestOf(k, 'AAPL'), { seq: 2, symbol: 'AAPL', ts: 2, bid: 2 })
  assert.ok((await db.r.pttl(k.latest('AAPL'))) > 50000)
  await new Promise((resolve) => setTimeout(resolve, 50))
  assert.deepEqual(got.map((m) => JSON.parse(m).seq), [1, 2])
  sub.disconnect()
})

test('publish: a floor from the fetcher keeps seq rising after Redis lost the counter', async () => {
  const k = freshKeys()
  await db.r.del(k.seq('X'))
  const seq = await publishOne(k, '{"symbol":"X","ts":1}', { ttlMs: 1000, floor: 41 })
  assert.equal(seq, 42)
  assert.equal(await publishOne(k, '{"symbol":"X","ts":1}', { ttlMs: 1000, floor: 41 }), 43)
})

test('publish: many quotes in one call, in order; a pushed symbol among them is refused alone', async () => {
  const k = freshKeys()
  await publishOne(k, '{"symbol":"P","ts":1}', { pushLeaseMs: 5000 })
  const quotes = ['A', 'B', 'A', 'P'].map((symbol, i) => ({ symbol, body: `{"symbol":"${symbol}","ts":${i}}`, floor: 0, ts: i }))
  assert.deepEqual(await db.r.wspsPublish(...publishArgs(k, quotes, { ttlMs: 60000, sharded: false, pushLeaseMs: 0 })), [1, 1, 2, 0])
  assert.equal((await latestOf(k, 'A')).ts, 2, 'the later quote of A is the latest')
})

test('history: each published quote is kept in the symbol\'s stream under its seq, at least historySize of them, with one epoch while the seqs continue', async () => {
  const k = freshKeys()
  const opts = { ttlMs: 60000, sharded: false, pushLeaseMs: 0, historySize: 100 }
  const quotes = Array.from({ length: 250 }, (_, i) => ({ symbol: 'H', body: `{"symbol":"H","ts":${i + 1}}`, floor: 0, ts: i + 1 }))
  assert.deepEqual(await db.r.wspsPublish(...publishArgs(k, quotes, opts)), quotes.map((_, i) => i + 1))
  const entries = await db.r.xrange(k.history('H'), '-', '+')
  const ids = entries.map(([id]) => Number(id.split('-')[0]))
  assert.ok(ids.length >= 100 && ids.length <= 200, `at least historySize, trimmed by whole nodes (${ids.length})`)
  assert.deepEqual(ids, Array.from({ length: ids.length }, (_, i) => 251 - ids.length + i), 'the newest, in seq order, none missing')
  const msgs = entries.map(([, fields]) => JSON.parse(fields[1]))
  const epoch = msgs[0].epoch
  assert.match(epoch, /^[0-9a-z]{6,16}$/)
  assert.ok(msgs.every((m, i) => m.seq === ids[i] && m.epoch === epoch && m.ts === ids[i]))
  const [latest] = await latestQuotes(db.r, k, ['H'])
  assert.equal(latest, entries.at(-1)?.[1][1], 'the latest quote is the newest history entry, byte for byte')
  assert.equal(await db.r.exists(k.latest('H')), 0, 'and nothing else: no `last` key with history on')
  const ttl = await db.r.pttl(k.history('H'))
  assert.ok(ttl > 55_000 && ttl <= 60_000, `the history expires as the latest quote would: ttlMs after the last quote (${ttl} ms)`)
  assert.equal(await db.r.get(k.epoch('H')), epoch, 'the epoch key names it')
  assert.equal(await db.r.pttl(k.epoch('H')), -1, 'and lives as long as the counter: no expiry')

  // The counter is lost (the history is not): the seq would not follow the
  // newest entry, so the history restarts under a new epoch.
  await db.r.del(k.seq('H'))
  const [seq] = await db.r.wspsPublish(...publishArgs(k, [{ symbol: 'H', body: '{"symbol":"H","ts":251}', floor: 2, ts: 251 }], opts))
  assert.equal(seq, 3)
  const after = await db.r.xrange(k.history('H'), '-', '+')
  assert.deepEqual(after.map(([id]) => id), ['3-0'])
  const restarted = JSON.parse(after[0][1][1]).epoch
  assert.notEqual(restarted, epoch, 'a new epoch: no client may take seq 3 for the old one')

  // The history alone is gone (expired, evicted): the seqs count on, same
  // epoch; a reader asking for what is gone sees entries start later.
  await db.r.del(k.history('H'))
  await publishOne(k, '{"symbol":"H","ts":252}', opts)
  assert.deepEqual((await db.r.xrange(k.history('H'), '-', '+')).map(([id, f]) => [id, JSON.parse(f[1]).epoch]), [['4-0', restarted]])
  // The epoch key alone is gone (evicted; or written by the version that
  // kept the epoch only in the messages): the latest quote still names it.
  await db.r.del(k.epoch('H'))
  await publishOne(k, '{"symbol":"H","ts":253}', opts)
  assert.equal((await latestOf(k, 'H')).epoch, restarted)
  assert.equal(await db.r.get(k.epoch('H')), restarted)
  // Everything is gone (FLUSH, a restart without persistence): a new epoch.
  await db.r.del(k.seq('H'), k.latest('H'), k.history('H'), k.epoch('H'))
  await publishOne(k, '{"symbol":"H","ts":254}', opts)
  const flushed = await latestOf(k, 'H')
  assert.equal(flushed.seq, 1)
  assert.notEqual(flushed.epoch, restarted)
  // The counter alone is lost while the history expired (nothing to collide
  // with): the floor keeps seq rising, and still a new epoch, since another
  // fetcher may have published seqs this one never saw.
  await db.r.del(k.seq('H'), k.history('H'))
  const [next] = await db.r.wspsPublish(...publishArgs(k, [{ symbol: 'H', body: '{"symbol":"H","ts":255}', floor: 5, ts: 255 }], opts))
  assert.equal(next, 6)
  assert.notEqual((await latestOf(k, 'H')).epoch, flushed.epoch)
  // With history off: no stream, no epoch in the message.
  const off = freshKeys()
  await publishOne(off, '{"symbol":"N","ts":1}')
  assert.equal(await db.r.exists(off.history('N'), off.epoch('N')), 0)
  assert.equal((await latestOf(off, 'N')).epoch, undefined)
  // History turned off and on again: the epoch goes on while the count did,
  // and not once the counter was lost in between.
  const t = freshKeys()
  await publishOne(t, '{"symbol":"T","ts":1}', opts)
  const first = await db.r.get(t.epoch('T'))
  await publishOne(t, '{"symbol":"T","ts":2}')
  await publishOne(t, '{"symbol":"T","ts":3}', opts)
  assert.equal((await latestOf(t, 'T')).epoch, first)
  await db.r.del(t.seq('T'))
  await publishOne(t, '{"symbol":"T","ts":4}', { floor: 3 })
  await publishOne(t, '{"symbol":"T","ts":5}', opts)
  const later = await latestOf(t, 'T')
  assert.equal(later.seq, 5)
  assert.notEqual(later.epoch, first, 'the counter was lost while history was off: a new epoch')
})

test('latest quote: with history on the stream\'s newest entry, with history off the `last` key; after a switch the newer of the two', async () => {
  const k = freshKeys()
  const on = { historySize: 100 }
  await publishOne(k, '{"symbol":"L","ts":1}', on)
  assert.equal((await latestOf(k, 'L')).ts, 1)
  // Off: the `last` key, newer than the stream left behind.
  await publishOne(k, '{"symbol":"L","ts":2}')
  assert.equal((await latestOf(k, 'L')).ts, 2)
  assert.equal((await db.r.xrevrange(k.history('L'), '+', '-', 'COUNT', 1)).length, 1, 'the stream is still there, older')
  // On again: the stream, newer than the `last` key; the key goes at the
  // next trim (every 16th seq).
  await publishOne(k, '{"symbol":"L","ts":3}', on)
  assert.deepEqual(await latestOf(k, 'L'), { seq: 3, epoch: (await latestOf(k, 'L')).epoch, symbol: 'L', ts: 3 })
  for (let ts = 4; ts <= 16; ts++) await publishOne(k, `{"symbol":"L","ts":${ts}}`, on)
  assert.equal(await db.r.exists(k.latest('L')), 0, 'the `last` key of the time history was off is gone')
  assert.equal((await latestOf(k, 'L')).seq, 16)
  assert.equal(await latestOf(k, 'NONE'), null)
})

test('retire: a quiet symbol\'s history is cut to its latest quote, which gets the expiry it has left; not when a later quote was published', async () => {
  const k = freshKeys()
  const opts = { ttlMs: 60_000, historySize: 100 }
  for (let ts = 1; ts <= 30; ts++) await publishOne(k, `{"symbol":"Q","ts":${ts}}`, opts)
  const newest = /** @type {string} */ ((await latestQuotes(db.r, k, ['Q']))[0])
  assert.equal(await db.r.wspsRetire(k.history('Q'), k.historyPin('Q'), 29, 58_000), 0, 'seq 30 was published after 29 (by another fetcher): kept')
  assert.equal(await db.r.xlen(k.history('Q')), 30)
  assert.equal(await db.r.wspsRetire(k.history('Q'), k.historyPin('Q'), 30, 58_000), 1)
  assert.deepEqual((await db.r.xrange(k.history('Q'), '-', '+')).map(([id, f]) => [id, f[1]]), [['30-0', newest]], 'only the newest entry, as it was')
  assert.deepEqual((await latestQuotes(db.r, k, ['Q']))[0], newest, 'still the latest quote')
  const ttl = await db.r.pttl(k.history('Q'))
  assert.ok(ttl > 57_000 && ttl <= 58_000, `the expiry it has left (${ttl} ms)`)
  assert.equal(await db.r.wspsRetire(k.history('NONE'), k.historyPin('NONE'), 1, 1000), 0, 'no stream: nothing')
  // The count goes on in the same epoch.
  assert.equal(await publishOne(k, '{"symbol":"Q","ts":31}', opts), 31)
  assert.equal((await latestOf(k, 'Q')).epoch, JSON.parse(newest).epoch)
})

test('a history pin keeps the stream from the pinned seq on (less historySize), and the retire pass leaves a pinned stream alone', async () => {
  const k = freshKeys()
  const opts = { historySize: 10 }
  const ids = async () => (await db.r.xrange(k.history('P'), '-', '+')).map(([id]) => Number(id.split('-')[0]))
  const publishUpTo = async (/** @type {number} */ from, /** @type {number} */ to) => {
    for (let ts = from; ts <= to; ts++) await publishOne(k, `{"symbol":"P","ts":${ts}}`, opts)
  }
  // Trimming drops whole stream nodes (100 entries each by default).
  await publishUpTo(1, 320)
  const unpinned = await ids()
  assert.ok(unpinned[0] > 200, `without a pin: trimmed to about historySize (oldest ${unpinned[0]})`)
  await db.r.set(k.historyPin('P'), 330, 'PX', 60_000)
  await publishUpTo(321, 800)
  const pinned = await ids()
  // MINID ~ 320 (pin 330 less historySize 10): the oldest kept is at or
  // below 320, and nothing from 320 on is gone.
  assert.ok(pinned[0] <= 320, `pinned at 330: kept from 320 on (oldest ${pinned[0]})`)
  assert.deepEqual(pinned.slice(pinned.indexOf(320)), Array.from({ length: 481 }, (_, i) => 320 + i), 'every entry from 320 to 800')
  assert.equal(await db.r.wspsRetire(k.history('P'), k.historyPin('P'), 800, 58_000), 2, 'pinned: not retired')
  assert.equal((await ids()).length, pinned.length)
  await db.r.del(k.historyPin('P'))
  await publishUpTo(801, 1120)
  assert.ok((await ids())[0] > 1000, 'the pin gone: trimmed to about historySize again')
})

test('the history stream\'s expiry: renewed to streamTtlMs when a quote asks (renew), on every 16th seq and when an epoch starts; not by the other quotes', async () => {
  const k = freshKeys()
  const publish = (/** @type {number} */ ts, /** @type {boolean} */ renew) => db.r.wspsPublish(...publishArgs(k, [{ symbol: 'X', body: `{"symbol":"X","ts":${ts}}`, floor: 0, ts, renew }], { ttlMs: 1000, sharded: false, pushLeaseMs: 0, historySize: 100, streamTtlMs: 60_000 }))
  await publish(1, false)
  assert.ok(await db.r.pttl(k.history('X')) > 59_000, 'a new epoch: the new stream gets its expiry')
  await db.r.pexpire(k.history('X'), 30_000)
  await publish(2, false)
  assert.ok(await db.r.pttl(k.history('X')) <= 30_000, 'a quote that does not ask: unchanged')
  await publish(3, true)
  assert.ok(await db.r.pttl(k.history('X')) > 59_000, 'one that asks: renewed')
  await db.r.pexpire(k.history('X'), 30_000)
  for (let ts = 4; ts <= 16; ts++) await publish(ts, false)
  assert.ok(await db.r.pttl(k.history('X')) > 59_000, 'the 16th seq: renewed')
  assert.equal(await db.r.exists(k.latest('X')), 0)
})

test('push wins: a pushed symbol gets no job while its push lease lasts, and provider quotes of it are refused', async () => {
  const k = freshKeys()
  const now = 3_000_000
  await db.r.wspsDemand(k.demand, k.due, now + 60_000, now, 'PUSHED', 'POLLED')
  await db.r.zadd(k.push, now + 500, 'PUSHED')
  const [scheduled, , , pushed] = await db.r.wspsSchedule(k.demand, k.due, k.jobs, k.push, k.fenceToken, now, 1000, 50, 100)
  assert.deepEqual([scheduled, pushed], [1, 1])
  assert.deepEqual((await db.r.lrange(k.jobs, 0, -1)).flatMap((j) => JSON.parse(j).s), ['POLLED'])
  // The lease ran out: the symbol is fetched again at its next due time.
  const [again] = await db.r.wspsSchedule(k.demand, k.due, k.jobs, k.push, k.fenceToken, now + 1000, 1000, 50, 100)
  assert.equal(again, 2)
  assert.equal(await db.r.zcard(k.push), 0, 'expired push leases are dropped')

  const body = '{"symbol":"PUSHED","ts":1}'
  assert.equal(await publishOne(k, body), 1, 'a provider quote before any push is published')
  assert.equal(await publishOne(k, body, { pushLeaseMs: 5000 }), 2, 'a pushed quote is published and takes the lease')
  assert.ok((await db.r.pttl(k.pushed('PUSHED'))) > 4000)
  assert.equal(await publishOne(k, body), 0, 'a provider quote under the lease is refused')
  assert.equal((await latestOf(k, 'PUSHED')).seq, 2)
})

test('stream claims: each demanded symbol has one holder; a dead holder\'s symbols are taken over; undemanded ones are released', async () => {
  const k = freshKeys()
  const now = Date.now()
  await db.r.wspsDemand(k.demand, k.due, now + 60_000, now, 'A', 'B', 'C')
  // (The symbols of the reply: each is followed by its fencing token, fencing.test.js.)
  const claim = async (/** @type {string} */ me, /** @type {number} */ at, /** @type {number} */ max, /** @type {string[]} */ held = []) =>
    (await db.r.wspsClaim(k.demand, k.streamOwner, k.streamLease, k.streamToken, k.fenceToken, me, at, 3000, max, ...held)).filter((_, i) => i % 2 === 0)
  const one = await claim('one', now, 2)
  assert.equal(one.length, 2, 'capped at maxSymbols')
  const two = await claim('two', now, 10)
  assert.deepEqual([...one, ...two].sort(), ['A', 'B', 'C'], 'every symbol held once')
  assert.deepEqual((await claim('one', now + 1000, 2, one)).sort(), [...one].sort(), 'renewal keeps what is held')
  // "two" dies (stops renewing); after its lease "one" may take its symbol.
  const later = await claim('one', now + 3500, 10, one)
  assert.deepEqual(later.sort(), ['A', 'B', 'C'])
  // Demand for A lapses: "one" releases it.
  await db.r.zadd(k.demand, now + 3600, 'A')
  const last = await claim('one', now + 4000, 10, later)
  assert.deepEqual(last.sort(), ['B', 'C'])
  assert.equal(await db.r.hget(k.streamOwner, 'A'), null)
  assert.equal(await db.r.wspsRelease(k.streamOwner, k.streamLease, k.streamToken, 'one', ...last), 2)
  assert.equal(await db.r.hlen(k.streamOwner), 0)
  assert.equal(await db.r.hlen(k.streamToken), 0, 'their tokens go with them')
})
