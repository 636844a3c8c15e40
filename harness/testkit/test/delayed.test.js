// Delayed grants on real processes (docs/protocol.md, "Delayed grants"): a
// token's delayed claim gets the same protocol with quotes as they were
// WSPS_DELAY_MS ago, marked `"delayed":true`, and no path hands it a newer
// one: WebSocket snap and q (merge, distinct, maxRate, batched frames), SSE,
// recovery with `since`, a refresh that narrows real-time to delayed (and
// one that widens what the token decided back to real-time, not what a
// `sub` asked delayed for), a gateway that starts after the quotes were
// published (the delay is served from Redis history, not from a gateway's
// memory), a Redis Cluster, and the JS client. Bad input gets coded errors (DELAYED_ONLY, BAD_GRANT).
//
// Every quote of a delayed symbol is checked as it arrives, by its `ts`
// against this process's clock (the gateways run on the same machine):
// `ts <= arrival - DELAY_MS`, and `delayed: true` on it.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { SignJWT } from 'jose'
import WebSocket from 'ws'
import { WspsClient } from '@wsps/client'
import { CloseCode, ErrorCode } from '@wsps/protocol'
import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { SseStream, TestClient, startFetcher, startGateway, startRedis, startRedisCluster, useStack, waitFor } from '../src/index.js'

const SECRET = 'hs256-secret-for-delayed-grants-0123456789'
const DELAY_MS = 2000
// A batch window longer than the fetch interval and the pump's tick: frames mix
// delayed and real-time quotes (batching is one of the paths checked).
const GATEWAY = { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET, WSPS_DELAY_MS: DELAY_MS, WSPS_BATCH_MS: 250 }

const stack = useStack()
/** @type {import('../src/index.js').ServiceHandle} */
let gw
/** @type {TestClient[]} */
const clients = []
/** @type {SseStream[]} */
const streams = []

before(async () => {
  ;[gw] = await Promise.all([stack.gateway(GATEWAY), stack.fetcher({ WSPS_FETCH_INTERVAL_MS: 100 })])
})
after(() => {
  for (const c of clients) c.ws.terminate()
  for (const s of streams) s.close()
})

/**
 * @param {Record<string, unknown>} claims
 * @param {number | string} [exp]
 */
function token (claims, exp = '1h') {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(exp).sign(new TextEncoder().encode(SECRET))
}

/**
 * The check every delayed quote must pass, wherever it came from.
 *
 * @param {any} q a quote or delta
 * @param {number} at when it arrived
 * @returns {string | null} what is wrong with it
 */
function notDelayed (q, at) {
  if (q.delayed !== true) return `${q.symbol} seq ${q.seq} without delayed:true`
  if (!(q.ts <= at - DELAY_MS)) return `${q.symbol} seq ${q.seq} is ${at - q.ts} ms old, less than ${DELAY_MS}`
  return null
}

/**
 * A TestClient whose every quote of a delayed symbol is checked as it
 * arrives (leaks), and whose real-time quotes must not say delayed.
 *
 * @param {Record<string, unknown>} claims
 * @param {{url?: string, delayed: (symbol: string) => boolean}} options
 */
async function open (claims, { url = gw.wsUrl, delayed }) {
  const c = new TestClient(url, undefined, { token: await token(claims) })
  clients.push(c)
  const leaks = checkQuotes(c, (q, at) => delayed(q.symbol)
    ? notDelayed(q, at)
    : 'delayed' in q ? `real-time ${q.symbol} seq ${q.seq} says delayed` : null)
  await c.opened
  return { c, leaks }
}

/**
 * Checks every quote of a snap or q frame c receives as it arrives (with
 * `afterAck`, only those from the ack of that id on).
 *
 * @param {TestClient} c
 * @param {(q: any, at: number) => string | null} check what is wrong with a quote that arrived at `at`
 * @param {string} [afterAck]
 * @returns {string[]} the leaks, `op: what is wrong`, filled as frames arrive
 */
