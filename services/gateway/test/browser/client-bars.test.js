// WspsClient's bar subscriptions and delayed markers against a scripted
// fake gateway speaking the wire format of docs/protocol.md ("Bars",
// "Delayed grants"): what the page's chart and badges are built on.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { waitFor } from '@wsps/testkit'
import { hello, scripted } from './stack.js'

const { client, fake } = scripted({ initialBackoffMs: 10, restartJitterMs: 10 })

const T0 = 1_763_800_020_000
/** @param {number} i */
const bar = (i) => ({ t: T0 + i * 1000, o: 10, h: 11, l: 9, c: 10 + i / 10, v: 5, n: 2 })

/**
 * A gateway that acks quote subs (AAPL delayed, by 900000 ms) and bar subs
 * (then a backfill of two closed bars and an open one).
 */
async function barGateway () {
  const f = await fake((ws) => {
    ws.send(hello('fake'))
    /** @type {Map<string, Set<string>>} bar subscriptions by interval */
    const bars = new Map()
    /** @type {Set<string>} */
    const quotes = new Set()
    ws.on('message', (data) => {
      const m = JSON.parse(String(data))
      if (m.bars !== undefined) {
        const held = bars.get(m.bars) ?? new Set()
        for (const s of m.symbols) m.op === 'sub' ? held.add(s) : held.delete(s)
        bars.set(m.bars, held)
        ws.send(JSON.stringify({ op: 'ack', id: m.id, bars: m.bars, symbols: [...held] }))
        if (m.op === 'sub') {
          for (const s of m.symbols) ws.send(JSON.stringify({ op: 'bars', symbol: s, interval: m.bars, bars: [bar(0), bar(1)], current: bar(2), complete: true }))
        }
        return
      }
      for (const s of m.symbols ?? []) m.op === 'sub' ? quotes.add(s) : quotes.delete(s)
      const delayed = [...quotes].filter((s) => s === 'AAPL')
      ws.send(JSON.stringify({ op: 'ack', id: m.id, symbols: [...quotes], ...(delayed.length ? { delayed, delayMs: 900_000 } : {}) }))
    })
  })
  return { f, conns: f.sent }
}

