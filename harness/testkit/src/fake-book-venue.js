#!/usr/bin/env node
// A fake crypto venue streaming order books, run as its own process by the
// tests (startFakeBookVenue in services.js). Each symbol has a reference
// book, moved at random from a seed (random.js) every FAKE_VENUE_TICK_MS
// while some connection subscribes it; every point it passes through is kept
// (its top 10, canonical) so a test can check that what a client showed as
// in sync is a book the venue really had, in order. Faults are injected on
// request, one message each.
//
// Dialect `binance` (spot diff depth, "How to manage a local order book correctly"):
//   -> {"method":"SUBSCRIBE","params":["bk1usdt@depth@100ms"],"id":1}     <- {"result":null,"id":1}
//   every tick, per subscribed symbol   <- {"e":"depthUpdate","E":<ms>,"s":"BK1USDT","U":<first id>,"u":<last id>,"b":[["100.5","1.25"]],"a":[...]}
//   GET /api/v3/depth?symbol=BK1USDT&limit=N                                {"lastUpdateId":<id>,"bids":[[p,q],...],"asks":[...]}
//   faults: gap (the next event is not sent), reorder (the next two are sent in reverse order),
//           stale (the next snapshot is the book as it was 100 events before)
//
// Dialect `kraken` (spot WebSocket v2, channel book):
//   -> {"method":"subscribe","params":{"channel":"book","symbol":["BK1/USD"],"depth":10}}
//   <- {"method":"subscribe","result":{"channel":"book","depth":10,"snapshot":true,"symbol":"BK1/USD"},"success":true,...}
//   <- {"channel":"book","type":"snapshot","data":[{"symbol":"BK1/USD","bids":[{"price":100.5,"qty":1.25000000}],"asks":[...],"checksum":<crc32>}]}
//   every tick   <- {"channel":"book","type":"update","data":[{"symbol":..,"bids":[..],"asks":[..],"checksum":..,"timestamp":..}]}
//   numbers with the venue's precision (qty: 8 decimals, trailing zeros kept); a level pushed out of the
//   subscribed depth by an insert is not deleted in the message (as Kraken does); the checksum is Kraken's,
//   over the top 10 of the reference.
//   faults: checksum (the next update's checksum is wrong)
//   any other subscribe (e.g. ticker) is acknowledged and nothing is sent for it.
//
// Dialect `coinbase` (Advanced Trade, channel level2):
//   -> {"type":"subscribe","product_ids":["BK1-USD"],"channel":"level2"}
//   <- {"channel":"subscriptions","timestamp":..,"sequence_num":<n>,"events":[{"subscriptions":{"level2":["BK1-USD"]}}]}
//   <- {"channel":"l2_data","timestamp":..,"sequence_num":<n>,"events":[{"type":"snapshot","product_id":"BK1-USD","updates":[{"side":"bid"|"offer","event_time":..,"price_level":"100.5","new_quantity":"1.25000000"}]}]}
//   every tick   <- the same with "type":"update" and the levels that changed ("0": deleted)
//   sequence_num counts every message of the connection, whatever its channel.
//   faults: gap (the next message of the symbol is not sent: its sequence_num is skipped)
//
// Control (HTTP, same port):
//   GET  /readyz
//   GET  /state                      {dialect, connections, subscribed: {SYM: n}, snapshots (REST served), faults (injected so far)}
//   GET  /history?symbol=S           {points: ["<JSON of the top 10: {bids, asks}>", ...]} oldest first
//   POST /fault?kind=K&symbol=S      the next message of S carries fault K
//   POST /drop                       closes every connection abruptly (no close frame)
// Settings: WSPS_HOST, WSPS_HTTP_PORT, FAKE_VENUE_DIALECT (binance), FAKE_VENUE_SEED (1),
// FAKE_VENUE_TICK_MS (50), FAKE_VENUE_LEVELS (levels per side of a reference book: 30).

