// WspsClient's staleness against scripted fake gateways speaking the
// `stale` / `fresh` frames of docs/protocol.md: the gateway's word, the
// client's own connection loss, the two combined, over WebSocket and SSE;
// and every 1012 (ISOLATED among them) retried alike.

import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { describe, test } from 'node:test'
import { sleep, waitFor } from '@wsps/testkit'
import { Disconnect } from '@wsps/client/protocol'
import { fullQuote, hello, onClientFrame, scripted } from './stack.js'

const { client, fake, atEnd } = scripted({ initialBackoffMs: 10, restartJitterMs: 10 })
const quote = fullQuote

/**
 * Every `stale` and `fresh` event of a client, in order.
 * @param {import('@wsps/client').WspsClient} c
 */
function record (c) {
  /** @type {({stale: string[], since: number} | {fresh: string[]})[]} */
  const events = []
  c.on('stale', ({ symbols, since }) => events.push({ stale: symbols, since }))
  c.on('fresh', ({ symbols }) => events.push({ fresh: symbols }))
  return events
}

/**
 * @param {import('ws').WebSocket} ws
 * @param {any} frame
 */
const send = (ws, frame) => ws.send(JSON.stringify(frame))

/**
 * The next `sub` a connection sends.
 * @param {import('ws').WebSocket} ws
 * @returns {Promise<any>}
 */
function nextSub (ws) {
  return new Promise((resolve) => {
    const stop = onClientFrame(ws, ['sub'], (m) => {
      stop()
      resolve(m)
    })
  })
}

