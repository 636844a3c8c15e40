// WspsClient's order books against a gateway in this process (the real
// WsServer, Sessions and BookHub over an in-memory broker fed by a venue):
// the client ends with exactly the venue's book after many updates, after
// a lost frame and a corrupted checksum (it resubscribes by itself), after
// a reconnect, and through an expired book; never frozen as live when the
// client's own link goes silent or drops; NO_BOOK and BAD_BOOK.

import assert from 'node:assert/strict'
import { isDeepStrictEqual } from 'node:util'
import { describe, test } from 'node:test'
import { waitFor } from '@wsps/testkit'
import { bookChecksum } from '@wsps/protocol/book'
import { bookGateway, filteringProxy, recordingWebSocket, scripted } from './stack.js'

const S = 'BTC-USD'
const { client, atEnd } = scripted({ initialBackoffMs: 10, restartJitterMs: 10 })

/** A gateway with a book of S (40 levels a side), closed at the end. */
async function withBook (seed = 1) {
  const gw = await bookGateway()
  atEnd(() => gw.close())
  const v = gw.venue(S, { seed })
  v.snapshot(40, { dark: true })
  return { gw, v }
}

/**
 * Waits until the client holds exactly the venue's top `depth` levels.
 * @param {import('@wsps/client').WspsClient} c
 * @param {{ref: import('@wsps/protocol/book').OrderBook}} v
 */
async function holdsVenue (c, v, depth = 10, message = '') {
  await waitFor(() => {
    const b = c.book(S)
    return b !== undefined && b.sync && isDeepStrictEqual({ bids: b.bids, asks: b.asks }, v.ref.top(depth))
  }, { message: `the client holds the venue's book ${message}` })
}

/**
 * Updates the venue until `done()` (frames reach the client meanwhile).
 * @param {{update (): void}} v
 * @param {() => boolean} done
 */
async function updateUntil (v, done, max = 2000) {
  for (let i = 0; i < max && !done(); i++) {
    v.update()
    if (i % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 2))
  }
  assert.ok(done(), 'the condition came within the updates')
}

