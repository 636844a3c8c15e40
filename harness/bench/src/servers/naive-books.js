#!/usr/bin/env node
// The naive order book server, for the bench's book section only: how a
// book feed is served without deltas. It reads the same Redis book channel
// as the gateway (one subscription per book some client holds; each
// message is the change the book script made) and keeps each book whole;
// on every change it resends the full top 25 of both sides, with its
// checksum, to every subscriber, JSON.stringify'd and ws.send'd for each
// one: no deltas, no batching, no shared frame, no backpressure.
//
// It speaks the wsps book frames (sub with `book`, ack, `book`) so the same
// load generator (-adapter=naive-books) and the reference receiver
// (services/protocol/book-receiver.js) read it: every frame is a `book`
// frame, a snapshot that replaces what the client held.

import { WebSocketServer } from 'ws'
import { Redis } from 'ioredis'
import { OrderBook, bookChecksum } from '@wsps/protocol/book'
import { readBook } from '@wsps/shared/books'
import { announce, serverOptions } from './options.js'

/** The one depth it serves. */
const DEPTH = 25

const { port, redisUrl, keys } = serverOptions(8091)

const sub = new Redis(redisUrl)
const cmd = new Redis(redisUrl)
// Both links ready before the first client: a SUBSCRIBE before ioredis' own
// ready check (INFO) would put the link in subscriber mode under it.
await Promise.all([sub, cmd].map((r) => new Promise((resolve) => r.once('ready', resolve))))

/**
 * @typedef {object} Held
 * @property {OrderBook} book
 * @property {number} seq 0 until read
 * @property {string} epoch
 * @property {number} ts
 * @property {Set<import('ws').WebSocket>} clients
 * @property {Promise<void>} read the first read from Redis
 */
/** @type {Map<string, Held>} */
const books = new Map()

/**
 * The first client of a book: subscribe, then read it whole (a change
 * published in between is applied after the read when its seq is newer).
 *
 * @param {string} symbol
 * @returns {Held}
 */
function hold (symbol) {
  const h = books.get(symbol)
  if (h) return h
  /** @type {Held} */
  const held = { book: new OrderBook(), seq: 0, epoch: '', ts: 0, clients: new Set(), read: Promise.resolve() }
  held.read = (async () => {
    await sub.subscribe(keys.bookChannel(symbol))
    const b = await readBook(cmd, keys, symbol)
    if (b && b.seq > held.seq) {
      held.book.reset(b)
      Object.assign(held, { seq: b.seq, epoch: b.epoch, ts: b.ts })
    }
  })()
  books.set(symbol, held)
  return held
}

/**
 * @param {string} symbol
 * @param {Held} h
 */
function frame (symbol, h) {
  const top = h.book.top(DEPTH)
  return { op: 'book', symbol, depth: DEPTH, seq: h.seq, epoch: h.epoch, ts: h.ts, bids: top.bids, asks: top.asks, checksum: bookChecksum(top) }
}

const wss = new WebSocketServer({ host: '127.0.0.1', port, path: '/ws', perMessageDeflate: false, clientTracking: false })
wss.on('connection', (ws) => {
  /** @type {Set<string>} */
  const mine = new Set()
  ws.on('message', async (data) => {
    let msg
    try { msg = JSON.parse(String(data)) } catch { return }
    if (msg.op !== 'sub' || !Array.isArray(msg.symbols) || msg.book !== DEPTH) return
    const held = msg.symbols.map((/** @type {string} */ s) => [s, hold(s)])
    await Promise.all(held.map(([, h]) => h.read))
    for (const [s, h] of held) {
      mine.add(s)
      h.clients.add(ws)
    }
    ws.send(JSON.stringify({ op: 'ack', id: msg.id, book: DEPTH, symbols: [...mine] }))
    for (const [s, h] of held) ws.send(JSON.stringify(frame(s, h)))
  })
  ws.on('error', () => {})
  ws.on('close', () => {
    for (const s of mine) books.get(s)?.clients.delete(ws)
  })
})

sub.on('message', (channel, message) => {
  const symbol = keys.bookSymbolOf(channel)
  const h = symbol === null ? undefined : books.get(symbol)
  if (!symbol || !h) return
  const m = JSON.parse(message)
  if (m.seq <= h.seq) return
  if (m.snapshot || m.sync === false) h.book.reset(m)
  else h.book.apply(m)
  Object.assign(h, { seq: m.seq, epoch: m.epoch, ts: m.ts })
  // The top 25 and its checksum once per change; the text once per subscriber.
  const f = frame(symbol, h)
  for (const ws of h.clients) {
    if (ws.readyState === 1) ws.send(JSON.stringify(f))
  }
})

wss.on('listening', () => announce(port))
