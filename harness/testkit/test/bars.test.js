// Live bars on real processes (docs/protocol.md, Bars): a real fetcher (sim
// provider, 10 ticks a second), real Redis and two gateways. The closed 1 s
// bars every subscriber holds, on either gateway, whether it came first
// (live only) or later (backfill from history, then live), are exactly the
// bars recomputed from the symbol's history stream: no gap, no duplicate,
// the same on both pods. A delayed grant's bars never hold a tick newer
// than the delay (each bar of each frame is matched to the ticks it was
// built from, checked against the frame's arrival). Bad input gets coded
// errors, and the connection stays. Over SSE (GET /sse?bars=&barSymbols=)
// a stream carries bars by the same rules, besides its quotes, and the JS
// client that falls back to SSE holds its bar series there.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SignJWT } from 'jose'
import WebSocket from 'ws'
import { WspsClient } from '@wsps/client'
import { ErrorCode } from '@wsps/protocol'
import { redisKeys } from '@wsps/shared/keys'
import { barsOf, BarBuilder } from '@wsps/gateway/bar-builder'
import { BarReader } from '../src/bar-reader.js'
import { SseStream, TestClient, setUp, useStack, waitFor } from '../src/index.js'

const SECRET = 'hs256-secret-for-live-bars-0123456789abcdef'
const DELAY_MS = 2000
const MAX_SUBSCRIPTIONS = 8
const GATEWAY = { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET, WSPS_DELAY_MS: DELAY_MS, WSPS_MAX_SUBSCRIPTIONS: MAX_SUBSCRIPTIONS }
const keys = redisKeys('wsps')

const stack = useStack()
const on = setUp(async () => {
  // History long enough to hold every tick of the test: bars are recomputed from it.
  const fetcher = await stack.fetcher({ WSPS_FETCH_INTERVAL_MS: 100, WSPS_HISTORY_SIZE: 5000, WSPS_HISTORY_TTL_MS: 600_000 })
  const gws = [await stack.gateway(GATEWAY), await stack.gateway(GATEWAY)]
  const redis = await stack.redisClient()
  return { fetcher, gws, redis }
})

/** @type {TestClient[]} */
const clients = []
/** @type {SseStream[]} */
const streams = []
test.after(() => {
  for (const c of clients) c.ws.terminate()
  for (const s of streams) s.close()
})

/** @param {Record<string, unknown>} claims */
function token (claims) {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))
}

/**
 * A TestClient on a gateway, authenticated with these claims, that notes
 * when each frame arrived.
 *
 * @param {number} gw 0 or 1
 * @param {Record<string, unknown>} claims
 */
async function open (gw, claims) {
  const c = new TestClient(on.gws[gw].wsUrl, undefined, { token: await token(claims) })
  clients.push(c)
  /** @type {{at: number, msg: any}[]} */
  const arrivals = []
  c.ws.on('message', (data) => arrivals.push({ at: Date.now(), msg: JSON.parse(String(data)) }))
  await c.opened
  return Object.assign(c, { arrivals })
}

/**
 * The symbol's ticks as the history stream holds them, in seq order.
 *
 * @param {string} symbol
 * @returns {Promise<any[]>}
 */
async function history (symbol) {
  const entries = await on.redis.xrange(keys.history(symbol), '-', '+')
  return entries.map(([, fields]) => JSON.parse(fields[1]))
}

/**
 * Every bar of these frames that holds a tick newer than the delay when it
 * arrived, or is not made of history's ticks at all, or whose frame does
 * not say delayed. A bar is matched to the newest tick it holds: the open
 * bar after each tick of history is computed once.
 *
 * @param {{at: number, msg: any}[]} arrivals
 * @param {any[]} ticks the symbol's history
 */