function checkQuotes (c, check, afterAck) {
  /** @type {string[]} */
  const leaks = []
  let checking = afterAck === undefined
  c.ws.on('message', (data) => {
    const at = Date.now()
    const msg = JSON.parse(String(data))
    if (msg.op === 'ack' && msg.id === afterAck) checking = true
    if (!checking || (msg.op !== 'snap' && msg.op !== 'q')) return
    for (const q of msg.quotes) {
      const bad = check(q, at)
      if (bad) leaks.push(`${msg.op}: ${bad}`)
    }
  })
  return leaks
}

test('WebSocket merge: the snapshot and every delta of a delayed grant are at least the delay old and say delayed; real-time ones beside them do not', async () => {
  const { c, leaks } = await open({ symbols: ['MSFT'], delayedSymbols: ['AAPL', 'NV*'] }, { delayed: (s) => s !== 'MSFT' })
  const ack = await c.sub(['AAPL', 'MSFT', 'NVDA'])
  assert.equal(ack.op, 'ack')
  assert.deepEqual(ack.delayed, ['AAPL', 'NVDA'])
  assert.equal(ack.delayMs, DELAY_MS)
  await c.waitQuotes('AAPL', 10)
  await c.waitQuotes('NVDA', 10)
  await c.waitQuotes('MSFT', 10)
  assert.deepEqual(leaks, [])
  assert.deepEqual(c.problems, [], 'deltas continue the delayed quotes (none taken against a real-time base)')
  assert.ok(c.frames.some((f) => f.op === 'q' && f.quotes.length > 1 && f.quotes.some((q) => q.delayed) && f.quotes.some((q) => !q.delayed)),
    'batched frames mix delayed and real-time quotes, each marked as it is')
  c.ws.terminate()
})

test('WebSocket distinct and maxRate: every delayed tick in seq order, and rate-limited merges, all delayed', async () => {
  const { c, leaks } = await open({ delayedSymbols: ['*'] }, { delayed: () => true })
  assert.equal((await c.sub(['AAPL'], { mode: 'distinct' })).op, 'ack')
  assert.equal((await c.sub(['TSLA'], { maxRate: 2 })).op, 'ack')
  await c.waitQuotes('AAPL', 20)
  await c.waitQuotes('TSLA', 4)
  const seqs = /** @type {number[]} */ (c.seqs.get('AAPL'))
  for (let i = 1; i < seqs.length; i++) assert.equal(seqs[i], seqs[i - 1] + 1, 'distinct: every tick, in order')
  assert.deepEqual(leaks, [])
  assert.deepEqual(c.problems, [])
  c.ws.terminate()
})

test('a delayed grant asking for real-time gets DELAYED_ONLY; a claim of the wrong shape gets BAD_GRANT and a 4001 close', async () => {
  const { c } = await open({ symbols: ['MSFT'], delayedSymbols: ['AAPL'] }, { delayed: (s) => s === 'AAPL' })
  const refused = await c.sub(['AAPL', 'MSFT'], { delayed: false })
  assert.equal(refused.code, ErrorCode.DELAYED_ONLY)
  assert.deepEqual(refused.symbols, ['AAPL'])
  assert.equal((await c.sub(['MSFT'], { delayed: false })).op, 'ack', 'real-time where the token grants it')
  assert.equal((await c.sub(['AAPL'], { delayed: 'yes' })).code, ErrorCode.BAD_REQUEST)
  c.ws.terminate()

  for (const claim of ['AAPL', { AAPL: true }, ['AAPL', 7]]) {
    const bad = new TestClient(gw.wsUrl, undefined, { token: await token({ delayedSymbols: claim }) })
    clients.push(bad)
    bad.opened.catch(() => {})
    const { code } = await bad.closedPromise
    assert.equal(code, CloseCode.UNAUTHORIZED)
    assert.equal(bad.frames.find((f) => f.op === 'error')?.code, ErrorCode.BAD_GRANT, `claim ${JSON.stringify(claim)}`)
  }
  const s = await SseStream.open(`${gw.url}/sse?symbols=AAPL`, { authorization: `Bearer ${await token({ delayedSymbols: 'AAPL' })}` })
  assert.equal(s.status, 401)
  assert.equal(JSON.parse(s.body).code, ErrorCode.BAD_GRANT)
  const rt = await SseStream.open(`${gw.url}/sse?symbols=AAPL,MSFT&delayed=false`, { authorization: `Bearer ${await token({ symbols: ['MSFT'], delayedSymbols: ['AAPL'] })}` })
  assert.equal(rt.status, 403)
  assert.deepEqual(JSON.parse(rt.body), { op: 'error', code: ErrorCode.DELAYED_ONLY, message: 'the token grants these symbols delayed only', symbols: ['AAPL'] })
  const odd = await SseStream.open(`${gw.url}/sse?symbols=AAPL&delayed=maybe`, { authorization: `Bearer ${await token({ delayedSymbols: ['AAPL'] })}` })
  assert.equal(odd.status, 400)
  assert.equal(JSON.parse(odd.body).code, ErrorCode.BAD_REQUEST)
})

