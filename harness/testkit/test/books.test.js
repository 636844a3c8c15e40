// Order books through the real services: the sim fetcher moves the books of
// symbols a gateway holds, the book script stores and publishes each change
// in a real redis-server, the gateway fans them out by depth, and the real
// JS client holds them, checking every checksum. Every book a client held
// is compared with the reference: the book channel as Redis published it,
// replayed, at the same seq. Then through a killed pub/sub connection (the
// gateway reads the books again) and a silent Redis link (a real Toxiproxy:
// the books go out of sync, never frozen, and come back once it heals), and
// a drained gateway (its clients hold their books again on another).

import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { OrderBook } from '@wsps/protocol/book'
import { readBook } from '@wsps/shared/books'
import { redisKeys } from '@wsps/shared/keys'
import { BookReceiver, BookVerdict } from '@wsps/protocol/book-receiver'
import { GATEWAY_MAIN, SseStream, holdBooks, setUp, sleep, startToxiproxy, useStack, waitFor } from '../src/index.js'

const SYMBOLS = ['BK1', 'BK2']
const DEPTHS = [10, 25]

/** @type {{close: () => void}[]} */
const closers = []
after(() => { for (const c of closers) c.close() })
after(() => on.toxi?.stop())
const stack = useStack()
const on = setUp(async () => {
  const toxi = await startToxiproxy()
  await stack.fetcher({ WSPS_FETCH_INTERVAL_MS: 50 })
  const proxy = await toxi.createProxy({ upstream: `127.0.0.1:${stack.redis.port}` })
  const gw = await stack.service(GATEWAY_MAIN, { WSPS_REDIS_URL: `redis://127.0.0.1:${proxy.port}`, WSPS_DRAIN_MS: 300 }, { name: 'gateway' })
  return { toxi, proxy, gw }
})

/**
 * The books as Redis published them: each symbol's channel, subscribed,
 * then the book read, then every message after it applied; the top of the
 * book at every seq kept per depth.
 */
async function reference () {
  const keys = redisKeys('wsps')
  const sub = await stack.redisClient()
  const cmd = await stack.redisClient()
  /** @type {Map<string, {book: OrderBook, seq: number, epoch: string, waiting: any[] | null}>} */
  const books = new Map()
  /** @type {Map<string, string>} `symbol depth seq` -> the window, as JSON */
  const at = new Map()
  const note = (/** @type {string} */ s) => {
    const b = /** @type {{book: OrderBook, seq: number}} */ (books.get(s))
    for (const d of DEPTHS) at.set(`${s} ${d} ${b.seq}`, JSON.stringify(b.book.top(d)))
  }
  const take = (/** @type {string} */ s, /** @type {any} */ m) => {
    const b = /** @type {{book: OrderBook, seq: number, epoch: string}} */ (books.get(s))
    if (m.seq <= b.seq && m.epoch === b.epoch) return
    assert.equal(m.seq, b.seq + 1, `${s}: the channel skipped from ${b.seq} to ${m.seq}`)
    if (m.snapshot || m.sync === false) b.book.reset(m)
    else b.book.apply(m)
    b.seq = m.seq
    b.epoch = m.epoch
    note(s)
  }
  sub.on('message', (channel, raw) => {
    const s = /** @type {string} */ (keys.bookSymbolOf(channel))
    const b = books.get(s)
    if (!b) return
    if (b.waiting) b.waiting.push(JSON.parse(raw))
    else take(s, JSON.parse(raw))
  })
  for (const s of SYMBOLS) books.set(s, { book: new OrderBook(), seq: 0, epoch: '', waiting: [] })
  await sub.subscribe(...SYMBOLS.map(keys.bookChannel))
  for (const s of SYMBOLS) {
    const b = /** @type {{book: OrderBook, seq: number, epoch: string, waiting: any[] | null}} */ (books.get(s))
    const state = /** @type {import('@wsps/shared/books').BookState} */ (await waitFor(() => readBook(cmd, keys, s), { timeout: 10_000, message: `${s}'s book in Redis` }))
    b.book.reset(state)
    b.seq = state.seq
    b.epoch = state.epoch
    note(s)
    const waiting = /** @type {any[]} */ (b.waiting)
    b.waiting = null
    for (const m of waiting) take(s, m)
  }
  return { at, seq: (/** @type {string} */ s) => books.get(s)?.seq ?? 0 }
}

