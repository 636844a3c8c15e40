// Order books on a real redis-server through the book script: random
// deltas applied by the script end in exactly the book the reference
// OrderBook makes of them, the channel's messages replayed make the stored
// book, and every refusal leaves the book as it was.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { OrderBook } from '@wsps/protocol/book'
import { random } from '@wsps/testkit/random'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { BookRefusal, applyBook, bookDemand, booksDemanded, canonicalBook, readBook } from '../src/books.js'
import { redisKeys } from '../src/keys.js'

const db = useScriptedRedis()
const TTL = 60_000


/**
 * @param {any} update
 * @returns {import('../src/books.js').BookUpdate}
 */
function canonical (update) {
  const c = canonicalBook(update)
  assert.equal(typeof c, 'object', String(c))
  return /** @type {import('../src/books.js').BookUpdate} */ (c)
}

test('books: the script applies random deltas exactly as the reference book; its messages replayed make the stored book', async () => {
  const keys = redisKeys('books-a')
  const sub = db.r.duplicate()
  /** @type {any[]} */
  const messages = []
  sub.on('message', (_channel, raw) => messages.push(JSON.parse(raw)))
  await sub.subscribe(keys.bookChannel('X'))
  const ref = new OrderBook()
  const rnd = random(11)
  const snap = canonical({ symbol: 'X', kind: 'snapshot', bids: [['99.5', '1'], ['99.75', '2']], asks: [['100.25', '3']], ts: 1 })
  assert.deepEqual(snap.bids, [['99.75', '2'], ['99.5', '1']], 'a snapshot is put best first')
  const first = await applyBook(db.r, keys, snap, { ttlMs: TTL })
  assert.ok('seq' in first && first.seq === 1 && /^[0-9a-z]+$/.test(first.epoch))
  ref.reset(snap)
  for (let i = 0; i < 300; i++) {
    /** @type {{bids: string[][], asks: string[][]}} */
    const levels = { bids: [], asks: [] }
    const used = new Set()
    for (let n = 1 + Math.floor(rnd() * 5); n > 0; n--) {
      const side = rnd() < 0.5 ? 'bids' : 'asks'
      const off = (1 + Math.floor(rnd() * 80)) / 4
      const price = String(side === 'bids' ? 100 - off : 100 + off)
      if (used.has(price)) continue
      used.add(price)
      levels[side].push([price, rnd() < 0.35 ? '0' : String(Math.floor(rnd() * 10000) / 100 || 1)])
    }
    const update = canonical({ symbol: 'X', kind: 'delta', ...levels, ts: 2 + i })
    const r = await applyBook(db.r, keys, update, { ttlMs: TTL, expectSeq: i + 1 })
    assert.deepEqual(r, { seq: i + 2, epoch: first.epoch })
    ref.apply(update)
  }
  const stored = await readBook(db.r, keys, 'X')
  assert.ok(stored)
  assert.deepEqual({ bids: stored.bids, asks: stored.asks }, ref.top(1000), 'the stored book is the reference book')
  assert.equal(stored.seq, 301)
  await new Promise((resolve) => setTimeout(resolve, 50))
  assert.equal(messages.length, 301, 'one message per write')
  const replay = new OrderBook()
  messages.forEach((m, i) => {
    assert.equal(m.seq, i + 1)
    if (m.snapshot) replay.reset(m)
    else replay.apply(m)
  })
  assert.deepEqual(replay.top(1000), ref.top(1000), 'the messages replayed make the book')
  sub.disconnect()
})

test('books: refusals change nothing (moved, nobook, pushed, toolarge); unsync empties the book; bad input is named', async () => {
  const keys = redisKeys('books-b')
  const delta = canonical({ symbol: 'Y', kind: 'delta', bids: [['10', '1']], asks: [], ts: 1 })
  assert.deepEqual(await applyBook(db.r, keys, delta, { ttlMs: TTL }), { refused: BookRefusal.NO_BOOK }, 'a delta needs a book')
  const snap = canonical({ symbol: 'Y', kind: 'snapshot', bids: [['10', '1']], asks: [['11', '1']], ts: 1 })
  const w = await applyBook(db.r, keys, snap, { ttlMs: TTL })
  assert.ok('seq' in w)
  assert.deepEqual(await applyBook(db.r, keys, delta, { ttlMs: TTL, expectSeq: 5 }), { refused: BookRefusal.MOVED })
  const pushed = await applyBook(db.r, keys, delta, { ttlMs: TTL, pushLeaseMs: 10_000 })
  assert.deepEqual(pushed, { seq: 2, epoch: w.epoch }, 'a pushed write')
  assert.deepEqual(await applyBook(db.r, keys, delta, { ttlMs: TTL }), { refused: BookRefusal.PUSHED }, 'a provider write while pushed')
  const big = canonical({ symbol: 'Y', kind: 'delta', bids: Array.from({ length: 1000 }, (_, i) => [`${i + 1}.5`, '1']), asks: [], ts: 2 })
  assert.deepEqual(await applyBook(db.r, keys, big, { ttlMs: TTL, pushLeaseMs: 10_000 }), { refused: BookRefusal.TOO_LARGE })
  const before = await readBook(db.r, keys, 'Y')
  assert.deepEqual(before && [before.seq, before.bids, before.asks], [2, [['10', '1']], [['11', '1']]], 'nothing half applied')

  const un = await applyBook(db.r, keys, { symbol: 'Y', kind: 'unsync', bids: [], asks: [], ts: 3 }, { ttlMs: TTL, pushLeaseMs: 10_000 })
  assert.deepEqual(un, { seq: 3, epoch: w.epoch })
  const out = await readBook(db.r, keys, 'Y')
  assert.deepEqual(out && [out.sync, out.bids, out.asks], [false, [], []])
  assert.deepEqual(await applyBook(db.r, keys, delta, { ttlMs: TTL, pushLeaseMs: 10_000 }), { refused: BookRefusal.NO_BOOK }, 'no delta until a snapshot')

  for (const [bad, why] of /** @type {[any, RegExp][]} */ ([
    [{ bids: [['-1', '1']] }, /not a positive decimal/],
    [{ bids: [['1', 'x']] }, /size "x"/],
    [{ bids: [['1', '0']] }, /no level of size 0/],
    [{ bids: [['1', '1'], ['1.0', '2']] }, /twice/],
    [{ bids: [['2', '1']], asks: [['2', '1']] }, /crossed/],
    [{ bids: 'x' }, /must be an array/]
  ])) {
    assert.match(String(canonicalBook({ symbol: 'Y', kind: 'snapshot', ts: 1, ...bad })), why)
  }
  assert.equal(await readBook(db.r, keys, 'none'), null)

  // A first snapshot expected on no book; a second writer's, built on none too, is refused.
  const z = canonical({ symbol: 'Z', kind: 'snapshot', bids: [['1', '1']], asks: [['2', '1']], ts: 1 })
  const made = await applyBook(db.r, keys, z, { ttlMs: TTL, expectSeq: 0 })
  assert.ok('seq' in made && made.seq === 1, 'the first snapshot')
  assert.deepEqual(await applyBook(db.r, keys, z, { ttlMs: TTL, expectSeq: 0 }), { refused: BookRefusal.MOVED })
  // A corrupt key never blocks the symbol: the next write starts a new book.
  await db.r.set(keys.book('Z'), '{"seq":')
  const again = await applyBook(db.r, keys, z, { ttlMs: TTL })
  assert.ok('seq' in again && again.seq === 1, 'a new book after an unreadable one')
})