test('SSE: the snapshot and events of a delayed grant are delayed', async () => {
  const s = await SseStream.open(`${gw.url}/sse?symbols=AAPL,MSFT&mode=distinct`, { authorization: `Bearer ${await token({ symbols: ['MSFT'], delayedSymbols: ['AAPL'] })}` })
  streams.push(s)
  assert.equal(s.status, 200)
  await waitFor(() => s.quotesOf('AAPL').length >= 10 && s.quotesOf('MSFT').length >= 10, { message: 'quotes of both' })
  /** @type {string[]} */
  const leaks = []
  for (const ev of s.events) {
    if (ev.event !== 'snap' && ev.event !== 'q') continue
    for (const q of ev.data.quotes) {
      const bad = q.symbol === 'AAPL' ? notDelayed(q, ev.at) : q.delayed ? `real-time ${q.symbol} says delayed` : null
      if (bad) leaks.push(bad)
    }
  }
  assert.deepEqual(leaks, [])
  assert.deepEqual(s.events.find((e) => e.event === 'ack')?.data.delayed, ['AAPL'])
  s.close()
})

test('recovery: since replays the delayed timeline; a since ahead of the delayed head gets a delayed snap, recovered:false', async () => {
  const first = await open({ delayedSymbols: ['AAPL'] }, { delayed: () => true })
  assert.equal((await first.c.sub(['AAPL'], { mode: 'distinct' })).op, 'ack')
  await first.c.waitQuotes('AAPL', 5)
  const cursor = /** @type {{seq: number, epoch: string}} */ (first.c.receiver.cursor('AAPL'))
  first.c.ws.terminate()
  // Ticks pass meanwhile; the resumed sub gets them from the delayed
  // timeline, then the live delayed ticks.
  await new Promise((resolve) => setTimeout(resolve, 500))
  const again = await open({ delayedSymbols: ['AAPL'] }, { delayed: () => true })
  again.c.receiver.snap({ symbol: 'AAPL', seq: cursor.seq, epoch: cursor.epoch })
  again.c.subscribed.add('AAPL')
  again.c.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: cursor }, id: 'r' })
  const ack = await again.c.next((m) => m.id === 'r')
  assert.deepEqual(ack.recovered, { AAPL: true })
  await again.c.waitQuotes('AAPL', 10)
  assert.equal(again.c.seqs.get('AAPL')?.[0], cursor.seq + 1, 'the replay continues the cursor')
  assert.deepEqual(again.leaks, [])
  assert.deepEqual(again.c.problems, [])

  // A real-time client's cursor is ahead of the delayed head.
  const rt = await open({ symbols: ['AAPL'] }, { delayed: () => false })
  assert.equal((await rt.c.sub(['AAPL'])).op, 'ack')
  await rt.c.waitQuotes('AAPL', 1)
  const ahead = /** @type {{seq: number, epoch: string}} */ (rt.c.receiver.cursor('AAPL'))
  rt.c.ws.terminate()
  for (const mode of ['distinct', 'merge']) {
    const late = await open({ delayedSymbols: ['AAPL'] }, { delayed: () => true })
    late.c.subscribed.add('AAPL')
    late.c.send({ op: 'sub', symbols: ['AAPL'], mode, since: { AAPL: ahead }, id: 'x' })
    const lateAck = await late.c.next((m) => m.id === 'x')
    assert.deepEqual(lateAck.recovered, { AAPL: false }, mode)
    const snap = await late.c.next((m) => m.op === 'snap', { from: 0 })
    assert.equal(snap.recovered, false)
    assert.ok(snap.quotes[0].seq < ahead.seq, 'the snapshot is the delayed head, behind the cursor')
    await late.c.waitQuotes('AAPL', 3)
    assert.deepEqual(late.leaks, [], mode)
    late.c.ws.terminate()
  }
})

