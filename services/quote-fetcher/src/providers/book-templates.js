// How a venue streams its order books (WSPS_STREAM_BOOKS): one template per
// venue style. A template knows the venue's (un)subscribe messages for the
// depth channel, its symbol names, how to read its book messages, and which
// book state machine keeps them consistent (book-binance.js,
// book-kraken.js). Book messages are read here and never reach the quote
// mapping.

import { DepthBook } from './book-binance.js'
import { KrakenBook } from './book-kraken.js'
import { LevelsBook } from './book-coinbase.js'
import { pairLevels, venueLevel } from './venue-levels.js'

/**
 * @typedef {import('@wsps/protocol/book').Level} Level
 * @typedef {'applied' | 'buffered' | 'dropped' | 'gap' | 'checksum' | 'stale_snapshot'} Step
 * @typedef {DepthBook | KrakenBook | LevelsBook} VenueBook
 * @typedef {{symbol: string, feed: (book: any) => Step}} BookRecord one symbol's message, to feed to its book
 *
 * @typedef {object} BookTemplate
 * @property {readonly number[] | null} depths the depths the venue streams (WSPS_STREAM_BOOK_DEPTH); null: it streams the whole book, any depth is kept
 * @property {'rest' | 'resubscribe'} resync how a lost book is got again: a REST snapshot (WSPS_STREAM_BOOK_SNAPSHOT_URL), or the channel subscribed again (the venue sends a snapshot)
 * @property {readonly string[]} textFields fields whose JSON number text is kept as sent (the venue's checksum is over it)
 * @property {(symbols: string[], depth: number) => string[]} subscribe
 * @property {(symbols: string[], depth: number) => string[]} unsubscribe
 * @property {(message: unknown) => {records: BookRecord[], malformed: number} | null} read null: not a book message
 * @property {(depth: number) => VenueBook} create
 * @property {(body: unknown) => import('./book-binance.js').DepthSnapshot | null} [snapshotOf] a REST snapshot, read; null: not one
 * @property {(message: unknown) => number | undefined} [sequence] the connection's message number (every message counts): one
 *   missing loses every book of the connection
 */

/** @param {unknown} v @returns {v is Record<string, any>} */
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v)

let nextId = 1

/**
 * Binance spot (and futures: `pu`) diff depth, `<symbol>@depth@100ms`;
 * bare events or wrapped in a combined stream's `{stream, data}`.
 * @type {BookTemplate}
 */
const binanceDepth = {
  depths: [5, 10, 20, 50, 100, 500, 1000],
  resync: 'rest',
  textFields: [],
  subscribe: (symbols) => [JSON.stringify({ method: 'SUBSCRIBE', params: symbols.map((s) => `${s.toLowerCase()}@depth@100ms`), id: nextId++ })],
  unsubscribe: (symbols) => [JSON.stringify({ method: 'UNSUBSCRIBE', params: symbols.map((s) => `${s.toLowerCase()}@depth@100ms`), id: nextId++ })],
  read (message) {
    // The answer to a (un)subscribe: {"result":null,"id":1}.
    if (isObject(message) && 'id' in message && 'result' in message && !('e' in message)) return { records: [], malformed: 0 }
    const e = isObject(message) && isObject(message.data) && typeof message.stream === 'string' ? message.data : message
    if (!isObject(e) || e.e !== 'depthUpdate') return null
    const bids = pairLevels(e.b)
    const asks = pairLevels(e.a)
    const ids = [e.U, e.u, ...(e.pu === undefined ? [] : [e.pu])]
    if (typeof e.s !== 'string' || bids === null || asks === null || !ids.every(Number.isSafeInteger)) return { records: [], malformed: 1 }
    const event = { U: e.U, u: e.u, ...(e.pu === undefined ? {} : { pu: e.pu }), bids, asks }
    return { records: [{ symbol: e.s.toUpperCase(), feed: (/** @type {DepthBook} */ book) => book.event(event) }], malformed: 0 }
  },
  create: () => new DepthBook(),
  snapshotOf (body) {
    if (!isObject(body) || !Number.isSafeInteger(body.lastUpdateId)) return null
    const bids = pairLevels(body.bids)
    const asks = pairLevels(body.asks)
    if (bids === null || asks === null || bids.some(([, s]) => s === '0') || asks.some(([, s]) => s === '0')) return null
    return { lastUpdateId: body.lastUpdateId, bids, asks }
  }
}

