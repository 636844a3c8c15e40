// WspsClient against scripted fake gateways: the behaviours a real gateway
// cannot be made to show on demand (a crafted seq gap, a 4001 close, a
// close code per attempt, a server that goes silent).

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { waitFor } from '@wsps/testkit'
import { backoffDelay } from '@wsps/client'
import { fullQuote, hello, onClientFrame, scripted } from './stack.js'

const { client, fake } = scripted()
const quote = fullQuote

describe('backoffDelay', () => {
  test('doubles per attempt up to the cap, with the jitter between half and all of it', () => {
    const limits = { initialMs: 100, maxMs: 1000 }
    assert.deepEqual([0, 1, 2, 3, 4, 10].map((a) => backoffDelay(a, limits, () => 1)), [100, 200, 400, 800, 1000, 1000])
    assert.deepEqual([0, 1, 2, 3, 4, 10].map((a) => backoffDelay(a, limits, () => 0)), [50, 100, 200, 400, 500, 500])
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(3, limits)
      assert.ok(d >= 400 && d <= 800, `${d} within [400, 800]`)
    }
  })
})

describe('reconnect policy', () => {
  test('1012 comes back within the small jitter; other codes back off exponentially', async () => {
    // Each connection: hello, then close with the next code of the script.
    const script = [1011, 1011, 1011, 1012, 4008]
    const f = await fake((ws) => {
      ws.send(hello('fake'))
      const code = script.shift()
      if (code) setTimeout(() => ws.close(code, 'scripted'), 5)
    })
    const c = client({ url: f.url, initialBackoffMs: 40, maxBackoffMs: 10_000, restartJitterMs: 30, random: () => 1 })
    /** @type {{code: number | null, delay: number | null}[]} */
    const waits = []
    c.on('status', (s) => { if (s.state === 'reconnecting' && s.retryAt !== null) waits.push({ code: s.closeCode, delay: s.retryInMs }) })
    c.connect()
    await waitFor(() => waits.length === 5, { message: 'five reconnects' })
    assert.deepEqual(waits, [
      { code: 1011, delay: 40 },
      { code: 1011, delay: 80 },
      { code: 1011, delay: 160 },
      // random() = 1 would be the whole window; the jitter stays below restartJitterMs
      { code: 1012, delay: 30 },
      // 1012 did not count as a failure: the ladder goes on where it was
      { code: 4008, delay: 320 }
    ])
    await waitFor(() => c.status.state === 'live', { message: 'live again' })
  })

  test('no reconnect after a NO_RECONNECT_CODES close (4001): offline', async () => {
    const f = await fake((ws) => {
      ws.send(hello('fake'))
      setTimeout(() => ws.close(4001, 'token expired'), 5)
    })
    const c = client({ url: f.url, initialBackoffMs: 10 })
    /** @type {string[]} */
    const states = []
    c.on('status', (s) => states.push(s.state))
    c.connect()
    await waitFor(() => c.status.state === 'offline', { message: 'offline' })
    assert.equal(c.status.closeCode, 4001)
    assert.equal(c.status.closeReason, 'token expired')
    // Give a wrongly scheduled retry (10-20 ms) ample time to show up.
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(f.connections, 1)
    assert.deepEqual(states, ['connecting', 'live', 'offline'])
  })

  test('URLs rotate on reconnect, and the watch set is resubscribed on the new connection', async () => {
    /** @type {any[][]} */
    const framesA = []
    const a = await fake((ws, frames) => {
      framesA.push(frames)
      ws.send(hello('a'))
    })
    /** @type {any[][]} */
    const framesB = []
    const b = await fake((ws, frames) => {
      framesB.push(frames)
      ws.send(hello('b'))
      ws.on('message', (data) => {
        const m = JSON.parse(String(data))
        if (m.op === 'sub') {
          ws.send(JSON.stringify({ op: 'ack', id: m.id, symbols: m.symbols }))
          ws.send(JSON.stringify({ op: 'snap', quotes: m.symbols.map((/** @type {string} */ s) => quote({ symbol: s, seq: 7 })) }))
        }
      })
    })
    const c = client({ url: [a.url, b.url], symbols: ['AAPL', 'MSFT'], initialBackoffMs: 10, restartJitterMs: 10 })
    c.connect()
    await waitFor(() => c.status.state === 'live' && c.status.node === 'a', { message: 'live on a' })
    await waitFor(() => framesA[0]?.some((m) => m.op === 'sub'), { message: 'sub on a' })
    assert.deepEqual(framesA[0].find((m) => m.op === 'sub').symbols, ['AAPL', 'MSFT'])
    // a drains: 1012, and the client moves on to the next URL.
    for (const ws of a.sockets) ws.close(1012, 'server restart')
    await waitFor(() => c.status.state === 'live' && c.status.node === 'b', { message: 'live on b' })
    await waitFor(() => c.quote('MSFT')?.seq === 7, { message: 'snapshot from b applied' })
    assert.deepEqual(framesB[0].find((m) => m.op === 'sub').symbols, ['AAPL', 'MSFT'])
    assert.deepEqual(c.symbols, ['AAPL', 'MSFT'])
    assert.equal(c.status.closeCode, 1012)
  })
})