function leaksOf (arrivals, ticks) {
  /** @type {Map<string, number>} */
  const built = new Map()
  const b = new BarBuilder(1000)
  ticks.forEach((t, i) => {
    b.tick(t)
    const open = JSON.stringify(b.open)
    if (!built.has(open)) built.set(open, i)
  })
  /** @type {string[]} */
  const leaks = []
  let checked = 0
  for (const { at, msg } of arrivals) {
    if (msg.op !== 'bars' && msg.op !== 'bar') continue
    if (msg.delayed !== true) leaks.push(`a ${msg.op} frame without delayed:true`)
    for (const bar of msg.op === 'bars' ? [...msg.bars, ...(msg.current ? [msg.current] : [])] : [msg.bar]) {
      const i = built.get(JSON.stringify(bar))
      checked++
      if (i === undefined) leaks.push(`bar ${bar.t} is not made of history's ticks: ${JSON.stringify(bar)}`)
      else if (!(ticks[i].ts <= at - DELAY_MS)) leaks.push(`bar ${bar.t} holds seq ${ticks[i].seq}, ${at - ticks[i].ts} ms old when sent`)
    }
  }
  return { leaks, checked }
}

/**
 * @param {TestClient} c
 * @param {string} symbol
 * @param {number} live closed bars to wait for after the backfill
 */
async function liveBars (c, symbol, live) {
  await waitFor(() => {
    const s = c.bars.series(symbol, '1s')
    return s !== undefined && s.closed.length >= s.backfilled + live
  }, { timeout: 20_000, message: `${live} live closed bars of ${symbol}` })
}

test('1 s bars: the same closed bars on both gateways, equal to those recomputed from history; backfill then live with no gap or duplicate', async () => {
  const first = await open(0, {})
  const ack = await first.subBars(['AAPL'], '1s', { backfill: 0 })
  assert.deepEqual(ack, { op: 'ack', id: ack.id, symbols: ['AAPL'], bars: '1s' })
  await liveBars(first, 'AAPL', 3)
  // Later subscribers: a new series on the other gateway (read from
  // history), and a second subscriber of the running series on the first.
  const [other, second] = [await open(1, {}), await open(0, {})]
  await Promise.all([other.subBars(['AAPL'], '1s', { backfill: 500 }), second.subBars(['AAPL'], '1s', { backfill: 500 })])
  await Promise.all([liveBars(other, 'AAPL', 3), liveBars(second, 'AAPL', 3)])
  const want = barsOf(1000, await history('AAPL')).closed
  for (const [name, c] of Object.entries({ first, other, second })) {
    assert.deepEqual(c.barProblems, [], name)
    const s = /** @type {import('../src/bar-reader.js').Series} */ (c.bars.series('AAPL', '1s'))
    const from = s.closed[0].t
    const to = /** @type {{t: number}} */ (s.closed.at(-1)).t
    assert.deepEqual(s.closed, want.filter((b) => b.t >= from && b.t <= to), `${name}: every closed bar, once, as history makes it`)
    assert.equal(s.delayed, false)
  }
  const later = /** @type {import('../src/bar-reader.js').Series} */ (other.bars.series('AAPL', '1s'))
  assert.ok(later.backfilled >= 3, 'the backfill holds the bars before the subscription')
  assert.equal(later.closed[0].t, want[0].t, 'back to the first bar history holds')
  assert.equal(later.complete, false, 'history holds fewer than the 500 bars asked for')
})

test('a delayed grant\'s bars never hold a tick newer than the delay, in the backfill or live', async () => {
  // Real-time demand first: history holds more than the delay when the
  // delayed series reads its backfill, so the backfill has ticks to leak.
  const realtime = await open(0, {})
  await realtime.sub(['MSFT'])
  await waitFor(async () => await on.redis.xlen(keys.history('MSFT')) >= 2 * DELAY_MS / 100, { timeout: 15_000, message: 'history longer than the delay' })
  const c = await open(1, { delayedSymbols: ['MSFT'] })
  const ack = await c.subBars(['MSFT'], '1s', { backfill: 50 })
  assert.deepEqual(ack, { op: 'ack', id: ack.id, symbols: ['MSFT'], bars: '1s', delayed: ['MSFT'], delayMs: DELAY_MS })
  await liveBars(c, 'MSFT', 3)
  // A late joiner's backfill (the series runs already on this gateway).
  const late = await open(1, { delayedSymbols: ['MSFT'] })
  await late.subBars(['MSFT'], '1s', { backfill: 50 })
  await liveBars(late, 'MSFT', 1)
  const { leaks, checked } = leaksOf(c.arrivals.concat(late.arrivals), await history('MSFT'))
  assert.ok(checked > 10, `${checked} bars checked`)
  assert.ok(/** @type {import('../src/bar-reader.js').Series} */ (c.bars.series('MSFT', '1s')).backfilled >= 1, 'the backfill had closed bars')
  assert.deepEqual(leaks, [])
  assert.deepEqual(c.barProblems.concat(late.barProblems), [])
})