/**
 * A real JS client holding every symbol's book at one depth (each must
 * have one at once), recording each book it held (symbol, seq, window).
 *
 * @param {string | string[]} url the gateways, in the order tried
 * @param {number} depth
 * @param {'auto' | 'sse'} [transport]
 */
async function holder (url, depth, transport = /** @type {'auto' | 'sse'} */ ('auto')) {
  const h = await holdBooks(url, SYMBOLS, depth, { transport })
  closers.push(h.client)
  return h
}

/**
 * @param {Awaited<ReturnType<typeof holder>>[]} holders
 * @param {Awaited<ReturnType<typeof reference>>} ref
 * @returns {number} books compared
 */
function compare (holders, ref) {
  let compared = 0
  for (const h of holders) {
    for (const e of h.held) {
      if (!e.sync) continue
      const want = ref.at.get(`${e.symbol} ${h.depth} ${e.seq}`)
      if (want === undefined) continue
      assert.equal(e.top, want, `${e.symbol} at depth ${h.depth}, seq ${e.seq}: the client's book is the book Redis published`)
      compared++
    }
  }
  return compared
}

/** @param {Awaited<ReturnType<typeof reference>>} ref @param {number} more */
async function moving (ref, more) {
  const target = SYMBOLS.map((s) => ref.seq(s) + more)
  await waitFor(() => SYMBOLS.every((s, i) => ref.seq(s) >= target[i]), { timeout: 20_000, message: `every book ${more} updates on` })
}

test('books through the real services: every book a client holds, at every depth, is the published book at its seq; through a killed pub/sub link and a silent one', async (t) => {
  const { gw, proxy } = on
  const holders = [await holder(gw.wsUrl, 10), await holder(gw.wsUrl, 25)]
  const ref = await reference()
  await moving(ref, 60)
  const clean = compare(holders, ref)
  assert.ok(clean >= 100, `books compared: ${clean}`)
  assert.deepEqual(holders.map((h) => h.client.bookResyncs), [0, 0], 'no checksum mismatch, no gap')

  // The gateway's pub/sub connection killed: it subscribes again and reads the books again.
  const r = await stack.redisClient()
  const list = String(await r.client('LIST'))
  const id = /id=(\d+) [^\n]*name=wsps-gw-sub-/.exec(list)?.[1]
  assert.ok(id, 'the gateway\'s pub/sub connection')
  await r.client('KILL', 'ID', id)
  await moving(ref, 40)
  const m = await gw.metrics()
  assert.ok((m['wsps_gateway_book_reads_total{cause="resync"}'] ?? 0) >= SYMBOLS.length, 'each book read again after the reconnect')
  const afterKill = compare(holders, ref)
  assert.ok(afterKill >= clean + 50, `books compared after the kill: ${afterKill - clean}`)

  // The link silent: the books go out of sync within 5 s, never frozen as live.
  const silentAt = Date.now()
  await proxy.silence()
  await waitFor(() => holders.every((h) => SYMBOLS.every((s) => h.client.book(s)?.sync === false)), { timeout: 8000, message: 'every book out of sync' })
  const told = Date.now() - silentAt
  t.diagnostic(`books out of sync ${told} ms after the silence began`)
  assert.ok(told <= 5000, `out of sync within 5 s (took ${told} ms)`)
  for (const h of holders) for (const s of SYMBOLS) assert.deepEqual([h.client.book(s)?.bids, h.client.book(s)?.asks], [[], []], 'nothing shown of an unknown book')
  await proxy.heal()
  await waitFor(() => holders.every((h) => SYMBOLS.every((s) => h.client.book(s)?.sync === true)), { timeout: 15_000, message: 'every book in sync again' })
  await moving(ref, 30)
  await sleep(200)
  const healed = compare(holders, ref)
  assert.ok(healed >= afterKill + 30, `books compared after the heal: ${healed - afterKill}`)
  assert.ok(((await gw.metrics()).wsps_gateway_books_unsynced_total ?? 0) >= SYMBOLS.length, 'counted')
  t.diagnostic(`books compared: ${healed}; resyncs by the clients: ${holders.map((h) => h.client.bookResyncs).join(', ')}`)
})