test('a refresh that narrows real-time to delayed switches live subscriptions with no real-time frame after its ack', async () => {
  const c = new TestClient(gw.wsUrl, undefined, { token: await token({ symbols: ['AAPL', 'MSFT'] }) })
  clients.push(c)
  const leaks = checkQuotes(c, (q, at) => q.symbol === 'AAPL' ? notDelayed(q, at) : null, 'refresh')
  await c.opened
  assert.equal((await c.sub(['AAPL'])).op, 'ack')
  assert.equal((await c.sub(['MSFT'], { mode: 'distinct' })).op, 'ack')
  await c.waitQuotes('AAPL', 5)
  await c.waitQuotes('MSFT', 5)
  const from = c.frames.length
  c.send({ op: 'auth', token: await token({ symbols: ['MSFT'], delayedSymbols: ['AAPL'] }), id: 'refresh' })
  const ack = await c.next((m) => m.id === 'refresh', { from })
  assert.equal(ack.op, 'ack')
  assert.deepEqual(ack.delayed, ['AAPL'])
  assert.deepEqual(ack.symbols, ['AAPL', 'MSFT'], 'nothing unsubscribed')
  const n = c.seqs.get('AAPL')?.length ?? 0
  await c.waitQuotes('AAPL', n + 10)
  assert.deepEqual(leaks, [])
  assert.deepEqual(c.problems, [], 'the delayed snapshot replaces the real-time quote; deltas continue it')
  // A distinct symbol narrowed too keeps its mode on the delayed timeline.
  c.send({ op: 'auth', token: await token({ delayedSymbols: ['AAPL', 'MSFT'] }), id: 'refresh2' })
  await c.next((m) => m.id === 'refresh2')
  const m = c.seqs.get('MSFT')?.length ?? 0
  await c.waitQuotes('MSFT', m + 10)
  const msft = c.frames.slice(from).filter((f) => f.op === 'snap' && f.quotes.some((/** @type {any} */ q) => q.symbol === 'MSFT' && q.delayed))
  assert.equal(msft.length, 1, 'one delayed snapshot of MSFT')
  assert.deepEqual(c.problems, [])
  c.ws.terminate()
})

/**
 * The seqs of a symbol's quotes in the frames from index `from` on.
 *
 * @param {TestClient} c
 * @param {string} symbol
 * @param {number} from
 * @returns {{op: string, seq: number, delayed: boolean}[]}
 */
function quotesOf (c, symbol, from) {
  return c.frames.slice(from).flatMap((f) => f.op === 'snap' || f.op === 'q'
    ? f.quotes.filter((/** @type {any} */ q) => q.symbol === symbol).map((/** @type {any} */ q) => ({ op: f.op, seq: q.seq, delayed: q.delayed === true }))
    : [])
}

