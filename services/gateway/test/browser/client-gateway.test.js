// WspsClient in Node against real gateways (testkit: own redis, fetcher and
// gateways on free ports): streaming, unsubscribe, error codes, failover on
// a drain, a frozen gateway, and a real stream with a frame taken out.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setUp, useStack, waitFor } from '@wsps/testkit'
import { filteringProxy, recordingWebSocket, scripted } from './stack.js'

/** Every gateway here: small enough for the test of the subscription limit. */
const GATEWAY_ENV = { WSPS_MAX_SUBSCRIPTIONS: 4 }
// Before the stack: clients and proxies close before the gateways.
const { client, atEnd } = scripted({ initialBackoffMs: 100, restartJitterMs: 100 })
const stack = useStack()
const on = setUp(async () => {
  await stack.fetcher()
  return { gw: await stack.gateway(GATEWAY_ENV) }
})


/**
 * Quote events per symbol, in arrival order.
 * @param {import('@wsps/client').WspsClient} c
 */
function collect (c) {
  /** @type {Map<string, import('@wsps/client').QuoteEvent[]>} */
  const bySymbol = new Map()
  c.on('quote', (e) => {
    if (!bySymbol.has(e.symbol)) bySymbol.set(e.symbol, [])
    bySymbol.get(e.symbol)?.push(e)
  })
  return {
    bySymbol,
    /** @param {string} s */
    count: (s) => bySymbol.get(s)?.length ?? 0
  }
}

/**
 * Every non-snapshot update must continue the one before it: what the client
 * emits is a consistent stream.
 * @param {import('@wsps/client').QuoteEvent[]} events
 */
function assertContinuous (events) {
  for (const e of events) {
    if (e.snapshot) continue
    assert.ok(e.previous && e.quote.seq > e.previous.seq, `${e.symbol} seq ${e.quote.seq} after ${e.previous?.seq}`)
  }
}

