#!/usr/bin/env node
// A fake streaming market-data vendor, run as its own process by the tests
// (startFakeVendor in services.js): Alpaca-style WebSocket API on /stream, plus
// an HTTP control API the tests use to look and to misbehave on purpose.
//
// Wire (Alpaca-like): every server message is a JSON array of records.
//   -> {"action":"auth","key":"..."}                       <- [{"T":"success","msg":"authenticated"}]
//   -> {"action":"subscribe","quotes":["AAPL"]}           <- [{"T":"subscription","quotes":[...all]}]
//   -> {"action":"unsubscribe","quotes":["AAPL"]}         <- [{"T":"subscription","quotes":[...all]}]
//   every FAKE_VENDOR_TICK_MS, per subscribed symbol:     <- [{"T":"q","S":"AAPL","bp":..,"ap":..,"bs":..,"as":..,"t":"<ISO>"}]
// Control (HTTP, same port):
//   GET  /readyz        200
//   GET  /state         {connections, subscribed: {SYM: connections subscribed}, events: [{conn, action, symbols}]}
//   POST /drop          closes every connection abruptly (no close frame)
//   POST /garbage       sends malformed frames to every connection
//   POST /send?raw=...  sends one raw text frame to every connection
// Settings come from the environment: WSPS_HOST, WSPS_HTTP_PORT (the names
// the testkit's process starter passes), FAKE_VENDOR_TICK_MS,
// FAKE_VENDOR_KEY (auth required when set).

import { createServer } from 'node:http'
import { WebSocketServer } from 'ws'

const HOST = process.env.WSPS_HOST ?? '127.0.0.1'
const PORT = Number(process.env.WSPS_HTTP_PORT ?? 0)
const TICK_MS = Number(process.env.FAKE_VENDOR_TICK_MS ?? 100)
const KEY = process.env.FAKE_VENDOR_KEY ?? ''

/** @typedef {{id: number, ws: import('ws').WebSocket, symbols: Set<string>, authed: boolean}} Conn */
/** @type {Set<Conn>} */
const conns = new Set()
/** @type {{conn: number, action: string, symbols: string[]}[]} */
const events = []
let nextId = 1
let price = 100

const GARBAGE = [
  'this is not json',
  '{"T":"q","S":"AAPL"',
  '[{"T":"q","bp":1}]',
  '[{"T":"q","S":"aapl!!","bp":"x"}]',
  '[{"T":"q","S":"AAPL","bp":"not a number"}]',
  '42',
  'null'
]

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x')
  const reply = (/** @type {unknown} */ body) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(body))
  }
  if (url.pathname === '/readyz') return reply({ status: 'ready' })
  if (url.pathname === '/state') {
    /** @type {Record<string, number>} */
    const subscribed = {}
    for (const c of conns) for (const s of c.symbols) subscribed[s] = (subscribed[s] ?? 0) + 1
    return reply({ connections: conns.size, subscribed, events })
  }
  if (req.method === 'POST' && url.pathname === '/drop') {
    for (const c of conns) c.ws.terminate()
    return reply({ dropped: true })
  }
  if (req.method === 'POST' && url.pathname === '/garbage') {
    for (const c of conns) {
      for (const g of GARBAGE) c.ws.send(g)
      c.ws.send(Buffer.from([0xff, 0x00, 0xfe]), { binary: true })
    }
    return reply({ frames: GARBAGE.length + 1 })
  }
  if (req.method === 'POST' && url.pathname === '/send') {
    for (const c of conns) c.ws.send(url.searchParams.get('raw') ?? '')
    return reply({ sent: conns.size })
  }
  res.writeHead(404).end()
})

const wss = new WebSocketServer({ server, path: '/stream' })
wss.on('connection', (ws) => {
  /** @type {Conn} */
  const conn = { id: nextId++, ws, symbols: new Set(), authed: !KEY }
  conns.add(conn)
  events.push({ conn: conn.id, action: 'connect', symbols: [] })
  ws.send(JSON.stringify([{ T: 'success', msg: 'connected' }]))
  ws.on('message', (data) => {
    let msg
    try { msg = JSON.parse(String(data)) } catch { return ws.send(JSON.stringify([{ T: 'error', code: 400, msg: 'invalid syntax' }])) }
    if (msg.action === 'auth') {
      conn.authed = msg.key === KEY
      events.push({ conn: conn.id, action: conn.authed ? 'auth' : 'auth-failed', symbols: [] })
      return ws.send(JSON.stringify([conn.authed ? { T: 'success', msg: 'authenticated' } : { T: 'error', code: 402, msg: 'auth failed' }]))
    }
    if (!conn.authed) return ws.send(JSON.stringify([{ T: 'error', code: 401, msg: 'not authenticated' }]))
    if (msg.action === 'subscribe' || msg.action === 'unsubscribe') {
      const symbols = Array.isArray(msg.quotes) ? msg.quotes.map(String) : []
      for (const s of symbols) conn.symbols[msg.action === 'subscribe' ? 'add' : 'delete'](s)
      events.push({ conn: conn.id, action: msg.action, symbols })
      ws.send(JSON.stringify([{ T: 'subscription', quotes: [...conn.symbols] }]))
    }
  })
  ws.on('close', () => {
    conns.delete(conn)
    events.push({ conn: conn.id, action: 'disconnect', symbols: [...conn.symbols] })
  })
})

setInterval(() => {
  price += 0.01
  const t = new Date().toISOString()
  for (const c of conns) {
    if (c.symbols.size === 0) continue
    const bp = Math.round(price * 100) / 100
    c.ws.send(JSON.stringify([...c.symbols].map((S) => ({ T: 'q', S, bp, ap: bp + 0.02, bs: 1, as: 2, t }))))
  }
}, TICK_MS)

server.listen(PORT, HOST)
for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) process.on(signal, () => process.exit(0))
