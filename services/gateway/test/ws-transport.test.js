// Frames built once for many connections (text-frame.js) and written by
// the WebSocket transport with one socket write: the bytes are ws's own,
// ws's own queued sends are never overtaken, compression falls back to ws,
// and a reader that stops reading is still cut with 4008. Real sockets.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { test } from 'node:test'
import * as wsModule from 'ws'
import { WebSocket, WebSocketServer } from 'ws'
import { CloseCode, ServerOp } from '@wsps/protocol'
import { waitFor } from '@wsps/testkit'
import { Connection } from '../src/connection.js'
import { Update } from '../src/delta.js'
import { Recovery } from '../src/recovery.js'
import { Sessions } from '../src/session.js'
import { TextFrame } from '../src/text-frame.js'
import { WsTransport, transportOf } from '../src/ws-transport.js'
import { Timelines } from '../src/timelines.js'
import { RateLimit } from '@wsps/shared/rate-limit'
import { gatewayParts, passStats, quote, silent, tick } from './helper.js'

/**
 * A server socket wrapped in a WsTransport, one client connected to it.
 *
 * @param {{deflate?: boolean, events?: import('../src/ws-transport.js').SocketEvents}} [o]
 *   negotiate permessage-deflate; the socket's event handlers
 */
async function pair ({ deflate = false, events = {} } = {}) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: deflate ? { threshold: 0 } : false })
  await once(wss, 'listening')
  const port = /** @type {import('node:net').AddressInfo} */ (wss.address()).port
  const accepted = once(wss, 'connection')
  const client = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: deflate })
  /** @type {{data: string, binary: boolean}[]} */
  const got = []
  client.on('message', (data, binary) => got.push({ data: String(data), binary }))
  await once(client, 'open')
  const [ws] = /** @type {[WebSocket]} */ (await accepted)
  const server = new WsTransport(ws, events)
  const close = async () => {
    client.terminate()
    for (const s of wss.clients) s.terminate()
    await new Promise((resolve) => wss.close(resolve))
  }
  return { server, ws, client, got, close }
}

/**
 * Counts the socket writes of a transport, and which of them were a frame's wire bytes.
 *
 * @param {WsTransport} transport
 */
function spyWrites (transport) {
  const socket = /** @type {import('node:net').Socket} */ (/** @type {any} */ (transport.socket)._socket)
  /** @type {unknown[]} */
  const writes = []
  const write = socket.write.bind(socket)
  socket.write = /** @type {any} */ ((/** @type {any} */ chunk, /** @type {any[]} */ ...rest) => { writes.push(chunk); return write(chunk, ...rest) })
  return writes
}

test('a shared frame is byte for byte the frame ws builds, at every header size', () => {
  const sender = /** @type {any} */ (wsModule).Sender
  for (const n of [0, 1, 125, 126, 127, 65535, 65536, 70_000]) {
    for (const text of ['x'.repeat(n), 'é'.repeat(Math.ceil(n / 2))]) {
      const own = new TextFrame(text)
      const ws = Buffer.concat(sender.frame(Buffer.from(text), { fin: true, opcode: 1, mask: false, readOnly: true, rsv1: false }))
      assert.ok(/** @type {Buffer} */ (own.wire).equals(ws), `payload of ${Buffer.byteLength(text)} bytes`)
      assert.equal(own.payload.toString(), text)
    }
  }
})

test('a shared frame is written with one socket write and arrives as the same text message', async (t) => {
  const { server, got, close } = await pair()
  t.after(close)
  const writes = spyWrites(server)
  const frames = ['{"op":"q","quotes":[{"symbol":"AAPL","seq":2}]}', `{"op":"q","quotes":[{"symbol":"MSFT","seq":9,"x":"${'y'.repeat(300)}"}]}`].map((s) => new TextFrame(s))
  for (const f of frames) server.write(f, ServerOp.QUOTES)
  assert.equal(writes.length, 2, 'one write per frame')
  assert.ok(writes.every((w, i) => w === frames[i].wire), 'the shared Buffer itself, not a copy')
  await waitFor(() => got.length === 2, { timeout: 20_000, message: 'both messages' })
  assert.deepEqual(got, frames.map((f) => ({ data: f.payload.toString(), binary: false })))
})

