// StreamBooks (providers/stream-books.js) on a real redis-server with the
// book script: it follows book demand (subscribes and unsubscribes the
// venue's depth), writes a snapshot then deltas building on its own seq,
// publishes sync:false on a bad checksum and resubscribes, writes the book
// whole again after another writer moved it, and marks a book nobody holds
// any more out of sync.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import pino from 'pino'
import { applyBook, readBook } from '@wsps/shared/books'
import { redisKeys } from '@wsps/shared/keys'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { waitFor } from '@wsps/testkit/wait'
import { createFetcherMetrics } from '../src/metrics.js'
import { krakenChecksum } from '../src/providers/book-kraken.js'
import { StreamBooks } from '../src/providers/stream-books.js'

const db = useScriptedRedis()
let n = 0

/** @typedef {[string, string][]} Side */

/**
 * A Kraken v2 book message, numbers as their text, checksummed over `book` (the venue's top).
 * @param {'snapshot' | 'update'} type
 * @param {{bids?: Side, asks?: Side}} levels
 * @param {{bids: Side, asks: Side}} book
 */
function kraken (type, { bids = [], asks = [] }, book) {
  const raw = (/** @type {Side} */ side) => side.map(([price, qty]) => ({ price, qty }))
  return { channel: 'book', type, data: [{ symbol: 'BTC/USD', bids: raw(bids), asks: raw(asks), checksum: krakenChecksum({ bids: raw(book.bids), asks: raw(book.asks) }) }] }
}

/** @param {import('../src/providers/book-templates.js').BookTemplateName} [template] */
function setUpBooks (template = 'kraken-book') {
  const keys = redisKeys(`sb${n++}`)
  const metrics = createFetcherMetrics('test')
  /** @type {unknown[]} */
  const sent = []
  const books = new StreamBooks({
    template,
    depth: 10,
    snapshotUrl: '',
    store: { redis: db.r, keys, ttlMs: 60_000, sharded: false },
    metrics,
    logger: pino({ level: 'silent' }),
    send: (f) => sent.push(JSON.parse(f)),
    retryMs: 100,
    now: Date.now
  })
  const stored = () => readBook(db.r, keys, 'BTC-USD')
  /**
   * @param {(b: import('@wsps/shared/books').BookState) => boolean} done
   * @param {string} message
   * @returns {Promise<import('@wsps/shared/books').BookState>}
   */
  const storedWhen = async (done, message) => /** @type {any} */ (await waitFor(async () => { const b = await stored(); return b !== null && done(b) && b }, { timeout: 2000, message }))
  const demand = (/** @type {number} */ ms, symbol = 'BTC-USD') => db.r.zadd(keys.bookDemand, Date.now() + ms, symbol)
  return { keys, metrics, sent, books, stored, storedWhen, demand }
}

const BOOK = { bids: /** @type {Side} */ ([['100.0', '1.00000000'], ['99.5', '2.50000000']]), asks: /** @type {Side} */ ([['100.5', '0.10000000']]) }

test('subscribes the books held symbols have demand for; a snapshot, then deltas on its own seq', async () => {
  const { sent, books, stored, storedWhen, demand } = setUpBooks()
  await books.follow(['BTC-USD', 'ETH-USD'])
  assert.deepEqual(sent, [], 'no book demand: nothing subscribed')
  await demand(10_000)
  await books.follow(['BTC-USD', 'ETH-USD'])
  assert.deepEqual(sent, [{ method: 'subscribe', params: { channel: 'book', symbol: ['BTC/USD'], depth: 10 } }])
  assert.equal(books.take(kraken('snapshot', BOOK, BOOK)), true)
  await waitFor(async () => (await stored())?.seq === 1, { timeout: 2000, message: 'the snapshot written' })
  const moved = { bids: [['100.0', '1.00000000'], ['99.5', '2.50000000']], asks: [['100.5', '0.30000000']] }
  books.take(kraken('update', { asks: [['100.5', '0.30000000']] }, /** @type {any} */ (moved)))
  const s = await storedWhen((b) => b.seq === 2, 'the delta written')
  assert.deepEqual([s.sync, s.bids, s.asks], [true, [['100', '1'], ['99.5', '2.5']], [['100.5', '0.3']]])
  assert.equal(books.take({ channel: 'heartbeat' }), false, 'not a book message: the quote mapping\'s')
  await books.stop()
})

test('a bad checksum: sync:false at once, the channel subscribed again, in sync with its snapshot', async () => {
  const { sent, books, stored, storedWhen, demand, metrics } = setUpBooks()
  await demand(10_000)
  await books.follow(['BTC-USD'])
  books.take(kraken('snapshot', BOOK, BOOK))
  await waitFor(async () => (await stored())?.seq === 1, { timeout: 2000, message: 'the snapshot written' })
  const bad = kraken('update', { bids: [['99.5', '0']] }, BOOK)
  books.take(bad)
  const out = await storedWhen((b) => b.sync === false, 'out of sync')
  assert.deepEqual([out.bids, out.asks], [[], []])
  await waitFor(() => sent.length === 3, { timeout: 2000, message: 'unsubscribed and subscribed again' })
  assert.deepEqual(sent.slice(1).map((m) => /** @type {any} */ (m).method), ['unsubscribe', 'subscribe'])
  books.take(kraken('update', { bids: [['99', '1.00000000']] }, BOOK))
  books.take(kraken('snapshot', BOOK, BOOK))
  const back = await storedWhen((b) => b.sync === true, 'in sync again')
  assert.deepEqual(back.bids, [['100', '1'], ['99.5', '2.5']], 'the update before the new snapshot was not applied')
  const m = await metrics.registry.getSingleMetricAsString('wsps_fetcher_stream_book_resyncs_total')
  assert.match(m, /{reason="checksum",node="test"} 1$/)
  await books.stop()
})

