// Order books in Redis: one writer path (applyBook, through the book script
// of scripts.js) and one reader (readBook), for every service. A book is
// stored whole beside its symbol's other keys and each write is published
// as the change it made (docs/protocol.md, Order books; keys.js, book).

import { BOOK_MAX_LEVELS, compareDecimal, decimal } from '@wsps/protocol/book'

/**
 * @typedef {import('@wsps/protocol/book').Level} Level
 *
 * @typedef {object} BookState a whole book, as stored
 * @property {number} seq
 * @property {string} epoch
 * @property {number} ts
 * @property {boolean} sync false: the feed lost its sequence; no levels until its next snapshot
 * @property {Level[]} bids best first
 * @property {Level[]} asks best first
 *
 * @typedef {object} BookStore where a service writes books
 * @property {import('./scripts.js').ScriptedRedis} redis
 * @property {import('./keys.js').RedisKeys} keys
 * @property {number} ttlMs WSPS_BOOK_TTL_MS
 * @property {boolean} sharded a Redis Cluster (the script publishes on shard channels)
 *
 * @typedef {object} BookUpdate one write of a book
 * @property {string} symbol
 * @property {'snapshot' | 'delta' | 'unsync'} kind a snapshot replaces the book; a delta sets
 *   levels (size "0" deletes); unsync says the source lost its sequence
 * @property {Level[]} bids
 * @property {Level[]} asks
 * @property {number} ts
 * @property {number} [sourceSeq] the source's own sequence number of the update (of its last change)
 * @property {number} [sourcePrev] a delta's: the source's number it follows (default sourceSeq - 1);
 *   the delta applies when sourcePrev ≤ the number stored < sourceSeq
 */

/** Why the script refused a write (scripts.js, BOOK). */
export const BookRefusal = Object.freeze({
  /** A provider's write while the book is pushed through the publish API. */
  PUSHED: 'pushed',
  /** The stored seq is not the one the writer built on: another writer moved the book. */
  MOVED: 'moved',
  /** A delta without a book in sync to apply to. */
  NO_BOOK: 'nobook',
  /** A side would hold more than BOOK_MAX_LEVELS levels. */
  TOO_LARGE: 'toolarge',
  /** A delta at or below the source's sequence number stored: applied already. */
  OLD: 'old',
  /** A delta past the source's sequence number stored: not applied; the book is now out of sync until a snapshot. */
  GAP: 'gap'
})

/** @type {Record<number, typeof BookRefusal[keyof typeof BookRefusal]>} */
const REFUSALS = { [-1]: BookRefusal.PUSHED, [-2]: BookRefusal.MOVED, [-3]: BookRefusal.NO_BOOK, [-4]: BookRefusal.TOO_LARGE, [-5]: BookRefusal.OLD }

/**
 * Puts one side of an update in canonical form, or says what is wrong.
 *
 * @param {unknown} side
 * @param {'bids' | 'asks'} name
 * @param {boolean} delta size "0" deletes (a snapshot holds no empty level)
 * @returns {Level[] | string}
 */
function canonicalSide (side, name, delta) {
  if (!Array.isArray(side)) return `${name} must be an array of [price, size]`
  if (side.length > BOOK_MAX_LEVELS) return `${name}: more than ${BOOK_MAX_LEVELS} levels`
  /** @type {Level[]} */
  const out = []
  const seen = new Set()
  for (const level of side) {
    if (!Array.isArray(level) || level.length !== 2) return `${name}: a level is [price, size]`
    const price = decimal(level[0])
    const size = decimal(level[1])
    if (price === null || price === '0') return `${name}: price ${JSON.stringify(level[0])} is not a positive decimal string`
    if (size === null) return `${name}: size ${JSON.stringify(level[1])} is not a decimal string`
    if (size === '0' && !delta) return `${name}: a snapshot holds no level of size 0`
    if (seen.has(price)) return `${name}: price ${price} twice`
    seen.add(price)
    out.push([price, size])
  }
  return out
}

/**
 * Checks an update and puts it in canonical form: decimals as
 * docs/protocol.md writes them, a snapshot's sides best first and not
 * crossed.
 *
 * @param {{symbol: string, kind: BookUpdate['kind'], bids?: unknown, asks?: unknown, ts: number, sourceSeq?: number, sourcePrev?: number}} update
 *   sourceSeq and sourcePrev as checked by the caller (kept; not on unsync)
 * @returns {BookUpdate | string} the problem, when there is one
 */