test('a reader\'s ASCII frame is a string written as latin1 with one socket write, at every header size', async (t) => {
  const { server, ws, got, close } = await pair()
  t.after(close)
  const writes = spyWrites(server)
  // Payloads on each side of the 126 and 65,536-byte header boundaries.
  const texts = [0, 125, 126, 65535, 65536].map((n) => `{"op":"q","quotes":[{"x":"${'a'.repeat(n)}"}]}`)
  const frames = texts.map((text) => TextFrame.ascii(text))
  for (const f of frames) server.write(f, ServerOp.QUOTES)
  assert.deepEqual(writes, frames.map((f) => f.wire), 'one write per frame, the string itself')
  for (const [i, f] of frames.entries()) {
    assert.ok(Buffer.from(/** @type {string} */ (f.wire), 'latin1').equals(/** @type {Buffer} */ (new TextFrame(texts[i]).wire)), 'the bytes of the Buffer frame')
  }
  await waitFor(() => got.length === texts.length, { timeout: 20_000, message: 'every message' })
  assert.deepEqual(got, texts.map((data) => ({ data, binary: false })))
  // Behind a queued send, ws frames its payload (a string) instead.
  ws.send(/** @type {any} */ (new Blob(['{"op":"first"}'])))
  const late = TextFrame.ascii('{"op":"q","quotes":[]}')
  server.write(late, ServerOp.QUOTES)
  await waitFor(() => got.length === texts.length + 2, { timeout: 20_000, message: 'the queued messages' })
  assert.deepEqual(got.slice(-2).map((m) => m.data), ['{"op":"first"}', '{"op":"q","quotes":[]}'])
})

test('with permessage-deflate negotiated, ws frames and compresses the payload instead', async (t) => {
  const { server, client, got, close } = await pair({ deflate: true })
  t.after(close)
  assert.equal(client.extensions, 'permessage-deflate', 'deflate negotiated')
  const writes = spyWrites(server)
  const frame = new TextFrame(`{"op":"q","quotes":[{"symbol":"AAPL","seq":2,"x":"${'z'.repeat(500)}"}]}`)
  server.write(frame, ServerOp.QUOTES)
  await waitFor(() => got.length === 1, { timeout: 20_000, message: 'the message' })
  assert.ok(!writes.includes(frame.wire), 'the uncompressed wire bytes were not written')
  assert.deepEqual(got, [{ data: frame.payload.toString(), binary: false }])
})

test('a shared frame waits behind what ws has queued (never overtakes it)', async (t) => {
  const { server, ws, got, close } = await pair()
  t.after(close)
  const writes = spyWrites(server)
  // A Blob is read asynchronously: ws queues every send behind it meanwhile.
  ws.send(/** @type {any} */ (new Blob(['{"op":"first"}'])))
  ws.send('{"op":"second"}')
  const frame = new TextFrame('{"op":"third"}')
  server.write(frame, ServerOp.QUOTES)
  await waitFor(() => got.length === 3, { timeout: 20_000, message: 'three messages' })
  assert.deepEqual(got.map((m) => m.data), ['{"op":"first"}', '{"op":"second"}', '{"op":"third"}'])
  assert.ok(!writes.includes(frame.wire), 'framed by ws through its queue')
})

test('a reader that stops reading is cut with 4008 while shared frames pile up, counted in bufferedAmount', async (t) => {
  const { server, client, close } = await pair()
  t.after(close)
  const clientSocket = /** @type {import('node:net').Socket} */ (/** @type {any} */ (client)._socket)
  clientSocket.pause()
  const { metrics } = gatewayParts()
  const sendHighWater = 64 * 1024
  const conn = new Connection(server, {
    metrics,
    sendMax: 64 * 1024 * 1024,
    messageRate: new RateLimit(1, 1),
    outbox: { metrics, sendHighWater, slowCloseMs: 200, latest: () => null, bookSnapshot: () => null },
    retry: () => {}
  }, { id: 1, ip: '', grants: null })
  const writes = spyWrites(server)
  conn.subscribe(['AAPL'])
  const x = 'y'.repeat(32 * 1024)
  const update = new Update('AAPL', 2, 1, Date.now(), {}, `{"symbol":"AAPL","seq":2,"x":"${x}"}`)
  const stats = passStats()
  let maxBuffered = 0
  // Kernel buffers take some megabytes first; then the socket's own buffer
  // grows past the high-water mark, and the reader stays slow until cut.
  for (let pass = 1; conn.closeCode === null; pass++) {
    assert.ok(pass < 1_000_000, 'never cut')
    conn.push(update, stats)
    conn.flush(Date.now(), pass, stats)
    maxBuffered = Math.max(maxBuffered, server.bufferedAmount)
    await tick()
  }
  assert.equal(conn.closeCode, CloseCode.SLOW_CONSUMER)
  assert.ok(maxBuffered > sendHighWater, `bufferedAmount (${maxBuffered}) counted the frames written`)
  assert.ok(stats.conflated > 0, 'skipped while slow, before the cut')
  assert.ok(stats.frames > 0 && writes.filter((w) => w === update.frame.wire).length === stats.frames, 'every frame was the one shared write')
})

/**
 * @param {unknown} written what a socket write was given
 * @param {string} text
 * @returns {boolean} whether it was, whole, the text frame `ws` itself builds for the text
 */
function isFrame (written, text) {
  const sender = /** @type {any} */ (wsModule).Sender
  return Buffer.isBuffer(written) && written.equals(Buffer.concat(sender.frame(Buffer.from(text), { fin: true, opcode: 1, mask: false, readOnly: true, rsv1: false })))
}

