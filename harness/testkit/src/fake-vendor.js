#!/usr/bin/env node
// A fake streaming market-data vendor, run as its own process by the tests
// (startFakeVendor in services.js): a WebSocket API on /stream that speaks
// one of two real vendors' documented dialects, plus an HTTP control API the
// tests use to look and to misbehave on purpose.
//
// Dialect `alpaca` (market data stream v2; every server message is a JSON
// array of records):
//   on connect                                             <- [{"T":"success","msg":"connected"}]
//   upgrade headers APCA-API-KEY-ID / APCA-API-SECRET-KEY  <- [{"T":"success","msg":"authenticated"}] after `connected`
//   -> {"action":"auth","key":"..","secret":".."}          <- [{"T":"success","msg":"authenticated"}]
//                                                          <- [{"T":"error","code":402,"msg":"auth failed"}]
//                                                          <- [{"T":"error","code":406,"msg":"connection limit exceeded"}], closed
//   no auth within FAKE_VENDOR_AUTH_TIMEOUT_MS             <- [{"T":"error","code":404,"msg":"auth timeout"}], closed
//   anything else before auth                              <- [{"T":"error","code":401,"msg":"not authenticated"}]
//   -> {"action":"subscribe","quotes":[..],"trades":[..],"statuses":[..]}   (unsubscribe alike)
//                                                          <- [{"T":"subscription","trades":[..],"quotes":[..],...}]
//   every FAKE_VENDOR_TICK_MS, one message per connection:
//     per quote-subscribed symbol                          {"T":"q","S":"AAPL","bp":..,"ap":..,"bs":1,"as":2,"t":"<RFC 3339 ns>",..}
//     per trade-subscribed symbol                          {"T":"t","S":"AAPL","i":<id>,"p":..,"s":..,"t":"<RFC 3339 ns>",..}
//   POST /event?kind=cancel|correction|status&symbol=S    {"T":"x",..} / {"T":"c",..} (trade subscribers) / {"T":"s",..} (status subscribers)
//
// Dialect `polygon` (Polygon.io / Massive stocks stream):
//   on connect                                             <- [{"ev":"status","status":"connected","message":"Connected Successfully"}]
//   -> {"action":"auth","params":"KEY"}                    <- [{"ev":"status","status":"auth_success","message":"authenticated"}]
//                                                          <- [{"ev":"status","status":"auth_failed","message":"authentication failed"}]
//                                                          <- [{"ev":"status","status":"max_connections",..}], closed
//   -> {"action":"subscribe","params":"Q.AAPL,T.AAPL"}     <- [{"ev":"status","status":"success","message":"subscribed to: Q.AAPL"},..]
//   every tick: {"ev":"Q","sym":"AAPL","bp":..,"ap":..,"bs":1,"as":2,"t":<ms>,..} and {"ev":"T","sym":"AAPL","p":..,"s":..,"t":<ms>,..}
//
// Control (HTTP, same port):
//   GET  /readyz        200
//   GET  /state         {dialect, connections, authed, conns: [{id, authed, via}], subscribed: {SYM: n},
//                        trades: {SYM: n}, events: [{conn, action, symbols, code?, at (ms)}]}
//                        (subscribed: connections subscribed to the symbol's quotes, or any channel of it)
//   POST /drop          closes every connection abruptly (no close frame)
//   POST /garbage       sends malformed frames to every connection
//   POST /send?raw=...  sends one raw text frame to every connection
//   POST /config?...    changes settings at run time: key, secret, maxConnections, closeOnRefusal (0/1),
//                        authSilent (0/1: auth messages get no answer)
//   POST /event?kind=cancel|correction|status&symbol=S
// Settings come from the environment: WSPS_HOST, WSPS_HTTP_PORT (the names
// the testkit's process starter passes), FAKE_VENDOR_DIALECT (alpaca),
// FAKE_VENDOR_TICK_MS, FAKE_VENDOR_KEY (auth required when set),
// FAKE_VENDOR_SECRET (checked when set), FAKE_VENDOR_MAX_CONNECTIONS
// (authenticated connections per key, checked when one authenticates; 0: no
// limit), FAKE_VENDOR_CLOSE_ON_REFUSAL (1: close the socket with 1008 after a
// refused auth; default: keep it open, answering anything else with 401, so
// both vendor behaviours can be tested), FAKE_VENDOR_AUTH_TIMEOUT_MS
// (alpaca: 10000, as documented), FAKE_VENDOR_TRADES (0: no trade every tick).
// The credentials it was given are never printed and /state never shows them.