test('books: the source\'s own sequence: a delta continues when sourcePrev ≤ stored < sourceSeq, an old one is refused, a gap makes the book out of sync until a snapshot', async () => {
  const keys = redisKeys('books-src')
  const at = (/** @type {any} */ u) => applyBook(db.r, keys, canonical({ symbol: 'S', ts: 1, ...u }), { ttlMs: TTL })
  assert.deepEqual(await at({ kind: 'snapshot', bids: [['10', '1']], asks: [['11', '1']], sourceSeq: 100 }), { seq: 1, epoch: (await readBook(db.r, keys, 'S'))?.epoch })
  // Binance-style: the first event after the snapshot overlaps it (U ≤ 101 ≤ u).
  assert.equal((await at({ kind: 'delta', bids: [['10', '2']], sourceSeq: 105, sourcePrev: 98 })).refused, undefined, 'overlapping the snapshot: applies')
  assert.equal((await at({ kind: 'delta', bids: [['10', '3']], sourceSeq: 106 })).refused, undefined, 'the next one (sourcePrev 105 by default)')
  assert.deepEqual(await at({ kind: 'delta', bids: [['10', '9']], sourceSeq: 104, sourcePrev: 103 }), { refused: BookRefusal.OLD }, 'below the stored one')
  assert.deepEqual(await at({ kind: 'delta', bids: [['10', '9']], sourceSeq: 106 }), { refused: BookRefusal.OLD }, 'the stored one again')
  assert.equal((await readBook(db.r, keys, 'S'))?.bids[0][1], '3', 'old deltas changed nothing')
  assert.equal((await readBook(db.r, keys, 'S'))?.seq, 3)

  // A gap: not applied, the book out of sync at a new seq, published so.
  const gap = await at({ kind: 'delta', bids: [['10', '7']], sourceSeq: 110, sourcePrev: 108 })
  assert.equal(gap.refused, BookRefusal.GAP)
  assert.ok('seq' in gap && gap.seq === 4, 'the out-of-sync write has its seq')
  const lost = await readBook(db.r, keys, 'S')
  assert.deepEqual([lost?.sync, lost?.bids, lost?.asks], [false, [], []])
  assert.deepEqual(await at({ kind: 'delta', bids: [['10', '7']], sourceSeq: 111 }), { refused: BookRefusal.NO_BOOK }, 'deltas wait for a snapshot')
  assert.equal((await at({ kind: 'snapshot', bids: [['10', '5']], asks: [['11', '1']], sourceSeq: 200 })).refused, undefined)
  assert.equal((await at({ kind: 'delta', asks: [['11', '0']], sourceSeq: 201 })).refused, undefined, 'in sync again')
  // Without a number the source's sequence is not checked (and no longer known).
  assert.equal((await at({ kind: 'delta', asks: [['12', '1']] })).refused, undefined)
  assert.equal((await at({ kind: 'delta', asks: [['13', '1']], sourceSeq: 5 })).refused, undefined, 'a number after none: taken as it comes')
  const end = await readBook(db.r, keys, 'S')
  assert.deepEqual([end?.sync, end?.bids, end?.asks], [true, [['10', '5']], [['12', '1'], ['13', '1']]])
})

test('book demand: leases held are named, expired ones dropped', async () => {
  const keys = redisKeys('books-c')
  const renew = db.r.pipeline()
  bookDemand(renew, keys, ['A', 'B'], Date.now() + 60_000)
  await renew.exec()
  await db.r.zadd(keys.bookDemand, Date.now() - 1, 'C')
  assert.deepEqual(await booksDemanded(db.r, keys, ['A', 'C', 'D'], Date.now()), ['A'])
  assert.equal(await db.r.zscore(keys.bookDemand, 'C'), null, 'the expired lease is gone')
})