describe('heartbeat', () => {
  test('pings every heartbeatMs and drops a connection silent for 2 x heartbeatMs', async () => {
    const f = await fake((ws) => {
      // Answers nothing after hello: a dead peer behind a live TCP socket.
      ws.send(hello('silent', 100))
    })
    f.answerPings(false)
    const c = client({ url: f.url, initialBackoffMs: 10 })
    /** @type {{state: string, reason: string}[]} */
    const seen = []
    c.on('status', (s) => seen.push({ state: s.state, reason: s.closeReason }))
    c.connect()
    await waitFor(() => f.connections >= 2, { message: 'a second connection' })
    assert.ok(f.sent[0].some((m) => m.op === 'ping'), 'the client pinged')
    const drop = seen.find((s) => s.state === 'reconnecting')
    assert.match(drop?.reason ?? '', /no frame for 200 ms/)
  })

  test('pongs keep a quiet connection alive', async () => {
    const f = await fake((ws) => {
      ws.send(hello('quiet', 100))
      onClientFrame(ws, ['ping'], (m) => ws.send(JSON.stringify({ op: 'pong', id: m.id })))
    })
    const c = client({ url: f.url })
    c.connect()
    await waitFor(() => c.status.state === 'live', { message: 'live' })
    // Ten heartbeat periods with nothing but pongs.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    assert.equal(c.status.state, 'live')
    assert.equal(f.connections, 1)
    assert.ok(c.rttMs !== null, 'measured a round trip')
  })
})