import { createServer } from 'node:http'
import { crc32 } from 'node:zlib'
import { WebSocketServer } from 'ws'
import { decimal } from '@wsps/protocol/book'
import { random } from './random.js'

const HOST = process.env.WSPS_HOST ?? '127.0.0.1'
const PORT = Number(process.env.WSPS_HTTP_PORT ?? 0)
const DIALECT = ['kraken', 'coinbase'].includes(process.env.FAKE_VENUE_DIALECT ?? '') ? process.env.FAKE_VENUE_DIALECT : 'binance'
const SEED = Number(process.env.FAKE_VENUE_SEED ?? 1)
const TICK_MS = Number(process.env.FAKE_VENUE_TICK_MS ?? 50)
const LEVELS = Number(process.env.FAKE_VENUE_LEVELS ?? 30)
/** The top kept per point of the history (what a client at depth 10 holds). */
const HISTORY_DEPTH = 10
/** Full books kept for stale snapshots. */
const PAST = 100
/** Price ticks between the best bid and the best ask (fixed mid: a book that never crosses). */
const MID = 2000

/**
 * @typedef {object} Reference
 * @property {Map<number, number>} bids price tick -> qty in 1e-8 units
 * @property {Map<number, number>} asks
 * @property {number} id the last update id
 * @property {() => number} rand
 * @property {string[]} history JSON of the top HISTORY_DEPTH after every move
 * @property {{id: number, bids: [string, string][], asks: [string, string][]}[]} past full books, newest last
 * @property {Set<string>} faults pending, one message each
 */

/** @type {Map<string, Reference>} */
const books = new Map()
let snapshotsServed = 0
/** @type {Record<string, number>} */
const faultsDone = {}

/** @param {number} tick */
const priceText = (tick) => (tick / 2).toFixed(1)
/** @param {number} units */
const qtyText = (units) => (units / 1e8).toFixed(8)

/** @param {string} symbol */
function reference (symbol) {
  let b = books.get(symbol)
  if (b) return b
  let h = SEED
  for (const c of symbol) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0
  const rand = random(h)
  b = { bids: new Map(), asks: new Map(), id: 1000, rand, history: [], past: [], faults: new Set() }
  for (let i = 1; i <= LEVELS; i++) {
    b.bids.set(MID - i, size(rand))
    b.asks.set(MID + i, size(rand))
  }
  books.set(symbol, b)
  remember(b)
  return b
}

/** @param {() => number} rand */
const size = (rand) => 1 + Math.floor(rand() * 500) * 5_000_000

/**
 * @param {Map<number, number>} side
 * @param {1 | -1} sign 1: bids (highest first)
 * @param {number} [n]
 * @returns {[number, number][]}
 */
const sorted = (side, sign, n = Infinity) => [...side].sort((x, y) => sign * (y[0] - x[0])).slice(0, n)

/** @param {[number, number][]} levels canonical, as wsps shows them */
const canonical = (levels) => levels.map(([t, q]) => [decimal(priceText(t)), decimal(qtyText(q))])

/** @param {Reference} b */
function remember (b) {
  b.history.push(JSON.stringify({ bids: canonical(sorted(b.bids, 1, HISTORY_DEPTH)), asks: canonical(sorted(b.asks, -1, HISTORY_DEPTH)) }))
  b.past.push({ id: b.id, bids: sorted(b.bids, 1).map(([t, q]) => [priceText(t), qtyText(q)]), asks: sorted(b.asks, -1).map(([t, q]) => [priceText(t), qtyText(q)]) })
  if (b.past.length > PAST) b.past.shift()
}

/**
 * Moves a book by 1 to 3 changes: a size changed, a level deleted or one added.
 * @param {Reference} b
 * @returns {{bids: Map<number, number>, asks: Map<number, number>}} what changed (qty 0: deleted)
 */