export function canonicalBook ({ symbol, kind, bids = [], asks = [], ts, sourceSeq, sourcePrev }) {
  if (kind === 'unsync') return { symbol, kind, bids: [], asks: [], ts }
  const delta = kind === 'delta'
  const b = canonicalSide(bids, 'bids', delta)
  if (typeof b === 'string') return b
  const a = canonicalSide(asks, 'asks', delta)
  if (typeof a === 'string') return a
  if (!delta) {
    b.sort((x, y) => compareDecimal(y[0], x[0]))
    a.sort((x, y) => compareDecimal(x[0], y[0]))
    if (b.length && a.length && compareDecimal(b[0][0], a[0][0]) >= 0) return `crossed: best bid ${b[0][0]} is not below best ask ${a[0][0]}`
  }
  const source = sourceSeq === undefined ? {} : sourcePrev === undefined ? { sourceSeq } : { sourceSeq, sourcePrev }
  return { symbol, kind, bids: b, asks: a, ts, ...source }
}

/**
 * Writes one canonical update (canonicalBook) through the book script.
 *
 * @param {import('./scripts.js').ScriptedRedis} redis
 * @param {import('./keys.js').RedisKeys} keys
 * @param {BookUpdate} update
 * @param {{ttlMs: number, expectSeq?: number | null, pushLeaseMs?: number, sharded?: boolean}} options expectSeq: the
 *   stored seq this write builds on (0: no book), null: any
 * @returns {Promise<{seq: number, epoch: string, refused?: typeof BookRefusal.GAP} | {refused: typeof BookRefusal[keyof typeof BookRefusal]}>}
 *   GAP comes with the seq and epoch of the out-of-sync write it made instead
 */
export async function applyBook (redis, keys, update, { ttlMs, expectSeq = null, pushLeaseMs = 0, sharded = false }) {
  const s = update.symbol
  const src = update.sourceSeq
  const reply = /** @type {[number, string?, number?]} */ (await /** @type {any} */ (redis).wspsBook(
    keys.book(s), keys.bookChannel(s), keys.bookPushed(s),
    update.kind, JSON.stringify(update.bids), JSON.stringify(update.asks), Math.round(update.ts), ttlMs,
    expectSeq === null ? '' : String(expectSeq), pushLeaseMs, sharded ? 1 : 0, BOOK_MAX_LEVELS,
    src === undefined ? '' : String(src), src === undefined ? '' : String(update.sourcePrev ?? src - 1)))
  const [seq, epoch, gap] = reply
  if (seq < 0 || epoch === undefined) return { refused: REFUSALS[seq] }
  return gap === 1 ? { seq, epoch, refused: BookRefusal.GAP } : { seq, epoch }
}

/**
 * @param {import('ioredis').Redis | import('ioredis').Cluster} redis
 * @param {import('./keys.js').RedisKeys} keys
 * @param {string} symbol
 * @returns {Promise<BookState | null>} null: no book (or one that is not readable, written anew by its next snapshot)
 */
export async function readBook (redis, keys, symbol) {
  const raw = await redis.get(keys.book(symbol))
  if (raw === null) return null
  try {
    const b = JSON.parse(raw)
    if (typeof b.seq !== 'number' || typeof b.epoch !== 'string' || !Array.isArray(b.bids) || !Array.isArray(b.asks)) return null
    return { seq: b.seq, epoch: b.epoch, ts: Number(b.ts) || 0, sync: b.sync !== false, bids: b.bids, asks: b.asks }
  } catch {
    return null
  }
}

/**
 * Adds the renewal of these symbols' book leases to a pipeline (beside the
 * quote demand's, same hash tag): held by some gateway until expiry,
 * never shortening another gateway's lease.
 *
 * @param {import('ioredis').ChainableCommander} pipeline
 * @param {import('./keys.js').RedisKeys} keys
 * @param {string[]} symbols at least one
 * @param {number} expiry ms
 */
export function bookDemand (pipeline, keys, symbols, expiry) {
  pipeline.zadd(keys.bookDemand, 'GT', ...symbols.flatMap((s) => [expiry, s]))
}

/**
 * @param {import('ioredis').Redis} redis
 * @param {import('./keys.js').RedisKeys} keys
 * @param {string[]} symbols
 * @param {number} now Redis' clock, or near it (leases are written on the gateways' clocks)
 * @returns {Promise<string[]>} those whose book some gateway holds
 */
export async function booksDemanded (redis, keys, symbols, now) {
  if (symbols.length === 0) return []
  // Leases run out here: the set holds only books some gateway holds now.
  const replies = /** @type {[Error | null, unknown][]} */ (await redis.pipeline()
    .zremrangebyscore(keys.bookDemand, '-inf', now)
    .zmscore(keys.bookDemand, ...symbols)
    .exec())
  const [err, scores] = /** @type {[Error | null, (string | null)[]]} */ (replies[1])
  if (err) throw err
  return symbols.filter((_, i) => scores[i] !== null)
}