describe('seq gaps', () => {
  test('a delta that does not continue the held quote triggers unsub + sub of that symbol; conflated deltas with base apply', async () => {
    /** @type {any[]} */
    let got = []
    /** @type {import('ws').WebSocket | null} */
    let server = null
    let snapSeq = 10
    const f = await fake((ws, frames) => {
      server = ws
      got = frames
      ws.send(hello('gappy'))
      ws.on('message', (data) => {
        const m = JSON.parse(String(data))
        ws.send(JSON.stringify({ op: 'ack', id: m.id, symbols: m.op === 'sub' ? m.symbols : [] }))
        if (m.op === 'sub') ws.send(JSON.stringify({ op: 'snap', quotes: [quote({ symbol: 'AAPL', seq: snapSeq, last: 100 })] }))
      })
    })
    const c = client({ url: f.url })
    /** @type {number[]} */
    const seqs = []
    /** @type {import('@wsps/client').GapEvent[]} */
    const gaps = []
    c.on('quote', (e) => seqs.push(e.quote.seq))
    c.on('gap', (g) => gaps.push(g))
    c.connect()
    assert.deepEqual(await c.subscribe(['AAPL']), { ok: true })
    await waitFor(() => seqs.length === 1, { message: 'snapshot' })
    const send = (/** @type {any[]} */ quotes) => /** @type {WebSocket} */ (/** @type {unknown} */ (server)).send(JSON.stringify({ op: 'q', quotes }))

    send([{ symbol: 'AAPL', seq: 11, ts: Date.now(), last: 101 }])
    await waitFor(() => c.quote('AAPL')?.seq === 11, { message: 'seq 11 applied' })
    assert.equal(c.quote('AAPL')?.last, 101)
    assert.equal(c.quote('AAPL')?.bid, 1, 'fields the delta lacks are kept')

    snapSeq = 20
    send([{ symbol: 'AAPL', seq: 13, ts: Date.now(), last: 103 }]) // 12 is missing
    await waitFor(() => c.quote('AAPL')?.seq === 20, { message: 'resynced from a fresh snapshot' })
    assert.deepEqual(gaps, [{ symbol: 'AAPL', heldSeq: 11, seq: 13, base: 12 }])
    assert.deepEqual(got.filter((m) => m.op !== 'ping').map((m) => `${m.op} ${m.symbols}`), ['sub AAPL', 'unsub AAPL', 'sub AAPL'])

    // A conflated delta: seq 25 merged on top of 20.
    send([{ symbol: 'AAPL', seq: 25, base: 20, ts: Date.now(), last: 125 }])
    await waitFor(() => c.quote('AAPL')?.seq === 25, { message: 'conflated delta applied' })
    assert.equal(c.quote('AAPL')?.last, 125)
    assert.equal('base' in /** @type {object} */ (c.quote('AAPL')), false)
    assert.deepEqual(seqs, [10, 11, 20, 25], 'the gapped delta (13) was never applied')
    assert.equal(gaps.length, 1)
  })

  test('deltas for symbols not watched (late frames after unsubscribe) are ignored', async () => {
    /** @type {import('ws').WebSocket | null} */
    let server = null
    const f = await fake((ws) => {
      server = ws
      ws.send(hello('late'))
      ws.on('message', (data) => {
        const m = JSON.parse(String(data))
        ws.send(JSON.stringify({ op: 'ack', id: m.id, symbols: m.op === 'sub' ? m.symbols : [] }))
      })
    })
    const c = client({ url: f.url })
    let quotes = 0
    let gaps = 0
    c.on('quote', () => quotes++)
    c.on('gap', () => gaps++)
    c.connect()
    await waitFor(() => c.status.state === 'live', { message: 'live' })
    const ws = /** @type {WebSocket} */ (/** @type {unknown} */ (server))
    ws.send(JSON.stringify({ op: 'snap', quotes: [quote({ symbol: 'XYZ', seq: 1 })] }))
    ws.send(JSON.stringify({ op: 'q', quotes: [{ symbol: 'XYZ', seq: 5, ts: Date.now() }] }))
    ws.send(JSON.stringify({ op: 'pong' }))
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.equal(quotes, 0)
    assert.equal(gaps, 0)
  })
})

describe('errors', () => {
  test('a refused subscription resolves with its error, emits error + rejected, and leaves the watch set', async () => {
    const f = await fake((ws) => {
      ws.send(hello('strict'))
      onClientFrame(ws, ['sub'], (m) => {
        const bad = m.symbols.filter((/** @type {string} */ s) => s.includes('$'))
        if (bad.length) ws.send(JSON.stringify({ op: 'error', id: m.id, code: 'BAD_SYMBOL', message: 'invalid symbol', symbols: bad }))
        else ws.send(JSON.stringify({ op: 'ack', id: m.id, symbols: m.symbols }))
      })
    })
    const c = client({ url: f.url })
    /** @type {string[]} */
    const errors = []
    /** @type {string[][]} */
    const rejected = []
    c.on('error', (e) => errors.push(e.code))
    c.on('rejected', (r) => rejected.push(r.symbols))
    c.connect()
    await waitFor(() => c.status.state === 'live', { message: 'live' })
    const result = await c.subscribe(['IBM', 'A$B'])
    assert.equal(result.ok, false)
    assert.equal(!result.ok && result.error.code, 'BAD_SYMBOL')
    assert.deepEqual(errors, ['BAD_SYMBOL'])
    assert.deepEqual(rejected, [['A$B']])
    // IBM came in the same refused request: the client asked for it again.
    await waitFor(() => c.symbols.join() === 'IBM', { message: 'IBM kept' })
    assert.deepEqual(await c.subscribe(['IBM']), { ok: true })
  })
})