test('a refresh that widens delayed to real-time moves what the token decided before its ack, a real-time snap first; a sub\'s delayed:true stays delayed', async () => {
  const all = ['AAPL', 'TSLA', 'NVDA']
  const c = new TestClient(gw.wsUrl, undefined, { token: await token({ delayedSymbols: all }) })
  clients.push(c)
  // From the refresh's ack on: AAPL and NVDA real-time only, TSLA delayed only.
  const leaks = checkQuotes(c, (q, at) => q.symbol === 'TSLA'
    ? notDelayed(q, at)
    : 'delayed' in q ? `${q.symbol} seq ${q.seq} says delayed after the refresh` : null, 'widen')
  await c.opened
  assert.deepEqual((await c.sub(['AAPL'])).delayed, ['AAPL'], 'the token decides: delayed')
  assert.deepEqual((await c.sub(['TSLA'], { delayed: true })).delayed, ['AAPL', 'TSLA'], 'asked delayed')
  // Asked delayed first, then named again without `delayed`: the token decides now.
  await c.sub(['NVDA'], { delayed: true })
  assert.deepEqual((await c.sub(['NVDA'])).delayed, all, 'still delayed: the token grants nothing else')
  for (const s of all) await c.waitQuotes(s, 3)
  const from = c.frames.length
  /** @type {Record<string, number>} the last delayed seq of each before the refresh */
  const last = {}
  for (const s of all) last[s] = /** @type {number} */ (c.seqs.get(s)?.at(-1))
  c.send({ op: 'auth', token: await token({ symbols: all }), id: 'widen' })
  const ack = await c.next((m) => m.id === 'widen', { from })
  assert.equal(ack.op, 'ack')
  assert.deepEqual(ack.symbols, all, 'nothing unsubscribed')
  assert.deepEqual(ack.delayed, ['TSLA'], 'only what a sub asked delayed stays delayed')
  assert.equal(ack.delayMs, DELAY_MS)
  const acked = c.frames.indexOf(ack)
  for (const s of ['AAPL', 'NVDA']) {
    await c.next((m) => m.op === 'snap' && m.quotes.some((/** @type {any} */ q) => q.symbol === s), { from: acked })
    const [snap] = quotesOf(c, s, acked)
    assert.equal(snap.op, 'snap', `${s}: a snapshot first`)
    assert.equal(snap.delayed, false, `${s}: a real-time snapshot`)
    assert.ok(snap.seq > last[s], `${s}: the real-time head (seq ${snap.seq}) is ahead of the delayed one (${last[s]})`)
    await c.waitQuotes(s, (c.seqs.get(s)?.length ?? 0) + 5)
  }
  await c.waitQuotes('TSLA', (c.seqs.get('TSLA')?.length ?? 0) + 5)
  assert.ok(!c.frames.slice(acked).some((f) => f.op === 'snap' && f.quotes.some((/** @type {any} */ q) => q.symbol === 'TSLA')), 'TSLA stayed where it was: no snapshot')
  assert.deepEqual(leaks, [])
  assert.deepEqual(c.problems, [], 'the real-time snapshot replaces the delayed quote; deltas continue it')
  c.ws.terminate()
})

test('a refresh that widens a distinct subscription narrowed by an earlier refresh: its seqs after the ack come from the real-time timeline, every tick', async () => {
  const c = new TestClient(gw.wsUrl, undefined, { token: await token({ symbols: ['AMZN'] }) })
  clients.push(c)
  await c.opened
  assert.equal((await c.sub(['AMZN'], { mode: 'distinct' })).op, 'ack')
  await c.waitQuotes('AMZN', 3)
  const narrowing = c.frames.length
  c.send({ op: 'auth', token: await token({ delayedSymbols: ['AMZN'] }), id: 'narrow' })
  assert.deepEqual((await c.next((m) => m.id === 'narrow', { from: narrowing })).delayed, ['AMZN'])
  await c.next((m) => m.op === 'snap' && m.quotes[0].delayed === true, { from: narrowing })
  await c.waitQuotes('AMZN', (c.seqs.get('AMZN')?.length ?? 0) + 3)
  const lastDelayed = /** @type {number} */ (c.seqs.get('AMZN')?.at(-1))
  const from = c.frames.length
  c.send({ op: 'auth', token: await token({ symbols: ['AMZN'] }), id: 'widen' })
  const ack = await c.next((m) => m.id === 'widen', { from })
  assert.equal(ack.op, 'ack')
  assert.equal(ack.delayed, undefined, 'nothing is served delayed any more')
  const acked = c.frames.indexOf(ack)
  await waitFor(() => quotesOf(c, 'AMZN', acked).length >= 10, { message: 'ten AMZN quotes after the refresh' })
  const after = quotesOf(c, 'AMZN', acked)
  assert.equal(after[0].op, 'snap', 'a fresh snapshot first (the seq jumps forward)')
  assert.ok(after[0].seq > lastDelayed, `the real-time head (seq ${after[0].seq}) is ahead of the delayed one (${lastDelayed})`)
  assert.deepEqual(after.filter((q) => q.delayed), [], 'nothing delayed after the ack')
  for (let i = 1; i < after.length; i++) assert.equal(after[i].seq, after[i - 1].seq + 1, 'distinct: every real-time tick, in order, from the snapshot on')
  assert.deepEqual(c.problems, [])
  c.ws.terminate()
})