test('a refresh that narrows real-time to delayed moves the bars: from its ack on only delayed bars, a delayed backfill first', async () => {
  const c = await open(0, { symbols: ['MSFT'] })
  await c.subBars(['MSFT'], '1s', { backfill: 10 })
  await liveBars(c, 'MSFT', 1)
  const id = 'narrow'
  c.send({ op: 'auth', token: await token({ delayedSymbols: ['MSFT'] }), id })
  await c.next((m) => m.op === 'ack' && m.id === id, { from: 0 })
  await c.next((m) => m.op === 'bars' && m.delayed === true, { from: 0 })
  await liveBars(c, 'MSFT', 2)
  // From the ack on, every bar is delayed and the delay old.
  const acked = c.arrivals.findIndex((a) => a.msg.op === 'ack' && a.msg.id === id)
  const { leaks, checked } = leaksOf(c.arrivals.slice(acked + 1), await history('MSFT'))
  assert.ok(checked > 2)
  assert.deepEqual(leaks, [])
  assert.deepEqual(c.barProblems, [])
})

test('a refresh that widens delayed to real-time moves the bars the token decided: a real-time backfill, then only real-time bars; a bars sub\'s delayed:true stays delayed', async () => {
  const c = await open(0, { delayedSymbols: ['IBM', 'TSLA'] })
  assert.deepEqual((await c.subBars(['IBM'], '1s', { backfill: 10 })).delayed, ['IBM'], 'the token decides: delayed')
  assert.deepEqual((await c.subBars(['TSLA'], '1s', { backfill: 10, delayed: true })).delayed, ['IBM', 'TSLA'], 'asked delayed')
  await liveBars(c, 'IBM', 1)
  await liveBars(c, 'TSLA', 1)
  const id = 'widen'
  c.send({ op: 'auth', token: await token({ symbols: ['IBM', 'TSLA'] }), id })
  await c.next((m) => m.op === 'ack' && m.id === id, { from: 0 })
  const acked = c.arrivals.findIndex((a) => a.msg.op === 'ack' && a.msg.id === id)
  await c.next((m) => m.op === 'bars' && m.symbol === 'IBM' && m.delayed !== true, { from: 0 })
  await liveBars(c, 'IBM', 2)
  await liveBars(c, 'TSLA', 2)
  const after = c.arrivals.slice(acked + 1).map((a) => a.msg).filter((m) => m.op === 'bars' || m.op === 'bar')
  const ibm = after.filter((m) => m.symbol === 'IBM')
  assert.equal(ibm[0].op, 'bars', 'IBM: a backfill first')
  assert.deepEqual(ibm.filter((m) => m.delayed === true), [], 'IBM: no delayed bar after the ack')
  const tsla = after.filter((m) => m.symbol === 'TSLA')
  assert.ok(tsla.length > 0 && tsla.every((m) => m.op === 'bar' && m.delayed === true), 'TSLA: the same delayed series goes on, no new backfill')
  assert.equal(c.bars.series('IBM', '1s')?.delayed, false)
  assert.equal(c.bars.series('TSLA', '1s')?.delayed, true)
  const { leaks } = leaksOf(c.arrivals.slice(acked + 1).filter((a) => a.msg.symbol === 'TSLA'), await history('TSLA'))
  assert.deepEqual(leaks, [])
  assert.deepEqual(c.barProblems, [])
})