test('a book another writer moved is written whole again once the next claim says it is still held; one whose demand lapsed is marked out of sync', async () => {
  const { keys, books, stored, storedWhen, demand, sent } = setUpBooks()
  await demand(10_000)
  await books.follow(['BTC-USD'])
  books.take(kraken('snapshot', BOOK, BOOK))
  await waitFor(async () => (await stored())?.seq === 1, { timeout: 2000, message: 'the snapshot written' })
  // Another writer (a replica that took the symbol over, a push) moves it.
  await applyBook(db.r, keys, { symbol: 'BTC-USD', kind: 'delta', bids: [['1', '1']], asks: [], ts: Date.now() }, { ttlMs: 60_000 })
  const next = { bids: BOOK.bids, asks: /** @type {Side} */ ([['100.5', '0.20000000']]) }
  books.take(kraken('update', { asks: [['100.5', '0.20000000']] }, next))
  await waitFor(async () => (await stored())?.seq === 2, { timeout: 2000, message: 'the other write' })
  const later = { bids: BOOK.bids, asks: /** @type {Side} */ ([['100.5', '0.40000000']]) }
  books.take(kraken('update', { asks: [['100.5', '0.40000000']] }, later))
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.equal((await stored())?.seq, 2, 'nothing written over the other writer\'s book before the claim says this replica still holds it')
  await books.follow(['BTC-USD'])
  const whole = await storedWhen((b) => b.seq === 3, 'written whole')
  assert.deepEqual([whole.bids, whole.asks], [[['100', '1'], ['99.5', '2.5']], [['100.5', '0.4']]], 'the venue\'s book, not the other writer\'s level')

  await db.r.del(keys.bookDemand)
  await books.follow(['BTC-USD'])
  assert.deepEqual(sent.at(-1), { method: 'unsubscribe', params: { channel: 'book', symbol: ['BTC/USD'], depth: 10 } })
  await waitFor(async () => (await stored())?.sync === false, { timeout: 2000, message: 'nobody keeps it: out of sync' })
  assert.equal(books.take(kraken('update', {}, BOOK)), true, 'late messages of it are still the books\'')
  await books.stop()
})

test('coinbase-level2: a message number skipped on the connection puts every book of it out of sync, each subscribed again', async () => {
  const { books, keys, demand, sent } = setUpBooks('coinbase-level2')
  await demand(10_000)
  await demand(10_000, 'ETH-USD')
  await books.follow(['BTC-USD', 'ETH-USD'])
  const l2 = (/** @type {number} */ seq, /** @type {string} */ type, /** @type {string} */ product_id) => ({
    channel: 'l2_data', sequence_num: seq, events: [{ type, product_id, updates: [{ side: 'bid', price_level: '10', new_quantity: String(seq) }, { side: 'offer', price_level: '11', new_quantity: '1' }] }]
  })
  books.take({ channel: 'subscriptions', sequence_num: 0, events: [] })
  books.take(l2(1, 'snapshot', 'BTC-USD'))
  books.take(l2(2, 'snapshot', 'ETH-USD'))
  const both = () => Promise.all(['BTC-USD', 'ETH-USD'].map((s) => readBook(db.r, keys, s)))
  await waitFor(async () => (await both()).every((b) => b?.sync === true), { timeout: 2000, message: 'both in sync' })
  assert.equal(books.take({ channel: 'ticker', sequence_num: 3, events: [] }), false, 'another channel\'s message counts, and is not a book message')
  books.take(l2(5, 'update', 'BTC-USD'))
  await waitFor(async () => (await both()).every((b) => b?.sync === false), { timeout: 2000, message: 'both out of sync: message 4 was lost' })
  await waitFor(() => sent.filter((m) => /** @type {any} */ (m).type === 'subscribe').length === 3, { timeout: 2000, message: 'each subscribed again' })
  await books.stop()
})

test('a book another replica left in sync (it died) is marked out of sync as soon as this one takes it, before the venue\'s is known', async () => {
  const { keys, books, stored, storedWhen, demand } = setUpBooks()
  await applyBook(db.r, keys, { symbol: 'BTC-USD', kind: 'snapshot', bids: [['1', '1']], asks: [['2', '1']], ts: Date.now() }, { ttlMs: 60_000 })
  await demand(10_000)
  await books.follow(['BTC-USD'])
  const out = await storedWhen((b) => b.sync === false, 'the frozen book out of sync')
  assert.deepEqual([out.seq, out.bids], [2, []])
  books.take(kraken('snapshot', BOOK, BOOK))
  await storedWhen((b) => b.sync === true && b.seq === 3, 'the venue\'s book')
  await books.stop()
  assert.equal((await stored())?.sync, false, 'stopped: nobody keeps it')
})