describe('delivery modes', () => {
  test('subscribe sends each delivery in its own sub, moves a held symbol to a new one, and asks for them again after a reconnect', async () => {
    const f = await fake((ws) => {
      ws.send(hello('fake'))
      // Like the gateway, the ack lists the connection's whole subscription set.
      const held = new Set()
      onClientFrame(ws, ['sub'], (m) => {
        const { op: _op, id, symbols, ...delivery } = m
        for (const s of symbols) held.add(s)
        ws.send(JSON.stringify({ op: 'ack', id, symbols: [...held], ...delivery }))
        ws.send(JSON.stringify({ op: 'snap', quotes: symbols.map((/** @type {string} */ s) => quote({ symbol: s, seq: 1 })) }))
      })
    })
    const c = client({ url: f.url, initialBackoffMs: 10 })
    c.connect()
    await waitFor(() => c.status.state === 'live', { message: 'live' })
    const subs = (/** @type {number} */ i) => f.sent[i].filter((m) => m.op === 'sub').map(({ symbols, mode, maxRate }) => ({ symbols, mode, maxRate }))
    assert.deepEqual(await c.subscribe(['AAPL'], { mode: 'distinct' }), { ok: true })
    assert.deepEqual(await c.subscribe(['MSFT', 'IBM'], { maxRate: 2 }), { ok: true })
    await c.subscribe(['TSLA'])
    await c.subscribe(['AAPL'], { mode: 'distinct' })
    await c.subscribe(['IBM'])
    await waitFor(() => subs(0).length === 4, { message: 'four subs' })
    assert.deepEqual(subs(0), [
      { symbols: ['AAPL'], mode: 'distinct', maxRate: undefined },
      { symbols: ['MSFT', 'IBM'], mode: undefined, maxRate: 2 },
      { symbols: ['TSLA'], mode: undefined, maxRate: undefined },
      // AAPL again with the same delivery: nothing to send; IBM back to the default: sent
      { symbols: ['IBM'], mode: undefined, maxRate: undefined }
    ])
    for (const ws of f.sockets) ws.close(1012, 'server restart')
    await waitFor(() => f.sent[1]?.filter((m) => m.op === 'sub').length === 3, { message: 'three subs after the reconnect' })
    // One sub per delivery; the order of groups and of symbols in a group is not part of the contract.
    const groups = subs(1).map((g) => ({ ...g, symbols: [...g.symbols].sort() })).sort((a, b) => a.symbols[0].localeCompare(b.symbols[0]))
    assert.deepEqual(groups, [
      { symbols: ['AAPL'], mode: 'distinct', maxRate: undefined },
      { symbols: ['IBM', 'TSLA'], mode: undefined, maxRate: undefined },
      { symbols: ['MSFT'], mode: undefined, maxRate: 2 }
    ])
  })
})