test('the delay is served from Redis: a gateway started after the quotes were published has the delayed snapshot at once', async () => {
  const warm = await open({ delayedSymbols: ['IBM'] }, { delayed: () => true })
  assert.equal((await warm.c.sub(['IBM'])).op, 'ack')
  await warm.c.waitQuotes('IBM', 3)
  const fresh = await stack.gateway(GATEWAY)
  const late = await open({ delayedSymbols: ['IBM'] }, { url: fresh.wsUrl, delayed: () => true })
  const at = Date.now()
  assert.equal((await late.c.sub(['IBM'])).op, 'ack')
  const snap = await late.c.next((m) => m.op === 'snap', { from: 0 })
  const q = snap.quotes[0]
  assert.equal(notDelayed(q, Date.now()), null)
  assert.ok(q.ts >= at - DELAY_MS - 3000, `the quote as it was the delay ago (${at - q.ts} ms old), not an older one`)
  await late.c.waitQuotes('IBM', 5)
  assert.deepEqual(late.leaks, [])
  assert.deepEqual(warm.leaks, [])
  const m = await fresh.metrics()
  assert.ok(m.wsps_gateway_delayed_subscriptions >= 1)
  await fresh.stop()
})

test('history pins: fetchers keeping far less history than the delay still serve every delayed tick (the gateway pins what it needs)', async () => {
  const redis = await startRedis()
  // Trimming drops whole stream nodes: small nodes make WSPS_HISTORY_SIZE
  // 5 keep 5 to 10 entries, under 1 s at 10 quotes/s, against a 2 s delay.
  const admin = new Redis(redis.url)
  await admin.config('SET', 'stream-node-max-entries', '5')
  const procs = await Promise.all([startGateway(redis.url, GATEWAY), startFetcher(redis.url, { WSPS_FETCH_INTERVAL_MS: 100, WSPS_HISTORY_SIZE: 5 })])
  try {
    const { c, leaks } = await open({ delayedSymbols: ['PIN*'] }, { url: procs[0].wsUrl, delayed: () => true })
    assert.equal((await c.sub(['PIN1'], { mode: 'distinct' })).op, 'ack')
    await c.waitQuotes('PIN1', 40)
    const seqs = /** @type {number[]} */ (c.seqs.get('PIN1'))
    for (let i = 1; i < seqs.length; i++) assert.equal(seqs[i], seqs[i - 1] + 1, 'every delayed tick, in order')
    assert.deepEqual(leaks, [])
    assert.deepEqual(c.problems, [])
    assert.ok(!c.frames.some((f) => f.recovered === false), 'no snapshot over a hole')
    assert.equal((await procs[0].metrics()).wsps_gateway_delayed_holes_total ?? 0, 0)
    const kept = await admin.xlen(redisKeys('wsps').history('PIN1'))
    assert.ok(kept >= 20, `the pinned history holds the delay (${kept} entries, 2 s at 10/s)`)
    c.ws.terminate()
  } finally {
    admin.disconnect()
    await Promise.all(procs.map((p) => p.stop()))
    await redis.close()
  }
})

