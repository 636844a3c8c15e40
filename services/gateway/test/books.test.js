// Order books on the gateway: book sub/unsub through Sessions, and every
// client's window checked against a reference book after every update,
// through lost messages, rereads, a lost book and a new epoch.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Disconnect } from '@wsps/protocol'
import { OrderBook, bookChecksum } from '@wsps/protocol/book'
import { BookHub } from '../src/books/book-hub.js'
import { Recovery } from '../src/recovery.js'
import { Sessions } from '../src/session.js'
import { Timelines } from '../src/timelines.js'
import { bookVenue, gatewayParts, silent, tick } from './helper.js'

const SYMBOL = 'BTC-USD'

/**
 * A client's side: holds each (symbol, depth) window from the frames its
 * socket got, by the rules of docs/protocol.md, and checks every frame.
 */
class Holder {
  /** @type {Map<number, {book: OrderBook, seq: number, epoch: string, sync: boolean}>} */
  windows = new Map()
  read = 0
  /** @param {{sent: any[]}} ws */
  constructor (ws) { this.ws = ws }
  /** Takes the frames that arrived since the last call. */
  take () {
    for (; this.read < this.ws.sent.length; this.read++) {
      const f = this.ws.sent[this.read]
      if (f.op === 'book') {
        const book = new OrderBook()
        book.reset(f)
        this.windows.set(f.depth, { book, seq: f.seq, epoch: f.epoch, sync: f.sync !== false })
        assert.equal(f.checksum, bookChecksum(book.top(f.depth)), 'snapshot checksum')
      } else if (f.op === 'levels') {
        const w = this.windows.get(f.depth)
        assert.ok(w, 'levels after a snapshot')
        assert.ok(f.prev <= w.seq && w.seq < f.seq, `levels ${f.prev}..${f.seq} apply on ${w.seq}`)
        w.book.apply(f)
        w.seq = f.seq
        assert.equal(f.checksum, bookChecksum(w.book.top(f.depth)), `checksum at seq ${f.seq}`)
      }
    }
  }

  /**
   * @param {number} depth
   * @param {OrderBook} ref
   */
  assertHolds (depth, ref, message = '') {
    this.take()
    const w = this.windows.get(depth)
    assert.ok(w, `depth ${depth} held ${message}`)
    assert.deepEqual(w.book.top(depth), ref.top(depth), `depth ${depth} equals the reference ${message}`)
    assert.equal(w.book.levels.bids <= depth && w.book.levels.asks <= depth, true, 'never more than the depth')
  }
}

function setup ({ appearMs = 0 } = {}) {
  const parts = gatewayParts()
  const counts = { rewound: 0 }
  const metrics = { held: { set () {} }, reads: { inc () {} }, unsynced: { inc () {} }, rewound: { inc () { counts.rewound++ } } }
  const hub = new BookHub({ source: parts.broker, demandLeaseMs: 60_000, appearMs, metrics, logger: silent })
  parts.useBooks(hub)
  const sessions = new Sessions({
    timelines: new Timelines({ realtime: { hub: parts.hub, recovery: new Recovery({ hub: parts.hub, broker: parts.broker, max: 100, logger: silent }), bars: null } }),
    books: hub,
    metrics: parts.metrics,
    maxSubscriptions: 5,
    draining: () => false,
    authenticate: null,
    hello: { node: 'n', heartbeatMs: 30_000, limits: {} },
    logger: silent
  })
  const connect = () => {
    const cl = parts.client()
    /** @param {object} frame */
    const send = (frame) => sessions.onMessage(cl.conn, Buffer.from(JSON.stringify(frame)), false)
    return { ...cl, send, holder: new Holder(cl.ws) }
  }
  const settle = async () => {
    await new Promise((resolve) => setTimeout(resolve, 5))
    for (let i = 0; i < 6; i++) await tick()
  }
  return { parts, hub, sessions, connect, settle, counts }
}

/**
 * setup(), a venue's book of `levels` a side (not published: read), and a
 * client holding it at depth 10.
 *
 * @param {{seed: number, levels: number}} options
 */
async function holding ({ seed, levels }) {
  const parts = setup()
  const v = bookVenue(parts.parts.broker, parts.hub, SYMBOL, { seed })
  v.snapshot(levels, { dark: true })
  const c = parts.connect()
  c.send({ op: 'sub', symbols: [SYMBOL], book: 10 })
  await parts.settle()
  return { ...parts, v, c }
}