describe('order books', () => {
  test('after many updates, a lost frame and a corrupted checksum the client holds exactly the gateway\'s book', async () => {
    const { gw, v } = await withBook(7)
    let levels = 0
    // Frame 40 of the levels is lost on the way, frame 80 arrives with a wrong checksum.
    const proxy = await filteringProxy(gw.url, (msg) => {
      if (msg.op !== 'levels') return msg
      levels++
      if (levels === 40) return null
      if (levels === 80) return { ...msg, checksum: (msg.checksum + 1) >>> 0 }
      return msg
    })
    atEnd(() => proxy.close())
    const c = client({ url: proxy.url })
    /** @type {import('@wsps/client').BookEvent[]} */
    const events = []
    c.on('book', (e) => events.push(e))
    c.connect()
    assert.deepEqual(await c.subscribeBook([S], 10), { depth: 10, symbols: [S], noBook: [] })
    await holdsVenue(c, v, 10, 'after the snapshot')
    assert.equal(events[0].snapshot, true)

    await updateUntil(v, () => levels >= 40)
    await waitFor(() => c.bookResyncs === 1, { message: 'the lost frame made the client resubscribe' })
    await holdsVenue(c, v, 10, 'after the gap')
    await updateUntil(v, () => levels >= 100)
    await waitFor(() => c.bookResyncs === 2, { message: 'the wrong checksum made the client resubscribe' })
    for (let i = 0; i < 100; i++) v.update()
    await holdsVenue(c, v, 10, 'at the end')
    assert.equal(c.bookResyncs, 2, 'no other resync')
    const last = /** @type {import('@wsps/client').HeldBook} */ (c.book(S))
    assert.equal(last.depth, 10)
    assert.ok(events.length > 100, `a book event per change (${events.length})`)
    assert.equal(events.filter((e) => e.snapshot).length, 3, 'the first snapshot and one per resync')
    assert.equal(bookChecksum(events.at(-1)?.book ?? { bids: [], asks: [] }), bookChecksum(v.ref.top(10)))
  })

  test('a reconnect subscribes the books again (a fresh snapshot); an expired book is shown out of sync until its new epoch', async () => {
    const { gw, v } = await withBook(3)
    const rec = recordingWebSocket()
    const c = client({ url: gw.url, WebSocket: rec.WebSocket })
    let hellos = 0
    c.on('hello', () => hellos++)
    c.connect()
    await c.subscribeBook([S], 25)
    await holdsVenue(c, v, 25)
    gw.restart()
    await waitFor(() => hellos === 2 && c.status.state === 'live', { message: 'live again on a new connection' })
    for (let i = 0; i < 50; i++) v.update()
    await holdsVenue(c, v, 25, 'after the reconnect')
    const subs = rec.sent.map((x) => x.msg).filter((m) => m.op === 'sub' && m.book !== undefined)
    assert.deepEqual(subs.map((m) => [m.symbols, m.book]), [[[S], 25], [[S], 25]], 'once per connection')
    assert.equal(c.bookResyncs, 0)

    /** @type {import('@wsps/client').BookEvent[]} */
    const events = []
    c.on('book', (e) => events.push(e))
    v.vanish()
    gw.books.resync()
    await waitFor(() => c.book(S)?.sync === false, { message: 'out of sync' })
    assert.deepEqual([c.book(S)?.bids, c.book(S)?.asks], [[], []])
    assert.equal(events.at(-1)?.book.sync, false)
    v.snapshot(12, { newEpoch: 'ep2' })
    await holdsVenue(c, v, 25, 'in the new epoch')
    assert.equal(c.book(S)?.epoch, 'ep2')
    assert.equal(c.bookResyncs, 0, 'out of sync is no reason to resubscribe: the gateway sends the next snapshot')
  })

  test('the client\'s own link silent, then lost: its books are shown out of sync at once, never frozen, and in sync again after', async () => {
    const { gw, v } = await withBook(5)
    let silent = false
    const proxy = await filteringProxy(gw.url, (msg) => silent ? null : msg)
    atEnd(() => proxy.close())
    // Frames the silence swallowed are lost here (a proxy, not TCP): the snapshot asked for meanwhile is asked again soon.
    const c = client({ url: proxy.url, quietMs: 150, resyncGraceMs: 100 })
    c.connect()
    await c.subscribeBook([S], 10)
    await holdsVenue(c, v, 10, 'at first')

    // Nothing comes back, the socket open: out of sync within the quiet time and its probe.
    silent = true
    const silentAt = Date.now()
    await updateUntil(v, () => c.book(S)?.sync === false, 100_000)
    const told = Date.now() - silentAt
    assert.ok(told < 1500, `out of sync ${told} ms after the silence began`)
    assert.deepEqual([c.book(S)?.bids, c.book(S)?.asks], [[], []], 'nothing shown of a book that may be old')
    silent = false
    await updateUntil(v, () => c.book(S)?.sync === true, 100_000)
    await holdsVenue(c, v, 10, 'after the silence')

    // The connection lost: out of sync at once, in sync again on the next connection.
    /** @type {boolean[]} */
    const syncs = []
    c.on('book', (e) => syncs.push(e.book.sync))
    gw.restart()
    await waitFor(() => syncs.includes(false), { message: 'told out of sync when the connection dropped' })
    for (let i = 0; i < 20; i++) v.update()
    await holdsVenue(c, v, 10, 'after the reconnect')
  })

  test('mode distinct: asked for on every connection, every change of the window its own frame; a bad mode rejects with BAD_BOOK', async () => {
    const { gw, v } = await withBook(11)
    const rec = recordingWebSocket()
    const c = client({ url: gw.url, WebSocket: rec.WebSocket })
    c.connect()
    await assert.rejects(c.subscribeBook([S], 10, { mode: /** @type {any} */ ('fast') }), (/** @type {any} */ err) => err.code === 'BAD_BOOK')
    await c.subscribeBook([S], 10, { mode: 'distinct' })
    await holdsVenue(c, v, 10)
    const before = rec.received.filter((x) => x.msg.op === 'levels').length
    let changes = 0
    for (let i = 0; i < 40; i++) {
      const top = JSON.stringify(v.ref.top(10))
      v.update({ batched: true })
      if (JSON.stringify(v.ref.top(10)) !== top) changes++
    }
    await holdsVenue(c, v, 10, 'after 40 changes in one batching window')
    await waitFor(() => rec.received.filter((x) => x.msg.op === 'levels').length - before === changes, { message: `a frame per change (${changes})` })
    gw.restart()
    await waitFor(() => rec.sent.filter((x) => x.msg.op === 'sub' && x.msg.mode === 'distinct').length === 2, { message: 'distinct again on the new connection' })
    await holdsVenue(c, v, 10, 'after the reconnect')
    assert.equal(c.bookResyncs, 0)

    // maxRate: the book moves to a rate window; distinct with a rate is refused without asking.
    await assert.rejects(c.subscribeBook([S], 10, { mode: 'distinct', maxRate: 2 }), (/** @type {any} */ err) => err.code === 'BAD_BOOK')
    await c.subscribeBook([S], 10, { maxRate: 5 })
    assert.equal(rec.sent.filter((x) => x.msg.op === 'sub' && x.msg.maxRate === 5).length, 1)
    for (let i = 0; i < 20; i++) v.update()
    await holdsVenue(c, v, 10, 'at 5 frames a second')
  })

  test('NO_BOOK leaves the others subscribed; a depth not in BOOK_DEPTHS rejects with BAD_BOOK; unsubscribeBook stops the book', async () => {
    const { gw, v } = await withBook()
    const rec = recordingWebSocket()
    const c = client({ url: gw.url, WebSocket: rec.WebSocket })
    /** @type {string[]} */
    const errors = []
    c.on('error', (e) => errors.push(e.code))
    c.connect()
    assert.deepEqual(await c.subscribeBook([S, 'NOPE-USD'], 10), { depth: 10, symbols: [S], noBook: ['NOPE-USD'] })
    assert.deepEqual(errors, ['NO_BOOK'])
    await assert.rejects(c.subscribeBook([S], 7), (/** @type {any} */ err) => err.code === 'BAD_BOOK')
    await holdsVenue(c, v, 10, 'still at depth 10')
    // A new depth replaces the old: unsub at 10, sub at 100.
    await c.subscribeBook([S], 100)
    await holdsVenue(c, v, 100, 'at depth 100')
    const books = rec.sent.map((x) => x.msg).filter((m) => m.book !== undefined).map((m) => `${m.op} ${m.symbols} ${m.book}`)
    assert.deepEqual(books, [`sub ${S},NOPE-USD 10`, `unsub ${S} 10`, `sub ${S} 100`])
    c.unsubscribeBook([S])
    assert.equal(c.book(S), undefined)
    await waitFor(() => rec.received.some((x) => x.msg.op === 'ack' && x.msg.book === 100 && x.msg.symbols.length === 0), { message: 'the unsub ack' })
    let after = 0
    c.on('book', () => after++)
    for (let i = 0; i < 30; i++) v.update()
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.equal(after, 0, 'no book event after unsubscribeBook')
  })
})