test('the JS client: subscribeBars() holds the series from its backfill and live bars, as history makes them, delayed where the token says', async () => {
  const c = new WspsClient({ url: on.gws[1].wsUrl, WebSocket, getToken: () => token({ symbols: ['AAPL'], delayedSymbols: ['MSFT'] }) })
  test.after(() => c.close())
  /** @type {string[]} */
  const closed = []
  c.on('bar', (e) => { if (e.closed) closed.push(`${e.symbol} ${e.bar.t}`) })
  c.connect()
  assert.deepEqual(await c.subscribeBars(['AAPL', 'MSFT'], '1s', { backfill: 5 }), { ok: true })
  await waitFor(() => closed.filter((k) => k.startsWith('AAPL')).length >= 2 && closed.some((k) => k.startsWith('MSFT')), { timeout: 15_000, message: 'closed bars of both' })
  const aapl = /** @type {import('@wsps/client').BarSeries} */ (c.bars('AAPL', '1s'))
  const want = barsOf(1000, await history('AAPL')).closed
  assert.deepEqual(aapl.bars, want.filter((b) => b.t >= aapl.bars[0].t && b.t <= /** @type {{t: number}} */ (aapl.bars.at(-1)).t))
  assert.equal(aapl.bars.length, 5 + 2, 'the backfill asked for, then the live ones')
  assert.equal(aapl.delayed, false)
  assert.equal(c.bars('MSFT', '1s')?.delayed, true)
  assert.equal(c.delayMs, DELAY_MS)
})

test('quotes and bars of one symbol at once, several intervals, on one Redis subscription; unsub ends one series only', async () => {
  const c = await open(0, {})
  await c.sub(['BARQ'])
  const a1 = await c.subBars(['BARQ'], '1m', { backfill: 5 })
  const a5 = await c.subBars(['BARQ'], '5m')
  assert.deepEqual([a1.symbols, a5.symbols], [['BARQ'], ['BARQ']])
  await c.next((m) => m.op === 'bars' && m.interval === '5m', { from: 0 })
  // The bar series read the feed the quotes come from: one channel subscription, one gateway.
  assert.deepEqual(await on.redis.pubsub('NUMSUB', keys.channel('BARQ')), [keys.channel('BARQ'), 1])
  const gone = await c.unsubBars(['BARQ'], '1m')
  assert.deepEqual(gone, { op: 'ack', id: gone.id, symbols: [], bars: '1m' })
  const from = c.frames.length
  await c.next((m) => m.op === 'bar' && m.interval === '5m', { from })
  await c.next((m) => m.op === 'q', { from })
  assert.equal(c.frames.slice(from).filter((m) => m.op === 'bar' && m.interval === '1m').length, 0, 'no 1m bar after its unsub')
  assert.deepEqual(c.barProblems, [])
  assert.deepEqual(c.problems, [])
})