function move (b) {
  const changed = { bids: new Map(), asks: new Map() }
  const n = 1 + Math.floor(b.rand() * 3)
  for (let i = 0; i < n; i++) {
    const name = b.rand() < 0.5 ? 'bids' : 'asks'
    const side = b[name]
    const sign = name === 'bids' ? -1 : 1
    const r = b.rand()
    // Mostly around the top 10 and its edge, where it shows and where a
    // level an insert pushed out of a depth-10 window is then deleted unseen.
    const depth = 1 + Math.floor(b.rand() * (b.rand() < 0.6 ? 12 : LEVELS))
    const tick = MID + sign * depth
    if (r < 0.3 && side.size > LEVELS / 2 && side.has(tick)) {
      side.delete(tick)
      changed[name].set(tick, 0)
    } else if (side.has(tick) || side.size < LEVELS + 10) {
      const q = size(b.rand)
      side.set(tick, q)
      changed[name].set(tick, q)
    }
  }
  b.id += Math.max(1, changed.bids.size + changed.asks.size)
  remember(b)
  return changed
}

/** @param {Map<number, number>} m */
const pairs = (m) => [...m].map(([t, q]) => [priceText(t), qtyText(q)])

/**
 * Kraken's checksum of the reference: the top 10 asks then bids, price and qty as sent, without "." and leading zeros.
 * @param {Reference} b
 */
function krakenChecksum (b) {
  const digits = (/** @type {string} */ s) => s.replace('.', '').replace(/^0+/, '')
  const side = (/** @type {[number, number][]} */ levels) => levels.map(([t, q]) => digits(priceText(t)) + digits(qtyText(q))).join('')
  return crc32(side(sorted(b.asks, -1, 10)) + side(sorted(b.bids, 1, 10)))
}

/**
 * Kraken levels as JSON text, numbers with the venue's precision.
 * @param {[number, number][]} levels
 */
const krakenLevels = (levels) => `[${levels.map(([t, q]) => `{"price":${priceText(t)},"qty":${qtyText(q)}}`).join(',')}]`

/**
 * @typedef {object} Conn
 * @property {import('ws').WebSocket} ws
 * @property {Map<string, {depth: number, window: {bids: [number, number][], asks: [number, number][]}, held: (() => void)[]}>} subs by wsps symbol
 * @property {number} seq coinbase: the last sequence_num sent
 */
/** @type {Set<Conn>} */
const conns = new Set()

/** @param {string} venue @returns {string} */
const wspsSymbol = (venue) => (DIALECT === 'kraken' ? venue.replace('/', '-') : venue.toUpperCase())

/** @param {Conn} c @param {string} symbol */
function krakenSnapshot (c, symbol) {
  const b = reference(symbol)
  const sub = /** @type {NonNullable<ReturnType<Conn['subs']['get']>>} */ (c.subs.get(symbol))
  sub.window = { bids: sorted(b.bids, 1, sub.depth), asks: sorted(b.asks, -1, sub.depth) }
  c.ws.send(`{"channel":"book","type":"snapshot","data":[{"symbol":"${symbol.replace('-', '/')}","bids":${krakenLevels(sub.window.bids)},"asks":${krakenLevels(sub.window.asks)},"checksum":${krakenChecksum(b)}}]}`)
}

/**
 * The levels of a Kraken update: those of the window that changed or
 * entered it, and deletions only of levels deleted from the book (one an
 * insert pushed out of the depth is not deleted: the client cuts it).
 * @param {Reference} b
 * @param {{bids: [number, number][], asks: [number, number][]}} before
 * @param {{bids: [number, number][], asks: [number, number][]}} after
 */
function krakenDiff (b, before, after) {
  /** @param {'bids' | 'asks'} name */
  const side = (name) => {
    const now = new Map(after[name])
    const was = new Map(before[name])
    /** @type {[number, number][]} */
    const out = []
    for (const [t] of before[name]) if (!now.has(t) && !b[name].has(t)) out.push([t, 0])
    for (const [t, q] of after[name]) if (was.get(t) !== q) out.push([t, q])
    return out
  }
  return { bids: side('bids'), asks: side('asks') }
}