test('snapshots are framed once and written with one socket write, the same bytes for every subscriber', async (t) => {
  const { metrics, broker, hub } = gatewayParts()
  hub.start()
  t.after(() => hub.stop())
  const ctx = {
    metrics,
    sendMax: 64 * 1024 * 1024,
    messageRate: new RateLimit(100, 100),
    outbox: { metrics, sendHighWater: 64 * 1024, slowCloseMs: 10_000, latest: (/** @type {string} */ s, /** @type {number} */ d) => hub.latest(s, d), bookSnapshot: () => null },
    retry: () => {}
  }
  const sessions = new Sessions({ timelines: new Timelines({ realtime: { hub, recovery: new Recovery({ hub, broker, max: 1000, logger: silent }), bars: null } }), metrics, maxSubscriptions: 100, draining: () => false, authenticate: null, hello: { node: 'n', heartbeatMs: 30_000, limits: {} }, logger: silent })
  const readers = []
  for (let i = 0; i < 4; i++) {
    const p = await pair()
    t.after(p.close)
    const conn = new Connection(p.server, ctx, { id: i + 1, ip: '', grants: null })
    readers.push({ ...p, conn, writes: spyWrites(p.server) })
  }
  const aapl = quote(5, {}, 'AAPL')
  const msft = quote(7, {}, 'MSFT')
  broker.latestValues.set('AAPL', aapl)
  broker.latestValues.set('MSFT', msft)
  const [a, b, c, d] = readers
  const last = (/** @type {typeof a} */ r) => r.writes[r.writes.length - 1]

  // Subscribed before the symbols go live: each symbol's snapshot is one
  // frame shared by its subscribers.
  sessions.subscribe(a.conn, { op: 'sub', symbols: ['AAPL', 'MSFT'], id: 1 })
  sessions.subscribe(b.conn, { op: 'sub', symbols: ['AAPL'], id: 1 })
  await waitFor(() => a.got.length === 3 && b.got.length === 2, { timeout: 20_000, message: 'acks and go-live snapshots' })
  const aaplSnap = `{"op":"snap","quotes":[${aapl}]}`
  const aSnaps = a.writes.filter((w) => isFrame(w, aaplSnap))
  assert.equal(aSnaps.length, 1, 'the AAPL snapshot: one write of the exact frame')
  assert.ok(aSnaps[0] === last(b), 'the same Buffer written to both subscribers')
  assert.deepEqual(b.got[1], { data: aaplSnap, binary: false })
  assert.ok(a.writes.some((w) => isFrame(w, `{"op":"snap","quotes":[${msft}]}`)), 'the MSFT snapshot')

  // Subscribed while live: the snapshot of a subscribe goes out at once,
  // one frame for every subscriber of the same symbols.
  sessions.subscribe(c.conn, { op: 'sub', symbols: ['AAPL', 'MSFT'], id: 2 })
  sessions.subscribe(d.conn, { op: 'sub', symbols: ['AAPL', 'MSFT'], id: 3 })
  const bothSnap = `{"op":"snap","quotes":[${aapl},${msft}]}`
  assert.ok(isFrame(last(c), bothSnap), 'the exact frame, in one write')
  assert.ok(last(c) === last(d), 'shared by both subscribers')
  await waitFor(() => c.got.length === 2 && d.got.length === 2, { timeout: 20_000, message: 'acks and snapshots' })
  for (const r of [c, d]) assert.deepEqual(r.got[1], { data: bothSnap, binary: false })
  const snaps = (await metrics.messagesOut.get()).values.find((v) => v.labels.op === 'snap')
  assert.equal(snaps?.value, 5, 'every snapshot counted once per connection')
})

test('a wrapped socket hands ws events to its server\'s shared handlers, `this` the socket, the transport found from it', async (t) => {
  /** @type {unknown[][]} */
  const seen = []
  const { server, ws, client, close } = await pair({
    events: {
      message (data, isBinary) { seen.push(['message', this, transportOf(this)?.connection, String(data), isBinary]) },
      error (err) { seen.push(['error', this, err.message]) }
    }
  })
  t.after(close)
  const conn = /** @type {import('../src/connection.js').Connection} */ (/** @type {unknown} */ ({ id: 1 }))
  assert.equal(transportOf(ws), server)
  assert.equal(server.connection, null, 'no connection before serve')
  server.serve(conn)
  client.send('hi')
  await waitFor(() => seen.length === 1, { timeout: 20_000, message: 'the message reaches the handler' })
  assert.deepEqual(seen[0], ['message', ws, conn, 'hi', false])
  ws.emit('error', new Error('boom'))
  assert.deepEqual(seen[1], ['error', ws, 'boom'], 'an error with a handler does not throw')
  assert.equal(server.detach(), conn)
  assert.equal(server.connection, null, 'detached')
})