describe('WspsClient against a real gateway', () => {
  test('goes live with the serving node and streams quotes that keep changing', async () => {
    const { gw } = on
    const c = client({ url: gw.wsUrl })
    /** @type {string[]} */
    const states = []
    c.on('status', (s) => states.push(s.state))
    const quotes = collect(c)
    c.connect()
    assert.deepEqual(await c.subscribe(['AAPL', 'MSFT']), { ok: true })
    assert.equal(c.status.state, 'live')
    assert.equal(c.status.node, gw.name)
    assert.equal(c.hello?.node, gw.name)
    await waitFor(() => quotes.count('AAPL') >= 4 && quotes.count('MSFT') >= 4, { message: 'ticks of AAPL and MSFT' })
    assert.deepEqual(states.slice(0, 2), ['connecting', 'live'])
    const aapl = /** @type {import('@wsps/client').QuoteEvent[]} */ (quotes.bySymbol.get('AAPL'))
    assert.equal(aapl[0].snapshot, true, 'the first quote is the snapshot')
    assert.ok(aapl.slice(1).every((e) => !e.snapshot), 'then ticks')
    assertContinuous(aapl)
    const last = /** @type {import('@wsps/client').Quote} */ (c.quote('AAPL'))
    for (const f of ['bid', 'ask', 'last', 'prevClose', 'ts']) assert.equal(typeof last[/** @type {keyof typeof last} */ (f)], 'number', f)
    assert.ok(new Set(aapl.map((e) => e.quote.seq)).size === aapl.length, 'each event is a new seq')
  })

  test('unsubscribe: the gateway stops sending that symbol while the others go on', async () => {
    const { gw } = on
    const rec = recordingWebSocket()
    const c = client({ url: gw.wsUrl, WebSocket: rec.WebSocket })
    c.connect()
    assert.deepEqual(await c.subscribe(['AAPL', 'MSFT']), { ok: true })
    const quotes = collect(c)
    await waitFor(() => quotes.count('MSFT') >= 2, { message: 'MSFT ticks' })
    c.unsubscribe(['MSFT'])
    assert.deepEqual(c.symbols, ['AAPL'])
    const unsubAck = /** @type {typeof rec.received[number]} */ (await waitFor(() => rec.received.find((r) => r.msg.op === 'ack' && !r.msg.symbols.includes('MSFT')), { message: 'unsub ack' }))
    const aaplAtAck = quotes.count('AAPL')
    await waitFor(() => quotes.count('AAPL') >= aaplAtAck + 5, { message: 'more AAPL ticks after the unsub' })
    const after = rec.received.slice(rec.received.indexOf(unsubAck) + 1)
    const msftFrames = after.filter((r) => (r.msg.quotes ?? []).some((/** @type {any} */ q) => q.symbol === 'MSFT'))
    assert.deepEqual(msftFrames, [], 'no MSFT quote on the wire after the ack')
  })

  test('subscribe with since: a saved cursor starts at its own quote (whole, from history), then every tick after it', async () => {
    const { gw } = on
    const first = client({ url: gw.wsUrl })
    const seen = collect(first)
    first.connect()
    await first.subscribe(['AAPL'], { mode: 'distinct' })
    await waitFor(() => seen.count('AAPL') >= 3, { message: 'AAPL ticks' })
    const saved = /** @type {import('@wsps/client').Quote} */ (seen.bySymbol.get('AAPL')?.[1]?.quote)
    await waitFor(() => seen.count('AAPL') >= 6, { message: 'ticks after the saved one' })
    first.close()

    const later = client({ url: gw.wsUrl })
    const got = collect(later)
    /** @type {{symbol: string, recovered: boolean}[]} */
    const recoveries = []
    later.on('recovery', (e) => recoveries.push(e))
    later.connect()
    await later.subscribe(['AAPL'], { mode: 'distinct' }, { since: { AAPL: { seq: saved.seq, epoch: /** @type {string} */ (saved.epoch) } } })
    await waitFor(() => got.count('AAPL') >= 5, { message: 'the replay and live ticks' })
    const events = /** @type {import('@wsps/client').QuoteEvent[]} */ (got.bySymbol.get('AAPL'))
    assert.deepEqual(recoveries, [{ symbol: 'AAPL', recovered: true }])
    assert.equal(events[0].snapshot, true)
    assert.deepEqual(events[0].quote, saved, 'the quote at the cursor, whole')
    assert.deepEqual(events.map((e) => e.quote.seq), events.map((_, i) => saved.seq + i), 'then every tick after it, in order')
    for (const e of events) assert.equal(typeof e.quote.bid, 'number', `seq ${e.quote.seq} is whole`)
  })

  test('server errors arrive by code: BAD_SYMBOL and TOO_MANY_SUBSCRIPTIONS', async () => {
    const { gw } = on
    const c = client({ url: gw.wsUrl })
    /** @type {string[]} */
    const codes = []
    c.on('error', (e) => codes.push(e.code))
    c.connect()
    const bad = await c.subscribe(['NOT A SYMBOL'])
    assert.equal(bad.ok, false)
    assert.equal(!bad.ok && bad.error.code, 'BAD_SYMBOL')
    assert.deepEqual(!bad.ok && bad.error.symbols, ['NOT A SYMBOL'])
    assert.deepEqual(c.symbols, [])

    // The gateway allows 4 (WSPS_MAX_SUBSCRIPTIONS).
    assert.deepEqual(await c.subscribe(['A', 'B', 'C']), { ok: true })
    const tooMany = await c.subscribe(['D', 'E'])
    assert.equal(!tooMany.ok && tooMany.error.code, 'TOO_MANY_SUBSCRIPTIONS')
    assert.deepEqual(c.symbols, ['A', 'B', 'C'])
    assert.deepEqual(codes, ['BAD_SYMBOL', 'TOO_MANY_SUBSCRIPTIONS'])
  })

  test('a real stream with a frame taken out: the gap is detected and resynced from a snapshot', async () => {
    const { gw } = on
    // Drop AAPL from the third `q` frame that carries it.
    let seen = 0
    /** @type {number | null} */
    let droppedSeq = null
    const proxy = await filteringProxy(gw.wsUrl, (msg) => {
      if (msg.op !== 'q' || droppedSeq !== null) return msg
      const i = msg.quotes.findIndex((/** @type {any} */ q) => q.symbol === 'AAPL')
      if (i < 0 || ++seen < 3) return msg
      droppedSeq = msg.quotes[i].seq
      const quotes = msg.quotes.filter((/** @type {any} */ q) => q.symbol !== 'AAPL')
      return quotes.length ? { ...msg, quotes } : null
    })
    atEnd(() => proxy.close())
    const rec = recordingWebSocket()
    const c = client({ url: proxy.url, WebSocket: rec.WebSocket })
    /** @type {import('@wsps/client').GapEvent[]} */
    const gaps = []
    c.on('gap', (g) => gaps.push(g))
    const quotes = collect(c)
    c.connect()
    assert.deepEqual(await c.subscribe(['AAPL']), { ok: true })
    await waitFor(() => gaps.length === 1, { message: 'a gap' })
    assert.equal(gaps[0].symbol, 'AAPL')
    assert.equal(gaps[0].base, droppedSeq, 'the missing seq is the one the proxy dropped')
    // The client asked again (unsub + sub) and got a fresh snapshot, then ticks.
    const ops = rec.sent.map((s) => s.msg).filter((m) => m.op !== 'ping').map((m) => `${m.op} ${m.symbols}`)
    assert.deepEqual(ops, ['sub AAPL', 'unsub AAPL', 'sub AAPL'])
    await waitFor(() => (quotes.bySymbol.get('AAPL') ?? []).filter((e) => e.snapshot).length === 2, { message: 'the resync snapshot' })
    const n = quotes.count('AAPL')
    await waitFor(() => quotes.count('AAPL') >= n + 3, { message: 'ticks after the resync' })
    const events = /** @type {import('@wsps/client').QuoteEvent[]} */ (quotes.bySymbol.get('AAPL'))
    assert.ok(!events.some((e) => e.quote.seq === droppedSeq), 'the dropped seq was never applied')
    assertContinuous(events)
    assert.equal(gaps.length, 1)
  })

  test('failover: SIGTERM on the serving gateway (1012) -> the next URL, same symbols, quotes resume', async () => {
    const a = await stack.gateway(GATEWAY_ENV)
    const b = await stack.gateway(GATEWAY_ENV)
    const c = client({ url: [a.wsUrl, b.wsUrl] })
    /** @type {import('@wsps/client').StatusInfo[]} */
    const statuses = []
    c.on('status', (s) => statuses.push(s))
    let gaps = 0
    c.on('gap', () => gaps++)
    const quotes = collect(c)
    c.connect()
    assert.deepEqual(await c.subscribe(['AAPL', 'MSFT']), { ok: true })
    assert.equal(c.status.node, a.name)
    await waitFor(() => quotes.count('AAPL') >= 3, { message: 'ticks on a' })

    await a.stop('SIGTERM')
    await waitFor(() => c.status.state === 'live' && c.status.node === b.name, { message: `live on ${b.name}` })
    const drop = statuses.find((s) => s.state === 'reconnecting')
    assert.equal(drop?.closeCode, 1012)
    assert.ok((drop?.retryInMs ?? Infinity) < 100, 'a drain is followed at once (jitter only)')
    assert.deepEqual(c.symbols, ['AAPL', 'MSFT'])
    const before = { AAPL: quotes.count('AAPL'), MSFT: quotes.count('MSFT') }
    await waitFor(() => quotes.count('AAPL') >= before.AAPL + 3 && quotes.count('MSFT') >= before.MSFT + 3, { message: `ticks on ${b.name}` })
    for (const events of quotes.bySymbol.values()) assertContinuous(events)
    assert.equal(gaps, 0, 'no gap: the new gateway resynced both symbols from its snapshot')
  })

  test('a frozen gateway (no frames at all) is declared dead after 2 x heartbeatMs and left for the next', async () => {
    const a = await stack.gateway({ ...GATEWAY_ENV, WSPS_HEARTBEAT_MS: 1000 })
    const b = await stack.gateway({ ...GATEWAY_ENV, WSPS_HEARTBEAT_MS: 1000 })
    const c = client({ url: [a.wsUrl, b.wsUrl], connectTimeoutMs: 1000 })
    /** @type {import('@wsps/client').StatusInfo[]} */
    const statuses = []
    c.on('status', (s) => statuses.push(s))
    const quotes = collect(c)
    c.connect()
    assert.deepEqual(await c.subscribe(['IBM']), { ok: true })
    assert.equal(c.status.node, a.name)
    await waitFor(() => quotes.count('IBM') >= 2, { message: 'ticks on a' })

    a.proc.kill('SIGSTOP') // the socket stays open; nothing comes through it
    try {
      await waitFor(() => c.status.state === 'live' && c.status.node === b.name, { timeout: 15_000, message: `live on ${b.name}` })
    } finally {
      a.proc.kill('SIGCONT')
    }
    const drop = statuses.find((s) => s.state === 'reconnecting')
    assert.match(drop?.closeReason ?? '', /no frame for 2000 ms/)
    const n = quotes.count('IBM')
    await waitFor(() => quotes.count('IBM') >= n + 2, { message: `ticks on ${b.name}` })
  })
})