/**
 * Kraken's wsps symbol (`BTC-USD`) and venue symbol (`BTC/USD`).
 * @param {string} s
 */
const krakenSymbol = (s) => s.replace('-', '/')

/**
 * @param {unknown} side `[{"price": 45283.5, "qty": 0.10000000}, ...]`, numbers as their text
 * @returns {{levels: Level[], raw: import('./book-kraken.js').RawLevel[]} | null}
 */
function krakenLevels (side) {
  if (side === undefined) return { levels: [], raw: [] }
  if (!Array.isArray(side)) return null
  /** @type {Level[]} */
  const levels = []
  const raw = []
  for (const l of side) {
    const level = isObject(l) && typeof l.price === 'string' && typeof l.qty === 'string' ? venueLevel(l.price, l.qty) : null
    if (level === null) return null
    levels.push(level)
    raw.push({ price: l.price, qty: l.qty })
  }
  return { levels, raw }
}

/**
 * Kraken spot WebSocket v2, channel `book`.
 * @type {BookTemplate}
 */
const krakenBook = {
  depths: [10, 25, 100, 500, 1000],
  resync: 'resubscribe',
  textFields: ['price', 'qty'],
  subscribe: (symbols, depth) => [JSON.stringify({ method: 'subscribe', params: { channel: 'book', symbol: symbols.map(krakenSymbol), depth } })],
  unsubscribe: (symbols, depth) => [JSON.stringify({ method: 'unsubscribe', params: { channel: 'book', symbol: symbols.map(krakenSymbol), depth } })],
  read (message) {
    if (!isObject(message)) return null
    // The answers to a (un)subscribe of the book channel.
    if ((message.method === 'subscribe' || message.method === 'unsubscribe') && isObject(message.result) && message.result.channel === 'book') return { records: [], malformed: 0 }
    if (message.channel !== 'book') return null
    const snapshot = message.type === 'snapshot'
    if ((!snapshot && message.type !== 'update') || !Array.isArray(message.data)) return { records: [], malformed: 1 }
    /** @type {BookRecord[]} */
    const records = []
    let malformed = 0
    for (const d of message.data) {
      const bids = isObject(d) ? krakenLevels(d.bids) : null
      const asks = isObject(d) ? krakenLevels(d.asks) : null
      const checksum = isObject(d) ? Number(d.checksum) : NaN
      if (!isObject(d) || typeof d.symbol !== 'string' || bids === null || asks === null || !Number.isInteger(checksum)) {
        malformed++
        continue
      }
      const m = { bids: bids.levels, asks: asks.levels, raw: { bids: bids.raw, asks: asks.raw }, checksum }
      records.push({
        symbol: d.symbol.replace('/', '-').toUpperCase(),
        feed: (/** @type {KrakenBook} */ book) => (snapshot ? book.snapshot(m) : book.update(m))
      })
    }
    return { records, malformed }
  },
  create: (depth) => new KrakenBook(depth)
}

/**
 * @param {unknown} updates `[{"side":"bid"|"offer","price_level":"21921.73","new_quantity":"0.06317902",...}, ...]`
 * @returns {{bids: Level[], asks: Level[]} | null}
 */
function coinbaseLevels (updates) {
  if (!Array.isArray(updates)) return null
  /** @type {{bids: Level[], asks: Level[]}} */
  const out = { bids: [], asks: [] }
  for (const u of updates) {
    const level = isObject(u) ? venueLevel(u.price_level, u.new_quantity) : null
    if (level === null || (u.side !== 'bid' && u.side !== 'offer')) return null
    out[u.side === 'bid' ? 'bids' : 'asks'].push(level)
  }
  return out
}