describe('stale and fresh', () => {
  test('a gateway that stops answering (frozen: no frame, no pong) makes every symbol stale since its last frame; its next frame makes them fresh', async () => {
    /** @type {import('ws').WebSocket[]} */
    const sockets = []
    const f = await fake((ws) => {
      sockets.push(ws)
      ws.send(hello('gw1'))
      nextSub(ws).then((m) => {
        send(ws, { op: 'ack', id: m.id, symbols: ['AAPL', 'MSFT'] })
        send(ws, { op: 'snap', quotes: [quote({ symbol: 'AAPL', seq: 1 }), quote({ symbol: 'MSFT', seq: 1 })] })
      })
    })
    const c = client({ url: f.url, symbols: ['AAPL', 'MSFT'], quietMs: 150 })
    const events = record(c)
    c.connect()
    await waitFor(() => c.quote('MSFT')?.seq === 1, { message: 'the snapshots' })
    // Quiet but answering: probed, answered, never stale.
    await sleep(700)
    assert.deepEqual(events, [], 'a quiet gateway that answers its probes is live')
    const lastFrame = Date.now()
    f.answerPings(false)
    await waitFor(() => events.length === 1, { timeout: 2000, message: 'told stale' })
    const told = /** @type {{stale: string[], since: number}} */ (events[0])
    assert.deepEqual(told.stale.sort(), ['AAPL', 'MSFT'])
    assert.ok(told.since <= lastFrame + 150, `since ${told.since}: the last frame, not when it was found`)
    assert.equal(c.isStale('AAPL'), true)
    assert.equal(c.status.state, 'live', 'the connection is kept: it may answer yet')
    send(sockets[0], { op: 'q', quotes: [{ symbol: 'AAPL', seq: 2, ts: Date.now(), last: 2 }] })
    await waitFor(() => events.length === 2, { message: 'told fresh' })
    assert.deepEqual(/** @type {{fresh: string[]}} */ (events[1]).fresh.sort(), ['AAPL', 'MSFT'])
    assert.equal(c.isStale('MSFT'), false)
    assert.equal(sockets.length, 1, 'one connection throughout')
  })


  test('the gateway\'s stale / fresh frames, a connection lost on top, and each symbol fresh again when restored on the next one', async () => {
    /** @type {import('ws').WebSocket[]} */
    const sockets = []
    /** @type {any[]} the second connection's sub */
    const subs = []
    const T1 = Date.now() - 60_000
    const f = await fake((ws) => {
      sockets.push(ws)
      ws.send(hello(`gw${sockets.length}`))
      nextSub(ws).then((m) => subs.push(m))
    })
    const c = client({ url: f.url, symbols: ['AAPL', 'MSFT', 'IBM'] })
    const events = record(c)
    c.connect()
    await waitFor(() => subs.length === 1, { message: 'the first sub' })
    const [one] = sockets
    send(one, { op: 'ack', id: subs[0].id, symbols: ['AAPL', 'MSFT', 'IBM'] })
    // AAPL and MSFT carry an epoch (they resume with since); IBM does not.
    send(one, { op: 'snap', quotes: [quote({ symbol: 'AAPL', seq: 10, epoch: 'e1' }), quote({ symbol: 'MSFT', seq: 20, epoch: 'e1' }), quote({ symbol: 'IBM', seq: 30 })] })
    await waitFor(() => c.quote('IBM')?.seq === 30, { message: 'the snapshots' })
    assert.deepEqual(events, [], 'nothing is stale while the feed is live')
    assert.equal(c.isStale('AAPL'), false)
    assert.equal(c.staleSince('AAPL'), null)

    // The gateway's feed of AAPL and MSFT is interrupted (XYZ is not watched: ignored).
    send(one, { op: 'stale', symbols: ['AAPL', 'MSFT', 'XYZ'], since: T1 })
    await waitFor(() => events.length === 1, { message: 'the stale event' })
    assert.deepEqual(events, [{ stale: ['AAPL', 'MSFT'], since: T1 }])
    assert.deepEqual(['AAPL', 'MSFT', 'IBM', 'XYZ'].map((s) => [c.isStale(s), c.staleSince(s)]), [[true, T1], [true, T1], [false, null], [false, null]])
    // Gap fill while stale: applied, still not live.
    send(one, { op: 'q', quotes: [{ symbol: 'AAPL', seq: 11, ts: Date.now(), last: 2 }] })
    await waitFor(() => c.quote('AAPL')?.seq === 11, { message: 'the gap fill applied' })
    assert.equal(c.isStale('AAPL'), true)
    send(one, { op: 'fresh', symbols: ['AAPL'] })
    await waitFor(() => events.length === 2, { message: 'the fresh event' })
    assert.deepEqual(events[1], { fresh: ['AAPL'] })
    assert.equal(c.isStale('AAPL'), false)
    assert.equal(c.staleSince('AAPL'), null)
    assert.equal(c.staleSince('MSFT'), T1, 'MSFT is still stale')

    // The last frame, then silence, then the socket is cut (1006): the
    // symbols still live are stale from that last frame, not from the cut.
    const lastSentAt = Date.now()
    send(one, { op: 'q', quotes: [{ symbol: 'AAPL', seq: 12, ts: Date.now(), last: 3 }] })
    await waitFor(() => c.quote('AAPL')?.seq === 12, { message: 'the last frame' })
    await sleep(300)
    const cutAt = Date.now()
    one.terminate()
    await waitFor(() => events.length === 3, { message: 'the stale event of the lost connection' })
    const lost = /** @type {{stale: string[], since: number}} */ (events[2])
    assert.deepEqual(lost.stale, ['AAPL', 'IBM'], 'one event for the symbols that were live; MSFT was stale already')
    assert.ok(lost.since >= lastSentAt && lost.since < cutAt - 200, `since ${lost.since} is the last frame's time (${lastSentAt}), not the cut's (${cutAt})`)
    assert.deepEqual(['AAPL', 'MSFT', 'IBM'].map((s) => c.staleSince(s)), [lost.since, T1, lost.since], 'each keeps the earlier of its two')

    // The next connection: AAPL resumed and recovered, MSFT not recovered
    // (a snapshot replaces it), IBM snapshotted; meanwhile this gateway says
    // IBM is stale on its side.
    await waitFor(() => subs.length === 2, { message: 'the sub on the new connection' })
    const two = sockets[1]
    assert.deepEqual(subs[1].since, { AAPL: { seq: 12, epoch: 'e1' }, MSFT: { seq: 20, epoch: 'e1' } })
    send(two, { op: 'ack', id: subs[1].id, symbols: ['AAPL', 'MSFT', 'IBM'], recovered: { AAPL: true, MSFT: false } })
    await waitFor(() => events.length === 4, { message: 'AAPL fresh on its recovery' })
    assert.deepEqual(events[3], { fresh: ['AAPL'] })
    assert.deepEqual(['AAPL', 'MSFT', 'IBM'].map((s) => c.isStale(s)), [false, true, true])
    send(two, { op: 'snap', quotes: [quote({ symbol: 'MSFT', seq: 25, epoch: 'e1' })], recovered: false })
    await waitFor(() => events.length === 5, { message: 'MSFT fresh on its snapshot' })
    assert.deepEqual(events[4], { fresh: ['MSFT'] }, 'the first connection\'s stale MSFT does not outlive it: this gateway never called it stale')
    const T2 = Date.now()
    send(two, { op: 'stale', symbols: ['IBM'], since: T2 })
    // A frame after it, to know it was read.
    send(two, { op: 'q', quotes: [{ symbol: 'AAPL', seq: 13, ts: Date.now(), last: 4 }] })
    await waitFor(() => c.quote('AAPL')?.seq === 13, { message: 'the frame after the stale one' })
    assert.equal(c.staleSince('IBM'), lost.since, 'both hold: the earlier since')
    send(two, { op: 'snap', quotes: [quote({ symbol: 'IBM', seq: 31 })] })
    await waitFor(() => c.quote('IBM')?.seq === 31, { message: 'the IBM snapshot' })
    await sleep(50)
    assert.equal(events.length, 5, 'IBM: restored on the new connection, but this gateway calls it stale: no fresh event')
    assert.equal(c.isStale('IBM'), true)
    assert.equal(c.staleSince('IBM'), T2, 'only the gateway\'s word holds now')
    send(two, { op: 'fresh', symbols: ['IBM'] })
    await waitFor(() => events.length === 6, { message: 'IBM fresh' })
    assert.deepEqual(events[5], { fresh: ['IBM'] })
    assert.deepEqual(['AAPL', 'MSFT', 'IBM'].map((s) => [c.isStale(s), c.staleSince(s)]), [[false, null], [false, null], [false, null]])
  })

  test('an unsubscribed symbol is neither stale nor fresh; close() leaves the rest stale until the next connection restores them', async () => {
    const f = await fake((ws) => {
      ws.send(hello('gw'))
      onClientFrame(ws, ['sub'], (m) => {
        send(ws, { op: 'ack', id: m.id, symbols: m.symbols })
        send(ws, { op: 'snap', quotes: m.symbols.map((/** @type {string} */ s) => quote({ symbol: s, seq: 1 })) })
      })
    })
    const c = client({ url: f.url, symbols: ['AAPL', 'MSFT'] })
    const events = record(c)
    c.connect()
    await waitFor(() => c.quote('MSFT') !== undefined, { message: 'the snapshots' })
    for (const ws of f.sockets) send(ws, { op: 'stale', symbols: ['AAPL', 'MSFT'], since: 1 })
    await waitFor(() => c.isStale('MSFT'), { message: 'stale' })
    c.unsubscribe(['MSFT'])
    assert.equal(c.isStale('MSFT'), false)
    assert.equal(c.staleSince('MSFT'), null)
    c.subscribe(['IBM'])
    await waitFor(() => c.quote('IBM') !== undefined, { message: 'IBM' })
    c.close()
    assert.equal(events.length, 2)
    assert.deepEqual(/** @type {{stale: string[]}} */ (events[1]).stale, ['IBM'], 'close(): the ones still live go stale')
    assert.deepEqual(['AAPL', 'IBM'].map((s) => c.isStale(s)), [true, true])
    c.connect()
    await waitFor(() => !c.isStale('AAPL') && !c.isStale('IBM'), { message: 'fresh after reconnecting' })
    assert.deepEqual(events.slice(2).flatMap((e) => 'fresh' in e ? e.fresh : []).sort(), ['AAPL', 'IBM'])
  })

  test('every 1012 (SERVICE_RESTART, NOT_RESTORED, ISOLATED) is retried at once, only jittered, matched on its code; each loss makes the symbols stale', async () => {
    const closes = [Disconnect.SERVICE_RESTART, Disconnect.NOT_RESTORED, Disconnect.ISOLATED]
    let n = 0
    const f = await fake((ws) => {
      ws.send(hello(`gw${++n}`))
      onClientFrame(ws, ['sub'], (m) => {
        send(ws, { op: 'ack', id: m.id, symbols: m.symbols })
        send(ws, { op: 'snap', quotes: [quote({ symbol: 'AAPL', seq: n })] })
        const close = closes[n - 1]
        if (close) setTimeout(() => ws.close(close.code, close.reason), 20)
      })
    })
    // A failed attempt would wait seconds (initialBackoffMs); a 1012, under restartJitterMs.
    const c = client({ url: f.url, symbols: ['AAPL'], initialBackoffMs: 5000, restartJitterMs: 40, random: () => 0.5 })
    const events = record(c)
    /** @type {{code: number | null, reason: string, delay: number | null, attempt: number}[]} */
    const waits = []
    c.on('status', (s) => { if (s.state === 'reconnecting' && s.retryAt !== null) waits.push({ code: s.closeCode, reason: s.closeReason, delay: s.retryInMs, attempt: s.attempt }) })
    c.connect()
    await waitFor(() => c.status.node === 'gw4' && c.quote('AAPL')?.seq === 4, { message: 'live on the fourth connection' })
    assert.deepEqual(waits, closes.map((d) => ({ code: 1012, reason: d.reason, delay: 20, attempt: 0 })))
    assert.equal(c.isStale('AAPL'), false)
    assert.deepEqual(events.map((e) => 'stale' in e ? 'stale' : 'fresh'), ['stale', 'fresh', 'stale', 'fresh', 'stale', 'fresh'])
  })
})