test('a gateway drained (SIGTERM): its book holders move to the other, are out of sync meanwhile, never frozen, and hold the published book again', async (t) => {
  const a = await stack.gateway({ WSPS_DRAIN_MS: 300 })
  const b = await stack.gateway({ WSPS_DRAIN_MS: 300 })
  const holders = [await holder([a.wsUrl, b.wsUrl], 10), await holder([a.wsUrl, b.wsUrl], 100)]
  /** @type {boolean[]} */
  const syncs = []
  holders[0].client.on('book', ({ book }) => syncs.push(book.sync))
  const ref = await reference()
  await moving(ref, 30)
  const before = compare(holders, ref)
  assert.ok(before >= 30, `books compared before the drain: ${before}`)

  const drainAt = Date.now()
  await a.stop('SIGTERM')
  await waitFor(() => holders.every((h) => h.client.status.node === b.name && SYMBOLS.every((s) => h.client.book(s)?.sync === true)), { timeout: 15_000, message: 'every holder in sync on the other gateway' })
  t.diagnostic(`every book in sync on the other gateway ${Date.now() - drainAt} ms after the SIGTERM`)
  assert.ok(syncs.includes(false), 'out of sync between the gateways, not frozen')
  await moving(ref, 30)
  await sleep(200)
  const after = compare(holders, ref)
  assert.ok(after >= before + 30, `books compared after the drain: ${after - before}`)
  assert.deepEqual(holders.map((h) => h.client.bookResyncs), [0, 0], 'no gap or checksum mismatch')
})

test('books over SSE: a stream carries the books of one depth (GET /sse?book=&bookSymbols=), checked frame by frame; a client on SSE holds the published books; bad book parameters are 400 BAD_BOOK', async (t) => {
  const gw = on.gw
  const base = gw.url
  for (const [query, named] of /** @type {[string, object][]} */ ([['book=7&bookSymbols=BK1', { book: 7 }], ['bookSymbols=BK1', {}], ['book=10', { book: 10 }], ['book=10&bookSymbols=BK1&bookMode=fast', { book: 10 }]])) {
    const bad = await SseStream.open(`${base}/sse?${query}`)
    assert.equal(bad.status, 400, query)
    assert.deepEqual({ ...JSON.parse(bad.body), message: undefined }, { op: 'error', code: 'BAD_BOOK', message: undefined, ...named }, query)
  }

  // The client first: its books are made for it (they may not be yet), then the stream and the reference.
  const sseClient = await holder(gw.wsUrl, 10, 'sse')
  assert.equal(sseClient.client.status.transport, 'sse')
  const s = await SseStream.open(`${base}/sse?book=25&bookSymbols=${SYMBOLS.join(',')}&bookMode=distinct`)
  t.after(() => s.close())
  assert.equal(s.status, 200, s.body)
  const ref = await reference()
  await moving(ref, 30)
  await sleep(200)
  const receiver = new BookReceiver()
  for (const sym of SYMBOLS) receiver.want(sym, 25)
  /** @type {Record<string, number>} */
  const verdicts = {}
  let compared = 0
  for (const e of s.events) {
    if (e.event !== 'book' && e.event !== 'levels') continue
    const v = receiver.frame(e.data)
    verdicts[v] = (verdicts[v] ?? 0) + 1
    const held = receiver.book(e.data.symbol)
    const want = ref.at.get(`${e.data.symbol} 25 ${e.data.seq}`)
    if (v === BookVerdict.APPLIED && held?.sync && want !== undefined) {
      assert.equal(JSON.stringify({ bids: held.bids, asks: held.asks }), want, `${e.data.symbol} at seq ${e.data.seq} over SSE`)
      compared++
    }
  }
  const names = s.events.map((e) => e.event)
  assert.deepEqual(names.slice(0, 3), ['hello', 'ack', 'ack'], 'hello, the quotes\' ack, the books\' ack')
  assert.deepEqual(s.events[2].data, { op: 'ack', symbols: SYMBOLS, book: 25 })
  assert.deepEqual(Object.keys(verdicts), [BookVerdict.APPLIED], `every frame applied and checked: ${JSON.stringify(verdicts)}`)
  assert.ok(compared >= 30, `books compared over the raw stream: ${compared}`)
  const viaClient = compare([sseClient], ref)
  assert.ok(viaClient >= 10, `books compared on the SSE client: ${viaClient}`)
  assert.equal(sseClient.client.bookResyncs, 0)
})