import { createServer } from 'node:http'
import { WebSocketServer } from 'ws'

const HOST = process.env.WSPS_HOST ?? '127.0.0.1'
const PORT = Number(process.env.WSPS_HTTP_PORT ?? 0)
const TICK_MS = Number(process.env.FAKE_VENDOR_TICK_MS ?? 100)
const DIALECT = process.env.FAKE_VENDOR_DIALECT === 'polygon' ? 'polygon' : 'alpaca'
const AUTH_TIMEOUT_MS = Number(process.env.FAKE_VENDOR_AUTH_TIMEOUT_MS || 10_000)
/** Whether trade subscribers get a trade every tick (0: only what /send sends, for tests that set `last` themselves). */
const TRADE_TICKS = process.env.FAKE_VENDOR_TRADES !== '0'

/** Settings a test may change at run time (POST /config). */
const settings = {
  key: process.env.FAKE_VENDOR_KEY ?? '',
  secret: process.env.FAKE_VENDOR_SECRET ?? '',
  maxConnections: Number(process.env.FAKE_VENDOR_MAX_CONNECTIONS || 0),
  closeOnRefusal: process.env.FAKE_VENDOR_CLOSE_ON_REFUSAL === '1',
  authSilent: false
}

/** Policy violation: what both vendors close a refused connection with. */
const CLOSE_POLICY = 1008

/**
 * @typedef {object} Conn
 * @property {number} id
 * @property {import('ws').WebSocket} ws
 * @property {Set<string>} quotes
 * @property {Set<string>} trades
 * @property {Set<string>} statuses
 * @property {boolean} authed
 * @property {'' | 'message' | 'headers'} via how it authenticated
 * @property {NodeJS.Timeout | null} authTimer
 */
/** @type {Set<Conn>} */
const conns = new Set()
/** @type {{conn: number, action: string, symbols: string[], code?: number, at: number}[]} */
const events = []
/** @param {{conn: number, action: string, symbols: string[], code?: number}} e */
const note = (e) => events.push({ ...e, at: Date.now() })
let nextId = 1
let price = 100
let tradeId = 1000
/** Last trade per symbol, for cancels and corrections. @type {Map<string, {i: number, p: number, s: number}>} */
const lastTrade = new Map()

const GARBAGE = [
  'this is not json',
  '{"T":"q","S":"AAPL"',
  '[{"T":"q","bp":1}]',
  '[{"T":"q","S":"aapl!!","bp":"x"}]',
  '[{"T":"q","S":"AAPL","bp":"not a number"}]',
  '42',
  'null'
]

/** RFC 3339 with nanoseconds, as Alpaca stamps its records. */
function rfc3339Nanos () {
  const ms = Date.now()
  const nanos = String(Math.floor(Math.random() * 1e6)).padStart(6, '0')
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, `.$1${nanos}Z`)
}

/**
 * @param {Conn} c
 * @param {unknown[]} records
 */
const send = (c, records) => c.ws.send(JSON.stringify(records))