/**
 * Coinbase Advanced Trade, channel `level2` (messages `l2_data`); symbols
 * as in wsps (`BTC-USD`).
 * @type {BookTemplate}
 */
const coinbaseLevel2 = {
  depths: null,
  resync: 'resubscribe',
  textFields: [],
  subscribe: (symbols) => [JSON.stringify({ type: 'subscribe', product_ids: symbols, channel: 'level2' })],
  unsubscribe: (symbols) => [JSON.stringify({ type: 'unsubscribe', product_ids: symbols, channel: 'level2' })],
  read (message) {
    if (!isObject(message)) return null
    if (message.channel === 'subscriptions') return { records: [], malformed: 0 }
    if (message.channel !== 'l2_data') return null
    if (!Array.isArray(message.events)) return { records: [], malformed: 1 }
    /** @type {BookRecord[]} */
    const records = []
    let malformed = 0
    for (const e of message.events) {
      const levels = isObject(e) ? coinbaseLevels(e.updates) : null
      if (!isObject(e) || typeof e.product_id !== 'string' || levels === null || (e.type !== 'snapshot' && e.type !== 'update')) {
        malformed++
        continue
      }
      const snapshot = e.type === 'snapshot'
      records.push({ symbol: e.product_id.toUpperCase(), feed: (/** @type {LevelsBook} */ book) => (snapshot ? book.snapshot(levels) : book.update(levels)) })
    }
    return { records, malformed }
  },
  create: () => new LevelsBook(),
  sequence: (message) => (isObject(message) && Number.isSafeInteger(message.sequence_num) ? message.sequence_num : undefined)
}

/** The venue styles, by their WSPS_STREAM_BOOKS name. */
export const BOOK_TEMPLATES = Object.freeze({ 'binance-depth': binanceDepth, 'kraken-book': krakenBook, 'coinbase-level2': coinbaseLevel2 })

/** @typedef {keyof typeof BOOK_TEMPLATES} BookTemplateName */

/**
 * A JSON.parse reviver keeping the text of these fields' numbers, or none.
 * @param {readonly string[]} fields
 * @returns {((key: string, value: unknown, context?: {source?: string}) => unknown) | undefined}
 */
export function numberTextReviver (fields) {
  if (fields.length === 0) return undefined
  const keep = new Set(fields)
  return (key, value, context) => (typeof value === 'number' && keep.has(key) && context?.source !== undefined ? context.source : value)
}

/**
 * Start-up check of the book settings.
 * @param {{streamBooks: string, streamBookDepth: number, streamBookSnapshotUrl: string}} config
 * @returns {string[]} the problems
 */
export function streamBookProblems ({ streamBooks, streamBookDepth, streamBookSnapshotUrl }) {
  if (streamBooks === 'none') return []
  const t = BOOK_TEMPLATES[/** @type {BookTemplateName} */ (streamBooks)]
  const problems = []
  if (t.depths && !t.depths.includes(streamBookDepth)) problems.push(`WSPS_STREAM_BOOK_DEPTH must be one of ${t.depths.join(', ')} with WSPS_STREAM_BOOKS=${streamBooks} (the depths the venue streams)`)
  if (t.resync === 'rest' && !(/^https?:\/\//.test(streamBookSnapshotUrl) && streamBookSnapshotUrl.includes('{symbol}'))) {
    problems.push(`WSPS_STREAM_BOOK_SNAPSHOT_URL must be an http(s) URL with {symbol} in it with WSPS_STREAM_BOOKS=${streamBooks} (the REST snapshot each book starts from)`)
  }
  if (t.resync !== 'rest' && streamBookSnapshotUrl !== '') problems.push(`WSPS_STREAM_BOOK_SNAPSHOT_URL is not used with WSPS_STREAM_BOOKS=${streamBooks} (its snapshots come on the stream)`)
  return problems
}