test('books: every client holds exactly the top N of the book after every update, at every depth, checksums matching', async () => {
  const { parts, hub, connect, settle } = setup()
  const v = bookVenue(parts.broker, hub, SYMBOL, { seed: 7 })
  v.snapshot(40, { dark: true })
  const c10 = connect()
  const c25 = connect()
  c10.send({ op: 'sub', symbols: [SYMBOL], book: 10, id: 1 })
  c25.send({ op: 'sub', symbols: [SYMBOL], book: 25, id: 2 })
  await settle()
  assert.deepEqual(c10.ws.sent.filter((f) => f.op === 'ack')[0], { op: 'ack', id: 1, symbols: [SYMBOL], book: 10 })
  let late = null
  for (let i = 0; i < 400; i++) {
    v.update()
    c10.holder.assertHolds(10, v.ref, `after update ${i}`)
    c25.holder.assertHolds(25, v.ref, `after update ${i}`)
    if (i === 150) {
      // A late subscriber: its snapshot's seq is past the window's last change; the next delta still applies.
      late = connect()
      late.send({ op: 'sub', symbols: [SYMBOL], book: 10 })
      await settle()
    }
    late?.holder.assertHolds(10, v.ref, `late, after update ${i}`)
  }
  const levels = c10.ws.sent.filter((f) => f.op === 'levels')
  assert.ok(levels.length > 100 && levels.length < 400, `updates deeper than 10 levels send nothing (${levels.length} frames)`)
  assert.ok(levels.some((f) => f.prev < f.seq - 1), 'a seq may jump')
  assert.ok(levels.some((f) => f.bids.concat(f.asks).some((/** @type {string[]} */ l) => l[1] === '0')), 'levels leave the window as deletes')
})

test('books: the changes of one batching window reach each window as one frame, the last size of a level winning', async () => {
  const { settle, v, c } = await holding({ seed: 9, levels: 40 })
  c.holder.assertHolds(10, v.ref)
  for (let round = 0; round < 20; round++) {
    const before = c.ws.sent.length
    const from = v.seq
    for (let i = 0; i < 12; i++) v.update({ batched: true })
    await settle()
    c.holder.assertHolds(10, v.ref, `after round ${round}`)
    const frames = c.ws.sent.slice(before)
    assert.ok(frames.length <= 1, `one frame for 12 changes (${frames.length})`)
    if (frames.length) assert.deepEqual([frames[0].op, frames[0].seq, frames[0].prev <= from], ['levels', v.seq, true])
  }
})

test('books: a distinct subscriber gets every change as its own frame (never skipped when slow), a merge one a frame per window; a sub in the other mode moves it', async () => {
  const { parts, hub, connect, settle } = setup()
  const v = bookVenue(parts.broker, hub, SYMBOL, { seed: 17 })
  v.snapshot(40, { dark: true })
  const merge = connect()
  const distinct = connect()
  merge.send({ op: 'sub', symbols: [SYMBOL], book: 10 })
  distinct.send({ op: 'sub', symbols: [SYMBOL], book: 10, mode: 'distinct', id: 1 })
  await settle()
  assert.deepEqual(distinct.ws.sent.filter((f) => f.op === 'ack')[0], { op: 'ack', id: 1, symbols: [SYMBOL], book: 10 })
  distinct.ws.bufferedAmount = parts.limits.sendHighWater + 1
  let changes = 0
  for (let round = 0; round < 10; round++) {
    const [m0, d0] = [merge.ws.sent.length, distinct.ws.sent.length]
    for (let i = 0; i < 8; i++) {
      const before = JSON.stringify(v.ref.top(10))
      v.update({ batched: true })
      if (JSON.stringify(v.ref.top(10)) !== before) changes++
    }
    await settle()
    merge.holder.assertHolds(10, v.ref, `merge, round ${round}`)
    distinct.holder.assertHolds(10, v.ref, `distinct, round ${round}`)
    assert.ok(merge.ws.sent.length - m0 <= 1, 'merge: one frame per window')
    assert.ok(distinct.ws.sent.length - d0 >= merge.ws.sent.length - m0)
  }
  assert.equal(distinct.ws.sent.filter((f) => f.op === 'levels').length, changes, 'distinct: a frame per change of its window, slow or not')

  // The same book asked for in merge mode: it moves, with a snapshot.
  distinct.ws.bufferedAmount = 0
  distinct.send({ op: 'sub', symbols: [SYMBOL], book: 10, mode: 'merge', id: 2 })
  await settle()
  assert.deepEqual(distinct.ws.sent.slice(-2).map((f) => f.op), ['ack', 'book'])
  const d1 = distinct.ws.sent.length
  for (let i = 0; i < 8; i++) v.update({ batched: true })
  await settle()
  distinct.holder.assertHolds(10, v.ref, 'moved to merge')
  assert.ok(distinct.ws.sent.length - d1 <= 1, 'merged now')
  assert.equal(distinct.c.subscriptions.count, 1, 'still one subscription')
})