/** Alpaca's words for each outcome. */
const ALPACA_SAYS = {
  connected: () => ({ T: 'success', msg: 'connected' }),
  authenticated: () => ({ T: 'success', msg: 'authenticated' }),
  authFailed: () => ({ T: 'error', code: 402, msg: 'auth failed' }),
  limited: () => ({ T: 'error', code: 406, msg: 'connection limit exceeded' }),
  notAuthed: () => ({ T: 'error', code: 401, msg: 'not authenticated' }),
  alreadyAuthed: () => ({ T: 'error', code: 403, msg: 'already authenticated' }),
  authTimeout: () => ({ T: 'error', code: 404, msg: 'auth timeout' }),
  invalid: () => ({ T: 'error', code: 400, msg: 'invalid syntax' })
}
/** Polygon's. */
const POLYGON_SAYS = {
  connected: () => ({ ev: 'status', status: 'connected', message: 'Connected Successfully' }),
  authenticated: () => ({ ev: 'status', status: 'auth_success', message: 'authenticated' }),
  authFailed: () => ({ ev: 'status', status: 'auth_failed', message: 'authentication failed' }),
  limited: () => ({ ev: 'status', status: 'max_connections', message: 'Maximum number of websocket connections exceeded. You have reached the connection limit for your account.' }),
  notAuthed: () => ({ ev: 'status', status: 'auth_required', message: 'authentication required' }),
  alreadyAuthed: () => ({ ev: 'status', status: 'auth_success', message: 'authenticated' }),
  authTimeout: () => ({ ev: 'status', status: 'auth_timeout', message: 'authentication timeout' }),
  invalid: () => ({ ev: 'status', status: 'error', message: 'invalid syntax' })
}
const say = DIALECT === 'alpaca' ? ALPACA_SAYS : POLYGON_SAYS

/**
 * Checks credentials and the connection limit; answers as the dialect does.
 * @param {Conn} c
 * @param {string} key
 * @param {string | undefined} secret undefined: not checked (Polygon has one key)
 * @param {'message' | 'headers'} via
 */
function authenticate (c, key, secret, via) {
  if (c.authTimer) clearTimeout(c.authTimer)
  c.authTimer = null
  if (settings.authSilent) return note({ conn: c.id, action: 'auth-ignored', symbols: [] })
  const ok = !settings.key || (key === settings.key && (secret === undefined || !settings.secret || secret === settings.secret))
  if (!ok) {
    note({ conn: c.id, action: 'auth-failed', symbols: [], code: 402 })
    send(c, [say.authFailed()])
    if (settings.closeOnRefusal) c.ws.close(CLOSE_POLICY, 'auth failed')
    return
  }
  const authedNow = [...conns].filter((o) => o.authed).length
  if (settings.maxConnections > 0 && authedNow >= settings.maxConnections) {
    note({ conn: c.id, action: 'limited', symbols: [], code: 406 })
    send(c, [say.limited()])
    c.ws.close(CLOSE_POLICY, 'connection limit exceeded')
    return
  }
  c.authed = true
  c.via = via
  note({ conn: c.id, action: 'auth', symbols: [] })
  send(c, [say.authenticated()])
}

/**
 * The (un)subscribe request in channel lists, whatever the dialect.
 * @param {any} msg
 * @returns {{quotes: string[], trades: string[], statuses: string[]}}
 */
function channels (msg) {
  /** @param {unknown} v */
  const list = (v) => (Array.isArray(v) ? v.map(String) : [])
  if (DIALECT === 'alpaca') return { quotes: list(msg.quotes), trades: list(msg.trades), statuses: list(msg.statuses) }
  /** @type {{quotes: string[], trades: string[], statuses: string[]}} */
  const out = { quotes: [], trades: [], statuses: [] }
  for (const p of String(msg.params ?? '').split(',').map((x) => x.trim()).filter(Boolean)) {
    const [prefix, sym] = [p.slice(0, p.indexOf('.')), p.slice(p.indexOf('.') + 1)]
    if (prefix === 'Q') out.quotes.push(sym)
    else if (prefix === 'T') out.trades.push(sym)
  }
  return out
}

/**
 * @param {Conn} c
 * @param {any} msg
 */