describe('stale and fresh over SSE', () => {
  test('`event: stale` / `event: fresh` apply as on a WebSocket; a stream that ends makes the live symbols stale', async () => {
    /** @type {import('node:http').ServerResponse[]} */
    const streams = []
    const server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      streams.push(res)
      /** @param {any} frame */
      const event = (frame) => res.write(`event: ${frame.op}\ndata: ${JSON.stringify(frame)}\n\n`)
      event(JSON.parse(hello('sse')))
      event({ op: 'ack', symbols: ['AAPL'] })
      event({ op: 'snap', quotes: [quote({ symbol: 'AAPL', seq: streams.length })] })
      if (streams.length === 1) event({ op: 'stale', symbols: ['AAPL'], since: 1234 })
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    atEnd(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve) }))
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
    const c = client({ url: `ws://127.0.0.1:${port}/ws`, transport: 'sse', symbols: ['AAPL'] })
    const events = record(c)
    c.connect()
    await waitFor(() => events.length === 1, { message: 'stale over SSE' })
    assert.deepEqual(events, [{ stale: ['AAPL'], since: 1234 }])
    streams[0].write(`event: fresh\ndata: ${JSON.stringify({ op: 'fresh', symbols: ['AAPL'] })}\n\n`)
    await waitFor(() => events.length === 2, { message: 'fresh over SSE' })
    assert.deepEqual(events[1], { fresh: ['AAPL'] })
    assert.equal(c.isStale('AAPL'), false)
    // The stream ends without a close event (cut: 1006); the next one's snapshot restores AAPL.
    streams[0].end()
    await waitFor(() => events.length === 4, { message: 'stale on the cut, fresh on the next stream' })
    assert.deepEqual(events.slice(2).map((e) => Object.keys(e)[0]), ['stale', 'fresh'])
    assert.equal(c.quote('AAPL')?.seq, 2)
    assert.equal(c.isStale('AAPL'), false)
  })
})