test('books: maxRate: at most that many frames a second, the changes in between merged; a slow reader of it catches up from its window', async () => {
  const { parts, hub, connect, settle, v, c } = await holding({ seed: 19, levels: 40 })
  const slowRate = connect()
  slowRate.send({ op: 'sub', symbols: [SYMBOL], book: 10, maxRate: 4, id: 1 })
  await settle()
  assert.deepEqual(slowRate.ws.sent.filter((f) => f.op === 'ack')[0], { op: 'ack', id: 1, symbols: [SYMBOL], book: 10 })
  const start = Date.now()
  const first = slowRate.ws.sent.length
  while (Date.now() - start < 1000) {
    v.update()
    c.holder.assertHolds(10, v.ref, 'the full-rate reader, every update')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const frames = slowRate.ws.sent.length - first
  const elapsed = Date.now() - start
  assert.ok(frames >= 1 && frames <= Math.ceil(elapsed / 250) + 1, `at most 4 a second: ${frames} frames in ${elapsed} ms (${c.ws.sent.length} to the full-rate reader)`)
  await new Promise((resolve) => setTimeout(resolve, 300))
  slowRate.holder.assertHolds(10, v.ref, 'the last changes come with its next turn')

  // Slow for a moment (less than WSPS_SLOW_CLOSE_MS): its frame is skipped, then one snapshot of
  // its own window catches it up, and the changes held back for its rate follow it.
  await new Promise((resolve) => setTimeout(resolve, 300))
  slowRate.ws.bufferedAmount = parts.limits.sendHighWater + 1
  const held = slowRate.ws.sent.length
  // Its turn has come: the first change that reaches its window goes at once (skipped), the rest wait for the next turn.
  for (let i = 0; i < 20; i++) v.update()
  await new Promise((resolve) => setTimeout(resolve, 20))
  slowRate.ws.bufferedAmount = 0
  parts.pass()
  assert.deepEqual(slowRate.ws.sent.slice(held).map((f) => f.op), ['book'], 'nothing while slow, then its window\'s snapshot')
  await new Promise((resolve) => setTimeout(resolve, 400))
  slowRate.holder.assertHolds(10, v.ref, 'caught up')
  assert.equal(slowRate.ws.closedWith, null)
  assert.equal(hub.size, 1)
})

test('books: a slow reader skips the book\'s frames and catches up with one snapshot once it drains; slow for too long, it is closed (4008), as for quotes', async () => {
  const { parts, hub, connect, settle } = setup()
  const v = bookVenue(parts.broker, hub, SYMBOL, { seed: 13 })
  v.snapshot(40, { dark: true })
  const slow = connect()
  const fast = connect()
  for (const c of [slow, fast]) c.send({ op: 'sub', symbols: [SYMBOL], book: 10 })
  await settle()
  slow.holder.assertHolds(10, v.ref)

  slow.ws.bufferedAmount = parts.limits.sendHighWater + 1
  const held = slow.ws.sent.length
  for (let i = 0; i < 30; i++) {
    v.update()
    fast.holder.assertHolds(10, v.ref, `the fast reader, update ${i}`)
  }
  assert.equal(slow.ws.sent.length, held, 'nothing written to the slow reader')
  assert.equal(slow.c.lag.skipped, 1, 'one book skipped')
  slow.ws.bufferedAmount = 0
  parts.pass()
  const caught = slow.ws.sent.slice(held)
  assert.deepEqual(caught.map((f) => f.op), ['book'], 'one snapshot catches it up')
  slow.holder.assertHolds(10, v.ref, 'after catching up')
  for (let i = 0; i < 10; i++) v.update()
  slow.holder.assertHolds(10, v.ref, 'live again')
  assert.equal(slow.c.lag.slowForMs, 0)

  slow.ws.bufferedAmount = parts.limits.sendHighWater + 1
  v.update()
  await new Promise((resolve) => setTimeout(resolve, parts.limits.slowCloseMs + 20))
  for (let i = 0; i < 5; i++) v.update()
  assert.equal(slow.ws.closedWith?.code, Disconnect.SLOW_CONSUMER.code, 'slow past WSPS_SLOW_CLOSE_MS')
  fast.holder.assertHolds(10, v.ref, 'the fast reader throughout')
})

test('books: a lost message, a reconnect, a lost book and a new epoch: every window is repaired from the book as read', async () => {
  const { parts, hub, settle, v, c } = await holding({ seed: 3, levels: 30 })
  for (let i = 0; i < 20; i++) v.update()
  c.holder.assertHolds(10, v.ref)

  // Messages lost on the channel: the next one skips ahead, the book is read again.
  for (let i = 0; i < 5; i++) v.update({ dark: true })
  v.update()
  await settle()
  c.holder.assertHolds(10, v.ref, 'after a gap')
  const reads = parts.broker.calls.filter((x) => x[0] === 'readBook').length
  assert.equal(reads, 2, 'the first read and one after the gap')

  // The broker reconnects after changes it never delivered.
  for (let i = 0; i < 5; i++) v.update({ dark: true })
  hub.resync()
  await settle()
  assert.equal(parts.broker.calls.filter((x) => x[0] === 'subscribeBooks').length, 2, 'the channel subscribed again (a reconnect lost it)')
  c.holder.assertHolds(10, v.ref, 'after a reconnect')
  for (let i = 0; i < 10; i++) v.update()
  c.holder.assertHolds(10, v.ref, 'live again')

  // The book expires: an empty book, out of sync; then a new one with a new epoch.
  v.vanish()
  hub.resync()
  await settle()
  c.holder.take()
  const gone = c.ws.sent.at(-1)
  assert.deepEqual([gone.op, gone.sync, gone.bids, gone.asks], ['book', false, [], []])
  v.snapshot(12, { newEpoch: 'ep2' })
  c.holder.assertHolds(10, v.ref, 'the new epoch')
  assert.equal(c.ws.sent.at(-1).epoch, 'ep2')
  assert.equal(c.ws.sent.at(-1).sync, undefined)
  v.update()
  c.holder.assertHolds(10, v.ref, 'updates of the new epoch')
})

test('books: Redis losing writes the gateway had delivered (a failover, asynchronous replication) never leaves a book wrong: the book as read replaces it', async () => {
  const { hub, settle, counts, v, c } = await holding({ seed: 11, levels: 30 })
  for (let i = 0; i < 10; i++) v.update()
  c.holder.assertHolds(10, v.ref)

  // The promoted replica is 4 writes behind and the gateway reads it before any new write: behind what it holds.
  v.rewind(4)
  hub.resync()
  await settle()
  c.holder.assertHolds(10, v.ref, 'after reading a book behind the one held')
  assert.equal(c.ws.sent.at(-1).op, 'book', 'a snapshot: the seq went back')
  // The writer goes on from there, using seqs the gateway had seen with other levels.
  for (let i = 0; i < 10; i++) v.update()
  c.holder.assertHolds(10, v.ref, 'the seqs used again apply')

  // The same again, but 4 new writes land before the read: the seq read is the one held, the levels are not.
  v.rewind(4)
  for (let i = 0; i < 4; i++) v.update({ dark: true })
  hub.resync()
  await settle()
  c.holder.assertHolds(10, v.ref, 'after reading other levels at the seq held')
  for (let i = 0; i < 10; i++) v.update()
  c.holder.assertHolds(10, v.ref, 'live again')

  // A read that finds the book held (a plain reconnect) sends nothing.
  const frames = c.ws.sent.length
  hub.resync()
  await settle()
  assert.equal(c.ws.sent.length, frames, 'nothing sent for a book read as held')
  assert.equal(counts.rewound, 2, 'each counted')
})

test('books: an interrupted feed is never shown as live: an out-of-sync snapshot after the grace (at once when silent), the book again after the read', async () => {
  const { parts, hub, settle, v, c } = await holding({ seed: 5, levels: 30 })
  for (let i = 0; i < 10; i++) v.update()
  c.holder.assertHolds(10, v.ref)

  // A blip shorter than the grace, repaired by the read after the reconnect: nothing told.
  hub.interrupted(undefined, false)
  for (let i = 0; i < 3; i++) v.update({ dark: true })
  hub.resync()
  await settle()
  c.holder.assertHolds(10, v.ref, 'after a blip')
  await new Promise((resolve) => setTimeout(resolve, 1100))
  assert.equal(c.ws.sent.filter((f) => f.sync === false).length, 0, 'a repaired blip is not told')

  // The link found silent: out of sync at once, deltas refused until the read.
  hub.interrupted([SYMBOL], true)
  await settle()
  c.holder.take()
  const told = c.ws.sent.at(-1)
  assert.deepEqual([told.op, told.sync, told.bids, told.asks, told.seq], ['book', false, [], [], v.seq])
  v.update()
  await settle()
  const reread = parts.broker.calls.filter((x) => x[0] === 'readBook').length
  hub.resync()
  await settle()
  assert.ok(parts.broker.calls.filter((x) => x[0] === 'readBook').length > reread, 'read again')
  c.holder.assertHolds(10, v.ref, 'after the silence')
  const back = c.ws.sent.filter((f) => f.op === 'book').at(-1)
  assert.equal(back.sync, undefined, 'in sync again')
  v.update()
  c.holder.assertHolds(10, v.ref, 'live again')
})

test('book requests: BAD_BOOK, NO_BOOK before the ack, the limit, unsub, and the channel kept only while held', async () => {
  const { parts, hub, connect, settle } = setup()
  const v = bookVenue(parts.broker, hub, SYMBOL)
  v.snapshot(5, { dark: true })
  const c = connect()
  c.send({ op: 'sub', symbols: [SYMBOL], book: 7, id: 1 })
  c.send({ op: 'sub', symbols: [SYMBOL], book: 10, maxRate: 5000, id: 2 })
  c.send({ op: 'unsub', symbols: [SYMBOL], book: '10', id: 3 })
  c.send({ op: 'sub', symbols: [SYMBOL], book: 10, mode: 'fast', id: 31 })
  c.send({ op: 'unsub', symbols: [SYMBOL], book: 10, mode: 'merge', id: 32 })
  c.send({ op: 'sub', symbols: [SYMBOL], book: 10, mode: 'distinct', maxRate: 2, id: 33 })
  c.send({ op: 'sub', symbols: [SYMBOL], book: 10, since: {}, id: 34 })
  await settle()
  assert.deepEqual(c.ws.sent.map((f) => [f.op, f.code, f.id]), [31, 2, 3, 31, 32, 33, 34].map((id, i) => ['error', 'BAD_BOOK', i === 0 ? 1 : id]))
  c.ws.sent.length = 0
  c.holder.read = 0

  c.send({ op: 'sub', symbols: [SYMBOL, 'ETH-USD'], book: 10, id: 4 })
  c.send({ op: 'ping', id: 5 })
  await settle()
  assert.deepEqual(c.ws.sent.map((f) => [f.op, f.code ?? f.symbols, f.id]), [
    ['error', 'NO_BOOK', 4], ['ack', [SYMBOL], 4], ['book', undefined, undefined], ['pong', undefined, 5]
  ], 'frames sent meanwhile are answered after')
  assert.deepEqual(c.ws.sent[0].symbols, ['ETH-USD'])
  assert.deepEqual([...parts.broker.bookChannels], [SYMBOL], 'the channel of a symbol without a book is not kept')

  c.send({ op: 'sub', symbols: ['A', 'B', 'C', 'D', 'E'], book: 25, id: 6 })
  await settle()
  assert.equal(c.ws.sent.at(-1).code, 'TOO_MANY_SUBSCRIPTIONS')

  c.send({ op: 'unsub', symbols: [SYMBOL], book: 10, id: 7 })
  await settle()
  assert.deepEqual(c.ws.sent.at(-1), { op: 'ack', id: 7, symbols: [], book: 10 })
  const before = c.ws.sent.length
  v.update()
  assert.equal(c.ws.sent.length, before, 'nothing after the unsub')
  assert.deepEqual([...parts.broker.bookChannels], [])
  assert.equal(hub.size, 0)
})

test('book requests: a book asked for before it exists is answered when it appears (its symbol is asked of the fetchers meanwhile)', async () => {
  const { parts, hub, connect, settle } = setup({ appearMs: 5000 })
  const v = bookVenue(parts.broker, hub, SYMBOL)
  const c = connect()
  c.send({ op: 'sub', symbols: [SYMBOL], book: 10, id: 1 })
  await settle()
  assert.equal(c.ws.sent.length, 0, 'not answered yet')
  assert.ok(parts.broker.calls.some((x) => x[0] === 'demand' && x.includes(SYMBOL)), 'demand renewed for the book')
  v.snapshot(15)
  await settle()
  assert.deepEqual(c.ws.sent.map((f) => f.op), ['ack', 'book'])
  c.holder.assertHolds(10, v.ref)
  v.update()
  c.holder.assertHolds(10, v.ref)
  hub.close()
})
