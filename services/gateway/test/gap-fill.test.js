import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DISTINCT } from '../src/delivery.js'
import { Feed, Taken } from '../src/feed.js'
import { GapFill } from '../src/gap-fill.js'
import { quote } from './helper.js'

/**
 * @param {number} seq
 * @param {string} [epoch]
 * @returns {import('../src/gap-fill.js').Entry}
 */
const entry = (seq, epoch = 'e1') => {
  const raw = quote(seq, { epoch, ts: 1000 + seq, bid: seq })
  return { quote: JSON.parse(raw), raw }
}
const held = entry(4).quote
/** @param {import('../src/gap-fill.js').Entry[] | null} list */
const seqs = (list) => list && list.map((e) => e.quote.seq)

test('continuation: history then buffer, from the tick after the held one, what is not newer passed over', () => {
  const gap = new GapFill(10)
  for (const seq of [6, 7, 8]) gap.offer(entry(seq).quote, entry(seq).raw)
  assert.deepEqual(seqs(gap.continuation(held, null, [entry(3), entry(4), entry(5), entry(6)])), [5, 6, 7, 8])
  assert.deepEqual(seqs(gap.continuation(held, entry(9).quote, [entry(5)])), [5, 6, 7, 8], 'the latest read in the same epoch')
  assert.deepEqual(seqs(new GapFill(10).continuation(held, null, [])), [], 'nothing missed')
})

test('continuation is null where history and buffer do not continue the held quote', () => {
  const gap = new GapFill(10)
  gap.offer(entry(7).quote, entry(7).raw)
  assert.deepEqual(seqs(gap.continuation(held, null, [entry(5), entry(6)])), [5, 6, 7], 'the control: it fills')
  assert.equal(gap.continuation(held, null, null), null, 'history not read')
  assert.equal(gap.continuation(held, null, [entry(5)]), null, 'a hole: 6 is missing')
  assert.equal(gap.continuation(held, entry(7, 'e2').quote, [entry(5), entry(6)]), null, 'the latest read is of a new epoch')
  assert.equal(gap.continuation(held, null, [entry(5), entry(6, 'e2')]), null, 'history of a new epoch')
})

test('more quotes than `max` offered: not fillable; the quote a live gap began with is kept whatever `max`', () => {
  const gap = new GapFill(2, entry(5))
  gap.offer(entry(6).quote, entry(6).raw)
  assert.deepEqual(seqs(gap.continuation(held, null, [])), [5, 6], 'at max: it fills')
  gap.offer(entry(7).quote, entry(7).raw)
  assert.equal(gap.continuation(held, null, [entry(5), entry(6), entry(7)]), null, 'one over: the gap cannot be filled')
  assert.equal(gap.newest([entry(9)], null, null)?.quote.seq, 6, 'the newest buffered (7 was not)')
  assert.deepEqual(seqs(new GapFill(0, entry(5)).continuation(held, null, [])), [5])
})

test('newest: the last buffered, else the newest of history, else the latest read, else none', () => {
  const buffered = new GapFill(10)
  buffered.offer(entry(8).quote, entry(8).raw)
  const latest = entry(9)
  assert.equal(buffered.newest([entry(5), entry(6)], latest.quote, latest.raw)?.raw, entry(8).raw)
  const empty = new GapFill(10)
  assert.equal(empty.newest([entry(5), entry(6)], latest.quote, latest.raw)?.raw, entry(6).raw)
  assert.deepEqual(empty.newest([], latest.quote, latest.raw), latest)
  assert.deepEqual(empty.newest(null, latest.quote, latest.raw), latest)
  assert.equal(empty.newest(null, null, null), null)
})

/**
 * A feed with one distinct subscriber on a fanout that only records: what
 * it is handed (takeTicks()) and the snapshots it gets.
 */