const wss = new WebSocketServer({ noServer: true })
wss.on('connection', (ws) => {
  /** @type {Conn} */
  const c = { ws, subs: new Map(), seq: -1 }
  conns.add(c)
  ws.on('close', () => conns.delete(c))
  ws.on('message', (data) => {
    let msg
    try { msg = JSON.parse(String(data)) } catch { return }
    if (DIALECT === 'binance') {
      const on = msg?.method === 'SUBSCRIBE'
      if (!on && msg?.method !== 'UNSUBSCRIBE') return
      for (const p of Array.isArray(msg.params) ? msg.params : []) {
        const m = /^([a-z0-9]+)@depth/.exec(String(p))
        if (!m) continue
        const symbol = wspsSymbol(m[1])
        if (on) {
          reference(symbol)
          c.subs.set(symbol, { depth: 0, window: { bids: [], asks: [] }, held: [] })
        } else c.subs.delete(symbol)
      }
      return ws.send(JSON.stringify({ result: null, id: msg.id }))
    }
    if (DIALECT === 'coinbase') return coinbaseSubscribe(c, msg)
    const on = msg?.method === 'subscribe'
    if (!on && msg?.method !== 'unsubscribe') return
    const params = msg.params ?? {}
    const symbols = Array.isArray(params.symbol) ? params.symbol.map(String) : []
    for (const v of symbols) {
      const result = { channel: params.channel, symbol: v, ...(params.channel === 'book' ? { depth: params.depth ?? 10, snapshot: true } : {}) }
      ws.send(JSON.stringify({ method: msg.method, result, success: true, time_in: new Date().toISOString(), time_out: new Date().toISOString() }))
      if (params.channel !== 'book') continue
      const symbol = wspsSymbol(v)
      if (on) {
        c.subs.set(symbol, { depth: Number(params.depth ?? 10), window: { bids: [], asks: [] }, held: [] })
        krakenSnapshot(c, symbol)
      } else c.subs.delete(symbol)
    }
  })
})

setInterval(() => {
  const live = new Set([...conns].flatMap((c) => [...c.subs.keys()]))
  for (const symbol of live) {
    const b = reference(symbol)
    const firstId = b.id + 1
    const changed = move(b)
    for (const c of conns) {
      const sub = c.subs.get(symbol)
      if (!sub) continue
      if (DIALECT === 'binance') {
        const frame = JSON.stringify({ e: 'depthUpdate', E: Date.now(), s: symbol, U: firstId, u: b.id, b: pairs(changed.bids), a: pairs(changed.asks) })
        if (fault(b, 'gap')) continue
        if (fault(b, 'reorder')) {
          sub.held.push(() => c.ws.send(frame))
          continue
        }
        c.ws.send(frame)
        for (const send of sub.held.splice(0)) send()
      } else if (DIALECT === 'coinbase') {
        const seq = ++c.seq
        if (fault(b, 'gap')) continue
        coinbaseSend(c, seq, [{ type: 'update', product_id: symbol, updates: coinbaseUpdates(changed) }])
      } else {
        const after = { bids: sorted(b.bids, 1, sub.depth), asks: sorted(b.asks, -1, sub.depth) }
        const diff = krakenDiff(b, sub.window, after)
        sub.window = after
        if (diff.bids.length === 0 && diff.asks.length === 0) continue
        const checksum = krakenChecksum(b) ^ (fault(b, 'checksum') ? 1 : 0)
        c.ws.send(`{"channel":"book","type":"update","data":[{"symbol":"${symbol.replace('-', '/')}","bids":${krakenLevels(diff.bids)},"asks":${krakenLevels(diff.asks)},"checksum":${checksum >>> 0},"timestamp":"${new Date().toISOString()}"}]}`)
      }
    }
  }
}, TICK_MS)