test('bad input: BAD_INTERVAL, BAD_BARS, DELAYED_ONLY, NOT_ENTITLED, TOO_MANY_SUBSCRIPTIONS; the connection stays', async () => {
  const claims = { symbols: ['AAPL', 'B*'], delayedSymbols: ['MSFT'] }
  const c = await open(0, claims)
  /** @type {[() => Promise<any>, string][]} */
  const cases = [
    [() => c.subBars(['AAPL'], '2m'), ErrorCode.BAD_INTERVAL],
    [() => c.unsubBars(['AAPL'], '1h'), ErrorCode.BAD_INTERVAL],
    [() => c.subBars(['AAPL'], '1m', { mode: 'distinct' }), ErrorCode.BAD_BARS],
    [() => c.subBars(['AAPL'], '1m', { maxRate: 2 }), ErrorCode.BAD_BARS],
    [() => c.subBars(['AAPL'], '1m', { since: { AAPL: { seq: 1, epoch: 'x1' } } }), ErrorCode.BAD_BARS],
    [() => c.subBars(['AAPL'], '1m', { backfill: 501 }), ErrorCode.BAD_BARS],
    [() => c.subBars(['AAPL'], '1m', { backfill: 2.5 }), ErrorCode.BAD_BARS],
    [() => c.subBars(['MSFT'], '1m', { delayed: false }), ErrorCode.DELAYED_ONLY],
    [() => c.subBars(['IBM'], '1m'), ErrorCode.NOT_ENTITLED]
  ]
  for (const [send, code] of cases) {
    const reply = await send()
    assert.equal(reply.op, 'error', code)
    assert.equal(reply.code, code)
  }
  // Each symbol and interval counts as one subscription, quotes too.
  await c.sub(['AAPL'])
  const held = await c.subBars(['B1', 'B2', 'B3', 'B4'], '5m', { backfill: 0 })
  assert.equal(held.op, 'ack')
  const more = await c.subBars(['B1', 'B2', 'B3', 'B4'], '1m', { backfill: 0 })
  assert.equal(more.code, ErrorCode.TOO_MANY_SUBSCRIPTIONS, `${1 + 4 + 4} > ${MAX_SUBSCRIPTIONS}`)
  c.send({ op: 'ping', id: 'still' })
  await c.next((m) => m.op === 'pong' && m.id === 'still')
  assert.equal(c.closed, null)
  const sse = await SseStream.open(`${on.gws[0].url}/sse?symbols=AAPL&bars=1m`, { authorization: `Bearer ${await token(claims)}` })
  assert.equal(sse.status, 400)
  assert.equal(JSON.parse(sse.body).code, ErrorCode.BAD_BARS)
})

/**
 * A GET /sse stream on gateway 0 with a token of these claims.
 *
 * @param {string} query
 * @param {Record<string, unknown>} claims
 */
async function stream (query, claims) {
  const s = await SseStream.open(`${on.gws[0].url}/sse?${query}`, { authorization: `Bearer ${await token(claims)}` })
  streams.push(s)
  return s
}

/**
 * The bar series a stream's events make, by the rules of bar-reader.js.
 *
 * @param {SseStream} s
 */
function barsRead (s) {
  const reader = new BarReader()
  for (const e of s.events) reader.read(e.data)
  return reader
}

/**
 * @param {SseStream} s
 * @param {string} symbol
 * @param {number} live closed 1 s bars to wait for after the backfill
 */
async function liveSseBars (s, symbol, live) {
  await waitFor(() => {
    const series = barsRead(s).series(symbol, '1s')
    return series !== undefined && series.closed.length >= series.backfilled + live
  }, { timeout: 20_000, message: `${live} live closed bars of ${symbol} over SSE` })
}

test('SSE: one stream carries quotes and bars: the quotes\' ack, the bars\' ack, each backfill, then live bars, as history makes them', async () => {
  const s = await stream('symbols=AAPL&bars=1s&barSymbols=AAPL,SSEB&backfill=5', {})
  assert.equal(s.status, 200, s.body)
  await liveSseBars(s, 'AAPL', 3)
  await liveSseBars(s, 'SSEB', 1)
  const names = s.events.map((e) => e.event)
  assert.equal(names[0], 'hello')
  assert.deepEqual(s.events[1].data, { op: 'ack', symbols: ['AAPL'] }, 'the quotes first')
  const acked = names.indexOf('ack', 2)
  assert.deepEqual(s.events[acked].data, { op: 'ack', symbols: ['AAPL', 'SSEB'], bars: '1s' })
  for (const symbol of ['AAPL', 'SSEB']) {
    const first = s.events.findIndex((e) => e.data.symbol === symbol && (e.event === 'bars' || e.event === 'bar'))
    assert.equal(s.events[first].event, 'bars', `${symbol}: the backfill before live bars`)
    assert.ok(first > acked, `${symbol}: after the ack`)
    assert.ok(s.events[first].data.bars.length <= 5)
  }
  assert.ok(s.quotesOf('AAPL').length >= 1, 'quotes on the same stream')
  const reader = barsRead(s)
  assert.deepEqual(reader.problems, [])
  const series = /** @type {import('../src/bar-reader.js').Series} */ (reader.series('AAPL', '1s'))
  const want = barsOf(1000, await history('AAPL')).closed
  const to = /** @type {{t: number}} */ (series.closed.at(-1)).t
  assert.deepEqual(series.closed, want.filter((b) => b.t >= series.closed[0].t && b.t <= to), 'every closed bar, once, as history makes it')
  assert.equal(series.delayed, false)
})