test('the JS client (WebSocket and SSE) tells delayed quotes by quote.delayed and the event\'s delayed', async () => {
  for (const transport of /** @type {const} */ (['websocket', 'sse'])) {
    const c = new WspsClient({ url: gw.wsUrl, WebSocket, transport, getToken: () => token({ symbols: ['MSFT'], delayedSymbols: ['AAPL'] }), symbols: ['AAPL', 'MSFT'] })
    /** @type {string[]} */
    const wrong = []
    const seen = { AAPL: 0, MSFT: 0 }
    c.on('quote', (e) => {
      const delayed = e.symbol === 'AAPL'
      if (e.delayed !== delayed || (e.quote.delayed === true) !== delayed) wrong.push(`${transport} ${e.symbol} seq ${e.quote.seq} delayed ${e.delayed}`)
      if (delayed && !(e.latencyMs >= DELAY_MS)) wrong.push(`${transport} ${e.symbol} seq ${e.quote.seq} only ${e.latencyMs} ms old`)
      seen[/** @type {'AAPL' | 'MSFT'} */ (e.symbol)]++
    })
    c.connect()
    try {
      await waitFor(() => seen.AAPL >= 5 && seen.MSFT >= 5, { message: `${transport}: quotes of both` })
      assert.deepEqual(wrong, [])
      assert.equal(c.delayMs, DELAY_MS)
    } finally {
      c.close()
    }
  }
})

test('the JS client: a refresh that widens the grant makes isDelayed() false from its ack on, on the same connection, and the quotes after it real-time', async () => {
  let tokens = 0
  // The first token is short: the client refreshes it at 3/4 of its life.
  const getToken = () => tokens++ === 0 ? token({ delayedSymbols: ['AAPL'] }, '5s') : token({ symbols: ['AAPL'] })
  const c = new WspsClient({ url: gw.wsUrl, WebSocket, getToken, symbols: ['AAPL'] })
  /** @type {string[]} */
  const states = []
  c.on('status', (s) => states.push(s.state))
  /** @type {string[][]} */
  const changes = []
  c.on('delayed', (e) => changes.push(e.symbols))
  let widened = false
  let after = 0
  /** @type {string[]} */
  const wrong = []
  c.on('quote', (e) => {
    if (!widened) return
    after++
    if (e.delayed || 'delayed' in e.quote) wrong.push(`seq ${e.quote.seq} delayed after the refresh`)
  })
  c.on('delayed', (e) => { if (tokens > 1 && !e.symbols.includes('AAPL')) widened = true })
  c.connect()
  try {
    await waitFor(() => c.isDelayed('AAPL'), { message: 'AAPL delayed' })
    await waitFor(() => widened, { timeout: 10_000, message: 'the refresh\'s ack says AAPL is real-time' })
    assert.equal(c.isDelayed('AAPL'), false)
    await waitFor(() => after >= 5, { message: 'quotes after the refresh' })
    assert.deepEqual(wrong, [])
    assert.deepEqual(changes, [['AAPL'], []])
    assert.deepEqual(states.filter((s) => s !== 'live' && s !== 'connecting'), [], 'refreshed on the same connection')
  } finally {
    c.close()
  }
})

test('on a Redis Cluster: each symbol\'s history is read on the shard that owns it, delayed the same way', async () => {
  const cluster = await startRedisCluster()
  const env = { WSPS_REDIS_MODE: 'cluster' }
  const procs = await Promise.all([startGateway(cluster.url, { ...GATEWAY, ...env }), startFetcher(cluster.url, { ...env, WSPS_FETCH_INTERVAL_MS: 100 })])
  try {
    // Enough symbols that every shard owns some.
    const symbols = Array.from({ length: 9 }, (_, i) => `DL${i}`)
    const { c, leaks } = await open({ delayedSymbols: ['DL*'] }, { url: procs[0].wsUrl, delayed: () => true })
    assert.equal((await c.sub(symbols, { mode: 'distinct' })).op, 'ack')
    for (const s of symbols) await c.waitQuotes(s, 5)
    assert.deepEqual(leaks, [])
    assert.deepEqual(c.problems, [])
    c.ws.terminate()
  } finally {
    await Promise.all(procs.map((p) => p.stop()))
    await cluster.close()
  }
})