describe('bars', () => {
  /** @param {number} t @param {number} c */
  const bar = (t, c) => ({ t, o: c, h: c, l: c, c, v: 0, n: 1 })

  test('subscribeBars: backfill, then live bars into the series; apart from quotes; asked again (with its backfill) after a reconnect', async () => {
    const f = await fake((ws) => {
      ws.send(hello('fake'))
      /** @type {Map<string, Set<string>>} interval -> symbols held */
      const held = new Map()
      onClientFrame(ws, ['sub', 'unsub'], (m) => {
        if (m.bars === undefined) {
          ws.send(JSON.stringify({ op: 'ack', id: m.id, symbols: m.symbols }))
          return
        }
        const set = held.get(m.bars) ?? new Set()
        held.set(m.bars, set)
        for (const s of m.symbols) m.op === 'sub' ? set.add(s) : set.delete(s)
        ws.send(JSON.stringify({ op: 'ack', id: m.id, bars: m.bars, symbols: [...set] }))
        if (m.op !== 'sub') return
        for (const s of m.symbols) {
          ws.send(JSON.stringify({ op: 'bars', symbol: s, interval: m.bars, bars: [bar(1000, 1), bar(2000, 2)].slice(-m.backfill), current: bar(3000, 3), complete: true }))
          ws.send(JSON.stringify({ op: 'bar', symbol: s, interval: m.bars, bar: { ...bar(3000, 3), h: 4, c: 4, n: 2 }, closed: false }))
          ws.send(JSON.stringify({ op: 'bar', symbol: s, interval: m.bars, bar: { ...bar(3000, 3), h: 4, c: 4, n: 2 }, closed: true }))
          // A late frame of an older bar: never goes back.
          ws.send(JSON.stringify({ op: 'bar', symbol: s, interval: m.bars, bar: bar(2000, 9), closed: false }))
          ws.send(JSON.stringify({ op: 'bar', symbol: s, interval: m.bars, bar: bar(4000, 5), closed: false }))
        }
      })
    })
    const c = client({ url: f.url, initialBackoffMs: 10, symbols: ['AAPL'] })
    /** @type {string[]} */
    const events = []
    c.on('bars', (e) => events.push(`bars ${e.symbol} ${e.interval} ${e.series.bars.length}`))
    c.on('bar', (e) => events.push(`bar ${e.bar.t} ${e.closed}`))
    c.connect()
    await waitFor(() => c.status.state === 'live', { message: 'live' })
    assert.deepEqual(await c.subscribeBars(['AAPL'], '1m', { backfill: 1 }), { ok: true })
    await waitFor(() => c.bars('AAPL', '1m')?.current?.t === 4000, { message: 'the live bars' })
    assert.deepEqual(events, ['bars AAPL 1m 1', 'bar 3000 false', 'bar 3000 true', 'bar 4000 false'])
    assert.deepEqual(c.bars('AAPL', '1m'), { symbol: 'AAPL', interval: '1m', bars: [bar(2000, 2), { ...bar(3000, 3), h: 4, c: 4, n: 2 }], current: bar(4000, 5), complete: true, delayed: false })
    assert.deepEqual(c.symbols, ['AAPL'], 'the bars ack does not touch the quote watch set')
    const sent = f.sent[0].filter((m) => m.bars !== undefined)
    assert.deepEqual(sent.map(({ op, symbols, bars, backfill }) => ({ op, symbols, bars, backfill })), [{ op: 'sub', symbols: ['AAPL'], bars: '1m', backfill: 1 }])
    for (const ws of f.sockets) ws.close(1012, 'server restart')
    await waitFor(() => f.sent[1]?.some((m) => m.bars === '1m'), { message: 'bars asked for again' })
    assert.deepEqual(f.sent[1].filter((m) => m.bars !== undefined).map(({ symbols, bars, backfill }) => ({ symbols, bars, backfill })), [{ symbols: ['AAPL'], bars: '1m', backfill: 1 }])
    c.unsubscribeBars(['AAPL'], '1m')
    assert.equal(c.bars('AAPL', '1m'), undefined)
    await waitFor(() => f.sent[1].some((m) => m.op === 'unsub' && m.bars === '1m'), { message: 'the unsub' })
  })

  test('a refused bars sub resolves with its error and a rejected event naming the interval; the rest is asked for again', async () => {
    const f = await fake((ws) => {
      ws.send(hello('strict'))
      onClientFrame(ws, ['sub'], (m) => {
        if (m.bars === '2h') ws.send(JSON.stringify({ op: 'error', id: m.id, code: 'BAD_INTERVAL', message: 'bars must be one of 1s, 1m, 5m' }))
        else if (m.symbols.includes('MSFT')) ws.send(JSON.stringify({ op: 'error', id: m.id, code: 'DELAYED_ONLY', message: 'delayed only', symbols: ['MSFT'] }))
        else ws.send(JSON.stringify({ op: 'ack', id: m.id, bars: m.bars, symbols: m.symbols }))
      })
    })
    const c = client({ url: f.url })
    /** @type {any[]} */
    const rejected = []
    c.on('rejected', (r) => rejected.push(r))
    c.connect()
    await waitFor(() => c.status.state === 'live', { message: 'live' })
    const odd = await c.subscribeBars(['AAPL'], '2h')
    assert.equal(!odd.ok && odd.error.code, 'BAD_INTERVAL')
    const some = await c.subscribeBars(['IBM', 'MSFT'], '1m', { delayed: false })
    assert.equal(!some.ok && some.error.code, 'DELAYED_ONLY')
    assert.deepEqual(rejected.map((r) => [r.symbols, r.interval, r.error.code]), [[['AAPL'], '2h', 'BAD_INTERVAL'], [['MSFT'], '1m', 'DELAYED_ONLY']])
    assert.deepEqual(await c.subscribeBars(['IBM'], '1m', { delayed: false }), { ok: true }, 'IBM was asked for again')
  })
})