test('SSE: a delayed grant gets delayed bars that never hold a tick newer than the delay; barDelayed=true asks for them, the quotes stay real-time', async () => {
  // Real-time demand first: history holds more than the delay when the delayed series reads its backfill.
  await stream('symbols=MSFT', {})
  await waitFor(async () => await on.redis.xlen(keys.history('MSFT')) >= 2 * DELAY_MS / 100, { timeout: 15_000, message: 'history longer than the delay' })
  const s = await stream('bars=1s&barSymbols=MSFT&backfill=50', { delayedSymbols: ['MSFT'] })
  assert.equal(s.status, 200, s.body)
  await liveSseBars(s, 'MSFT', 3)
  assert.deepEqual(s.ofOp('ack'), [{ op: 'ack', symbols: [] }, { op: 'ack', symbols: ['MSFT'], bars: '1s', delayed: ['MSFT'], delayMs: DELAY_MS }])
  const { leaks, checked } = leaksOf(s.events.map((e) => ({ at: e.at, msg: e.data })), await history('MSFT'))
  assert.ok(checked > 3, `${checked} bars checked`)
  assert.deepEqual(leaks, [])
  assert.deepEqual(barsRead(s).problems, [])

  const asked = await stream('symbols=MSFT&bars=1s&barSymbols=MSFT&barDelayed=true', {})
  assert.equal(asked.status, 200, asked.body)
  await asked.next((e) => e.event === 'bars')
  assert.deepEqual(asked.ofOp('ack')[1], { op: 'ack', symbols: ['MSFT'], bars: '1s', delayed: ['MSFT'], delayMs: DELAY_MS })
  assert.equal(asked.ofOp('bars')[0].delayed, true)
  await waitFor(() => asked.quotesOf('MSFT').length >= 1, { message: 'a quote of MSFT' })
  assert.ok(asked.quotesOf('MSFT').every((q) => q.delayed === undefined), 'quotes real-time as the token grants')
})

test('SSE: bad bars are refused with the codes of a bars sub, 400 or 403, naming the interval', async () => {
  const claims = { symbols: ['AAPL', 'B*'], delayedSymbols: ['MSFT'] }
  /** @type {[string, number, string, (string[] | undefined)?][]} */
  const cases = [
    ['bars=2m&barSymbols=AAPL', 400, ErrorCode.BAD_INTERVAL],
    ['symbols=AAPL&bars=1m', 400, ErrorCode.BAD_BARS],
    ['barSymbols=AAPL', 400, ErrorCode.BAD_BARS],
    ['bars=1m&barSymbols=AAPL&backfill=501', 400, ErrorCode.BAD_BARS],
    ['bars=1m&barSymbols=aapl', 400, ErrorCode.BAD_SYMBOL, ['aapl']],
    ['bars=1m&barSymbols=MSFT&barDelayed=false', 403, ErrorCode.DELAYED_ONLY, ['MSFT']],
    ['symbols=AAPL&bars=1m&barSymbols=AAPL,IBM', 403, ErrorCode.NOT_ENTITLED, ['IBM']],
    [`symbols=AAPL,B1,B2,B3&bars=1m&barSymbols=${['B4', 'B5', 'B6', 'B7', 'B8'].join(',')}`, 400, ErrorCode.TOO_MANY_SUBSCRIPTIONS]
  ]
  for (const [query, status, code, symbols] of cases) {
    const s = await stream(query, claims)
    assert.equal(s.status, status, query)
    const body = JSON.parse(s.body)
    assert.equal(body.code, code, query)
    assert.equal(body.bars, query.includes('bars=') ? query.match(/bars=(\w+)/)?.[1] : undefined, `${query}: names the interval`)
    if (symbols) assert.deepEqual(body.symbols, symbols, query)
  }
  // A refusal of the quotes does not name an interval.
  const quotes = await stream('symbols=IBM&bars=1m&barSymbols=AAPL', claims)
  assert.equal(quotes.status, 403)
  assert.deepEqual(JSON.parse(quotes.body), { op: 'error', code: ErrorCode.NOT_ENTITLED, message: 'token does not grant these symbols', symbols: ['IBM'] })
})