function distinctFeed (bufferMax = 10) {
  /** @type {any[]} */
  const snaps = []
  const fanout = /** @type {any} */ ({ queue () {} })
  const feed = new Feed('AAPL', 0, fanout, bufferMax)
  const client = /** @type {any} */ ({ sendSnap (/** @type {string[]} */ _symbols, /** @type {any} */ frame) { snaps.push(JSON.parse(frame.payload.toString())) } })
  feed.add(client, DISTINCT)
  const on = (/** @type {number} */ seq, epoch = 'e1') => feed.onQuote(entry(seq, epoch).quote, entry(seq, epoch).raw)
  const handed = () => feed.takeTicks()?.map((u) => JSON.parse(u.json).seq) ?? []
  return { feed, snaps, on, handed }
}

test('a live gap is held back, then filled from history in order with what followed (Feed#fill)', () => {
  const { feed, snaps, on, handed } = distinctFeed()
  feed.goLive(entry(1).quote, entry(1).raw)
  assert.deepEqual(snaps.map((s) => s.quotes[0].seq), [1])
  assert.equal(feed.resumeFrom(), null, 'nothing to fill')
  assert.equal(on(2), Taken.HELD)
  assert.equal(on(5), Taken.GAP)
  assert.equal(feed.resumeFrom(), 3)
  assert.equal(on(6), Taken.HELD, 'buffered behind the gap')
  assert.deepEqual(handed(), [2])
  assert.equal(feed.fill([entry(3), entry(4), entry(5)], feed.gen + 1), null, 'a read of an older generation is not used')
  assert.equal(feed.fill([entry(3), entry(4), entry(5)], feed.gen), 4)
  assert.deepEqual(handed(), [3, 4, 5, 6])
  assert.equal(feed.fill([], feed.gen), null, 'filled once')
  assert.equal(feed.resumeFrom(), null)
  assert.equal(snaps.length, 1, 'no snapshot')
})

test('after a broker reconnect a feed buffers, and where history cannot fill the gap everyone gets the newest as a snapshot marked lost', () => {
  const { feed, snaps, on, handed } = distinctFeed(2)
  feed.goLive(entry(1).quote, entry(1).raw)
  assert.equal(feed.restart(1), true, 'resyncing from now on')
  assert.equal(feed.live, false)
  assert.equal(feed.resumeFrom(), 2)
  assert.equal(on(2), Taken.HELD)
  assert.equal(on(3), Taken.HELD)
  assert.equal(on(4), Taken.HELD, 'one more than may be buffered')
  assert.equal(feed.goLive(entry(4).quote, entry(4).raw, []), -1)
  assert.equal(feed.resynced(), true)
  assert.deepEqual(snaps.map((s) => [s.quotes[0].seq, s.recovered]), [[1, undefined], [3, false]], 'the newest buffered')
  assert.deepEqual(handed(), [])
  assert.equal(on(4), Taken.HELD, 'live again, from the snapshot')
  assert.deepEqual(handed(), [4])
})

test('after a broker reconnect, history and buffer that continue the held quote are handed on as if never missed', () => {
  const { feed, snaps, on, handed } = distinctFeed()
  feed.goLive(entry(1).quote, entry(1).raw)
  feed.restart(1)
  on(3)
  assert.equal(feed.restart(2), false, 'a second reconnect: resyncing already')
  assert.equal(feed.resumeFrom(), 2, 'the held quote is still what subscribers hold')
  on(4)
  assert.equal(feed.goLive(entry(4).quote, entry(4).raw, [entry(2), entry(3)]), 3)
  assert.deepEqual(handed(), [2, 3, 4])
  assert.equal(snaps.length, 1)
})

test('a feed whose quotes carry no epoch keeps nothing across a reconnect: nothing to fill', () => {
  const { feed, snaps } = distinctFeed()
  const raw = JSON.stringify({ seq: 7, symbol: 'AAPL', ts: 1000, bid: 1 })
  feed.goLive(JSON.parse(raw), raw)
  feed.restart(1)
  assert.equal(feed.resumeFrom(), null)
  const next = JSON.stringify({ seq: 1, symbol: 'AAPL', ts: 1001, bid: 2 })
  assert.equal(feed.goLive(JSON.parse(next), next), null, 'not resuming')
  assert.deepEqual(snaps.map((s) => s.quotes[0].seq), [7, 1], 'the re-read quote wins, whatever its seq')
})