/**
 * @param {{bids: Map<number, number> | [number, number][], asks: Map<number, number> | [number, number][]}} levels
 */
function coinbaseUpdates ({ bids, asks }) {
  const event_time = new Date().toISOString()
  const side = (/** @type {string} */ name, /** @type {Iterable<[number, number]>} */ levels) => [...levels].map(([t, q]) => ({ side: name, event_time, price_level: priceText(t), new_quantity: qtyText(q) }))
  return [...side('bid', bids), ...side('offer', asks)]
}

/** @param {Conn} c @param {number} seq @param {unknown[]} events */
function coinbaseSend (c, seq, events) {
  c.ws.send(JSON.stringify({ channel: events.length && /** @type {any} */ (events[0]).subscriptions ? 'subscriptions' : 'l2_data', client_id: '', timestamp: new Date().toISOString(), sequence_num: seq, events }))
}

/** @param {Conn} c @param {any} msg */
function coinbaseSubscribe (c, msg) {
  const on = msg?.type === 'subscribe'
  if (!on && msg?.type !== 'unsubscribe') return
  const ids = Array.isArray(msg.product_ids) ? msg.product_ids.map(String) : []
  const level2 = msg.channel === 'level2'
  for (const symbol of level2 ? ids : []) {
    if (on) c.subs.set(symbol, { depth: 0, window: { bids: [], asks: [] }, held: [] })
    else c.subs.delete(symbol)
  }
  coinbaseSend(c, ++c.seq, [{ subscriptions: { [String(msg.channel)]: on ? ids : [] } }])
  if (!on || !level2) return
  for (const symbol of ids) {
    const b = reference(symbol)
    coinbaseSend(c, ++c.seq, [{ type: 'snapshot', product_id: symbol, updates: coinbaseUpdates({ bids: sorted(b.bids, 1), asks: sorted(b.asks, -1) }) }])
  }
}

/**
 * Takes a pending fault.
 * @param {Reference} b
 * @param {string} kind
 */
function fault (b, kind) {
  if (!b.faults.delete(kind)) return false
  faultsDone[kind] = (faultsDone[kind] ?? 0) + 1
  return true
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x')
  const q = url.searchParams
  const reply = (/** @type {unknown} */ body, status = 200) => {
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(JSON.stringify(body))
  }
  if (url.pathname === '/readyz') return reply({ status: 'ready' })
  if (url.pathname === '/state') {
    /** @type {Record<string, number>} */
    const subscribed = {}
    for (const c of conns) for (const s of c.subs.keys()) subscribed[s] = (subscribed[s] ?? 0) + 1
    return reply({ dialect: DIALECT, connections: conns.size, subscribed, snapshots: snapshotsServed, faults: faultsDone })
  }
  if (url.pathname === '/history') return reply({ points: books.get(q.get('symbol') ?? '')?.history ?? [] })
  if (req.method === 'POST' && url.pathname === '/drop') {
    for (const c of conns) c.ws.terminate()
    return reply({ dropped: true })
  }
  if (req.method === 'POST' && url.pathname === '/fault') {
    reference(q.get('symbol') ?? '').faults.add(q.get('kind') ?? '')
    return reply({ pending: [...reference(q.get('symbol') ?? '').faults] })
  }
  if (DIALECT === 'binance' && url.pathname === '/api/v3/depth') {
    const b = books.get(q.get('symbol') ?? '')
    if (!b) return reply({ code: -1121, msg: 'Invalid symbol.' }, 400)
    snapshotsServed++
    const limit = Number(q.get('limit') ?? 100)
    const at = fault(b, 'stale') ? b.past[0] : b.past[b.past.length - 1]
    return reply({ lastUpdateId: at.id, bids: at.bids.slice(0, limit), asks: at.asks.slice(0, limit) })
  }
  res.writeHead(404).end()
})
server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)))
server.listen(PORT, HOST)
for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) process.on(signal, () => process.exit(0))