/**
 * What a client call resolves to, failing the test (not hanging it) when it does not.
 *
 * @template T
 * @param {Promise<T>} promise
 * @returns {Promise<T>}
 */
async function settled (promise) {
  /** @type {{value: T} | null} */
  let done = null
  promise.then((value) => { done = { value } })
  await waitFor(() => done !== null, { timeout: 15_000, message: 'the call to resolve' })
  return /** @type {{value: T}} */ (/** @type {unknown} */ (done)).value
}

test('the JS client that falls back to SSE holds its bar series there: backfill, live bars as history makes them, delayed where the token says; a refused series leaves, the rest go on', async () => {
  // What a proxy that strips upgrades looks like from the client: the socket closes without opening.
  class StrippedWebSocket {
    readyState = 0
    /** @type {any} */ onopen = null
    /** @type {any} */ onmessage = null
    /** @type {any} */ onclose = null
    /** @type {any} */ onerror = null
    constructor () { setTimeout(() => this.onclose?.({ code: 1006, reason: '' }), 5) }
    send () {}
    close () {}
  }
  const c = new WspsClient({ url: on.gws[1].wsUrl, WebSocket: StrippedWebSocket, initialBackoffMs: 100, symbols: ['AAPL'], getToken: () => token({ symbols: ['AAPL'], delayedSymbols: ['MSFT'] }) })
  test.after(() => c.close())
  /** @type {string[]} */
  const closed = []
  c.on('bar', (e) => { if (e.closed) closed.push(`${e.symbol} ${e.bar.t}`) })
  c.connect()
  assert.deepEqual(await settled(c.subscribeBars(['AAPL', 'MSFT'], '1s', { backfill: 5 })), { ok: true })
  assert.equal(c.status.transport, 'sse')
  await waitFor(() => closed.filter((k) => k.startsWith('AAPL')).length >= 2 && closed.some((k) => k.startsWith('MSFT')), { timeout: 15_000, message: 'closed bars of both over SSE' })
  const aapl = /** @type {import('@wsps/client').BarSeries} */ (c.bars('AAPL', '1s'))
  const want = barsOf(1000, await history('AAPL')).closed
  assert.deepEqual(aapl.bars, want.filter((b) => b.t >= aapl.bars[0].t && b.t <= /** @type {{t: number}} */ (aapl.bars.at(-1)).t))
  assert.ok(aapl.bars.length >= 5 + 2, 'the backfill asked for, then the live ones')
  assert.equal(aapl.delayed, false)
  assert.equal(c.bars('MSFT', '1s')?.delayed, true)
  assert.ok(c.quote('AAPL') !== undefined, 'the quotes on the same stream')
  // Not granted: the stream is refused for it, and reopened without it.
  const refused = await settled(c.subscribeBars(['IBM'], '1s'))
  assert.equal(!refused.ok && refused.error.code, ErrorCode.NOT_ENTITLED)
  assert.deepEqual(!refused.ok && [refused.error.bars, refused.error.symbols], ['1s', ['IBM']], 'the refusal names the interval')
  const since = closed.length
  await waitFor(() => closed.slice(since).some((k) => k.startsWith('AAPL')), { timeout: 15_000, message: 'AAPL bars after the refusal' })
  assert.equal(c.bars('IBM', '1s'), undefined)
  assert.equal(c.status.transport, 'sse')
})