function subscribe (c, msg) {
  const on = msg.action === 'subscribe'
  const want = channels(msg)
  for (const [name, set] of /** @type {const} */ ([['quotes', c.quotes], ['trades', c.trades], ['statuses', c.statuses]])) {
    for (const s of want[name]) set[on ? 'add' : 'delete'](s)
  }
  note({ conn: c.id, action: msg.action, symbols: [...new Set([...want.quotes, ...want.trades, ...want.statuses])] })
  if (DIALECT === 'alpaca') {
    const trades = [...c.trades]
    return send(c, [{ T: 'subscription', trades, quotes: [...c.quotes], bars: [], updatedBars: [], dailyBars: [], statuses: [...c.statuses], lulds: [], corrections: trades, cancelErrors: trades }])
  }
  const params = [...want.quotes.map((s) => `Q.${s}`), ...want.trades.map((s) => `T.${s}`)]
  send(c, params.map((p) => ({ ev: 'status', status: 'success', message: `${on ? 'subscribed to' : 'unsubscribed from'}: ${p}` })))
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x')
  const q = url.searchParams
  const reply = (/** @type {unknown} */ body) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(body))
  }
  if (url.pathname === '/readyz') return reply({ status: 'ready' })
  if (url.pathname === '/state') {
    /** @type {Record<string, number>} */
    const subscribed = {}
    /** @type {Record<string, number>} */
    const trades = {}
    for (const c of conns) {
      for (const s of new Set([...c.quotes, ...c.trades, ...c.statuses])) subscribed[s] = (subscribed[s] ?? 0) + 1
      for (const s of c.trades) trades[s] = (trades[s] ?? 0) + 1
    }
    const list = [...conns].map((c) => ({ id: c.id, authed: c.authed, via: c.via }))
    return reply({ dialect: DIALECT, connections: conns.size, authed: list.filter((c) => c.authed).length, conns: list, subscribed, trades, events })
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
    for (const c of conns) c.ws.send(q.get('raw') ?? '')
    return reply({ sent: conns.size })
  }
  if (req.method === 'POST' && url.pathname === '/config') {
    if (q.has('key')) settings.key = q.get('key') ?? ''
    if (q.has('secret')) settings.secret = q.get('secret') ?? ''
    if (q.has('maxConnections')) settings.maxConnections = Number(q.get('maxConnections'))
    if (q.has('closeOnRefusal')) settings.closeOnRefusal = q.get('closeOnRefusal') === '1'
    if (q.has('authSilent')) settings.authSilent = q.get('authSilent') === '1'
    return reply({ maxConnections: settings.maxConnections, closeOnRefusal: settings.closeOnRefusal, authSilent: settings.authSilent })
  }
  if (req.method === 'POST' && url.pathname === '/event') {
    return reply({ sent: event(q.get('kind') ?? '', q.get('symbol') ?? '') })
  }
  res.writeHead(404).end()
})

/**
 * Alpaca's non-quote records for one symbol, to the connections that get
 * them: cancels and corrections go with trades, statuses with statuses.
 * @param {string} kind cancel | correction | status
 * @param {string} S
 * @returns {number} connections sent to
 */
function event (kind, S) {
  const t = rfc3339Nanos()
  const last = lastTrade.get(S) ?? { i: tradeId, p: price, s: 100 }
  /** @type {Record<string, unknown> | null} */
  let rec = null
  if (kind === 'cancel') rec = { T: 'x', S, i: last.i, x: 'V', p: last.p, s: last.s, a: 'C', t, z: 'C' }
  if (kind === 'correction') rec = { T: 'c', S, x: 'V', oi: last.i, op: last.p, os: last.s, oc: ['@'], ci: ++tradeId, cp: last.p + 0.5, cs: last.s, cc: ['@'], t, z: 'C' }
  if (kind === 'status') rec = { T: 's', S, sc: 'H', sm: 'Trading Halt', rc: 'T12', rm: 'Trading Halted; For information requested by NASDAQ', t, z: 'C' }
  if (!rec || DIALECT !== 'alpaca') return 0
  let n = 0
  for (const c of conns) {
    if (!(kind === 'status' ? c.statuses : c.trades).has(S)) continue
    send(c, [rec])
    n++
  }
  return n
}