describe('bars', () => {
  test('subscribeBars: a bar sub, its backfill and live updates as events; the watch set untouched', async () => {
    const { f, conns } = await barGateway()
    const c = client({ url: f.url, symbols: ['MSFT'] })
    /** @type {any[]} */
    const events = []
    c.on('bars', (ev) => events.push({ type: 'bars', ...ev }))
    c.on('bar', (ev) => events.push({ type: 'bar', ...ev }))
    c.subscribeBars(['AAPL'], '1s', { backfill: 50 })
    c.connect()
    await waitFor(() => events.length === 1, { message: 'the backfill' })
    const sub = conns[0].find((m) => m.bars !== undefined)
    assert.deepEqual(sub, { op: 'sub', symbols: ['AAPL'], bars: '1s', backfill: 50, id: sub.id })
    assert.deepEqual(events[0], { type: 'bars', symbol: 'AAPL', interval: '1s', series: { symbol: 'AAPL', interval: '1s', bars: [bar(0), bar(1)], current: bar(2), complete: true, delayed: false }, delayed: false })
    // The bar ack lists bar subscriptions only: the quote watch set stays.
    await waitFor(() => c.symbols.join() === 'MSFT', { message: 'MSFT still watched' })

    const [ws] = f.sockets
    ws.send(JSON.stringify({ op: 'bar', symbol: 'AAPL', interval: '1s', bar: bar(2), closed: true }))
    ws.send(JSON.stringify({ op: 'bar', symbol: 'AAPL', interval: '1m', bar: bar(3), closed: false })) // not subscribed
    ws.send(JSON.stringify({ op: 'bar', symbol: 'AAPL', interval: '1s', bar: bar(3), closed: false }))
    await waitFor(() => events.length === 3, { message: 'two live bars' })
    assert.deepEqual(events.slice(1).map((e) => [e.type, e.interval, e.bar.t, e.closed, e.delayed]), [
      ['bar', '1s', bar(2).t, true, false],
      ['bar', '1s', bar(3).t, false, false]
    ])
    assert.deepEqual(c.bars('AAPL', '1s'), { symbol: 'AAPL', interval: '1s', bars: [bar(0), bar(1), bar(2)], current: bar(3), complete: true, delayed: false })

    c.unsubscribeBars(['AAPL'], '1s')
    await waitFor(() => conns[0].some((m) => m.op === 'unsub' && m.bars === '1s'), { message: 'the bar unsub' })
    assert.deepEqual(conns[0].filter((m) => m.op === 'unsub').map((m) => m.symbols), [['AAPL']])
    ws.send(JSON.stringify({ op: 'bar', symbol: 'AAPL', interval: '1s', bar: bar(4), closed: false }))
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.equal(events.length, 3, 'no bar event after unsubscribeBars')
  })

  test('a reconnect asks for the bars again and gets a fresh backfill', async () => {
    const { f, conns } = await barGateway()
    const c = client({ url: f.url })
    /** @type {string[]} */
    const backfills = []
    c.on('bars', (ev) => backfills.push(`${ev.symbol}/${ev.interval}`))
    c.connect()
    await waitFor(() => c.status.state === 'live', { message: 'live' })
    c.subscribeBars(['AAPL', 'MSFT'], '1m', { backfill: 10 })
    c.subscribeBars(['AAPL'], '1m', { backfill: 10 }) // already wanted: nothing sent
    await waitFor(() => backfills.length === 2, { message: 'two backfills' })
    assert.equal(conns[0].filter((m) => m.bars !== undefined).length, 1)
    for (const ws of f.sockets) ws.close(1012, 'server restart')
    await waitFor(() => backfills.length === 4, { message: 'backfills again after the reconnect' })
    assert.deepEqual(conns[1].filter((m) => m.bars !== undefined).map((m) => [m.op, m.bars, m.backfill, m.symbols]), [['sub', '1m', 10, ['AAPL', 'MSFT']]])
  })

  test('a bar ack is not an answer to a quote sub (its symbols are bar subscriptions)', async () => {
    const f = await fake((ws) => {
      ws.send(hello('fake'))
      ws.on('message', (data) => {
        const m = JSON.parse(String(data))
        // Quote subs go unanswered; bar subs are acked.
        if (m.bars !== undefined) ws.send(JSON.stringify({ op: 'ack', id: m.id, bars: m.bars, symbols: m.symbols, delayed: m.symbols, delayMs: 60_000 }))
      })
    })
    const c = client({ url: f.url })
    c.connect()
    await waitFor(() => c.status.state === 'live', { message: 'live' })
    const held = c.subscribe(['AAPL'])
    c.subscribeBars(['AAPL'], '1s')
    const first = await Promise.race([held, new Promise((resolve) => setTimeout(() => resolve('pending'), 300))])
    assert.equal(first, 'pending', 'subscribe() waits for the quote ack')
    assert.equal(c.isDelayed('AAPL'), false, 'only quote acks say which quotes are delayed')
  })

  test('a bar sub answered DRAINING is asked for again on the next connection', async () => {
    /** @type {any[][]} */
    const conns = []
    const f = await fake((ws, frames) => {
      conns.push(frames)
      const draining = conns.length === 1
      ws.send(hello('fake'))
      ws.on('message', (data) => {
        const m = JSON.parse(String(data))
        if (m.bars === undefined) return
        if (draining) {
          ws.send(JSON.stringify({ op: 'error', id: m.id, code: 'DRAINING', message: 'restarting' }))
          setTimeout(() => ws.close(1012, 'server restart'), 5)
        } else {
          ws.send(JSON.stringify({ op: 'ack', id: m.id, bars: m.bars, symbols: m.symbols }))
        }
      })
    })
    const c = client({ url: f.url })
    c.subscribeBars(['AAPL'], '1s')
    c.connect()
    await waitFor(() => conns[1]?.some((m) => m.bars === '1s'), { message: 'the bar sub again on the second connection' })
  })

  test('a refused bar sub drops that bar subscription only (its rejected event names the interval)', async () => {
    const f = await fake((ws) => {
      ws.send(hello('fake'))
      ws.on('message', (data) => {
        const m = JSON.parse(String(data))
        if (m.bars !== undefined) ws.send(JSON.stringify({ op: 'error', id: m.id, code: 'BAD_INTERVAL', message: 'no such interval' }))
        else ws.send(JSON.stringify({ op: 'ack', id: m.id, symbols: m.symbols }))
      })
    })
    const c = client({ url: f.url, symbols: ['AAPL'] })
    /** @type {string[]} */
    const errors = []
    /** @type {string[]} */
    const rejected = []
    c.on('error', (e) => errors.push(e.code))
    c.on('rejected', (r) => rejected.push(`${r.symbols} ${r.interval}`))
    const result = c.subscribeBars(['AAPL'], '2h')
    c.connect()
    await waitFor(() => errors.length === 1, { message: 'the error' })
    assert.deepEqual(errors, ['BAD_INTERVAL'])
    const refused = await result
    assert.equal(!refused.ok && refused.error.code, 'BAD_INTERVAL', 'subscribeBars() resolves with the refusal')
    assert.deepEqual(rejected, ['AAPL 2h'], 'the bars of 2h, not the quote subscription')
    assert.deepEqual(c.symbols, ['AAPL'])
    // Dropped: a reconnect does not ask again.
    for (const ws of f.sockets) ws.close(1012, 'server restart')
    await waitFor(() => f.connections === 2 && c.status.state === 'live', { message: 'live again' })
    await new Promise((resolve) => setTimeout(resolve, 100))
    assert.deepEqual(errors, ['BAD_INTERVAL'])
  })
})

describe('delayed', () => {
  test('isDelayed and the delayed event follow the acks, with the delay they name', async () => {
    const { f } = await barGateway()
    const c = client({ url: f.url, symbols: ['MSFT'] })
    /** @type {{symbols: string[], delayMs: number | null}[]} */
    const seen = []
    c.on('delayed', (ev) => seen.push(ev))
    c.connect()
    await waitFor(() => c.status.state === 'live', { message: 'live' })
    c.subscribe(['AAPL'])
    await waitFor(() => c.isDelayed('AAPL'), { message: 'AAPL delayed' })
    assert.equal(c.isDelayed('MSFT'), false)
    assert.equal(c.delayMs, 900_000)
    assert.deepEqual(seen, [{ symbols: ['AAPL'], delayMs: 900_000 }])
    c.unsubscribe(['AAPL'])
    await waitFor(() => !c.isDelayed('AAPL'), { message: 'AAPL no longer held' })
    assert.deepEqual(seen.at(-1), { symbols: [], delayMs: 900_000 })
  })
})