const wss = new WebSocketServer({ server, path: '/stream' })
wss.on('connection', (ws, req) => {
  /** @type {Conn} */
  const conn = { id: nextId++, ws, quotes: new Set(), trades: new Set(), statuses: new Set(), authed: !settings.key, via: '', authTimer: null }
  conns.add(conn)
  note({ conn: conn.id, action: 'connect', symbols: [] })
  send(conn, [say.connected()])
  const headerKey = req.headers['apca-api-key-id']
  if (DIALECT === 'alpaca' && settings.key && typeof headerKey === 'string') {
    const secret = req.headers['apca-api-secret-key']
    authenticate(conn, headerKey, typeof secret === 'string' ? secret : '', 'headers')
  } else if (settings.key && DIALECT === 'alpaca') {
    conn.authTimer = setTimeout(() => {
      if (conn.authed) return
      note({ conn: conn.id, action: 'auth-timeout', symbols: [], code: 404 })
      send(conn, [say.authTimeout()])
      ws.close(CLOSE_POLICY, 'auth timeout')
    }, AUTH_TIMEOUT_MS)
  }
  ws.on('message', (data) => {
    let msg
    try { msg = JSON.parse(String(data)) } catch { return send(conn, [say.invalid()]) }
    if (msg?.action === 'auth') {
      if (conn.authed && settings.key) return send(conn, [say.alreadyAuthed()])
      if (DIALECT === 'alpaca') return authenticate(conn, String(msg.key ?? ''), String(msg.secret ?? ''), 'message')
      return authenticate(conn, String(msg.params ?? ''), undefined, 'message')
    }
    if (!conn.authed) return send(conn, [say.notAuthed()])
    if (msg?.action === 'subscribe' || msg?.action === 'unsubscribe') subscribe(conn, msg)
  })
  ws.on('close', () => {
    if (conn.authTimer) clearTimeout(conn.authTimer)
    conns.delete(conn)
    note({ conn: conn.id, action: 'disconnect', symbols: [...new Set([...conn.quotes, ...conn.trades, ...conn.statuses])] })
  })
})

setInterval(() => {
  price += 0.01
  const bp = Math.round(price * 100) / 100
  const ap = Math.round(bp * 100 + 2) / 100
  const ms = Date.now()
  const t = rfc3339Nanos()
  for (const c of conns) {
    if (!c.authed) continue
    /** @type {unknown[]} */
    const records = []
    for (const S of c.quotes) {
      records.push(DIALECT === 'alpaca'
        ? { T: 'q', S, bx: 'V', bp, bs: 1, ax: 'V', ap, as: 2, t, c: ['R'], z: 'C' }
        : { ev: 'Q', sym: S, bx: 4, bp, bs: 1, ax: 7, ap, as: 2, c: 0, t: ms, q: tradeId, z: 3 })
    }
    for (const S of TRADE_TICKS ? c.trades : []) {
      const trade = { i: ++tradeId, p: Math.round(bp * 100 + 1) / 100, s: 100 }
      lastTrade.set(S, trade)
      records.push(DIALECT === 'alpaca'
        ? { T: 't', S, i: trade.i, x: 'V', p: trade.p, s: trade.s, t, c: ['@'], z: 'C' }
        : { ev: 'T', sym: S, x: 4, i: String(trade.i), z: 3, p: trade.p, s: trade.s, c: [0], t: ms, q: trade.i })
    }
    if (records.length) send(c, records)
  }
}, TICK_MS)

server.listen(PORT, HOST)
for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) process.on(signal, () => process.exit(0))
