#!/usr/bin/env node
// The book section's publisher: `--books` order books (S0000...), each a
// seeded BookWalk (book-walk.js), written through the real book script
// (services/shared/src/books.js applyBook) at a controlled rate, ts =
// Date.now() at the write. At start every book is written whole (a
// snapshot), then only deltas.
//
//   node book-publisher.js --redis=URL [--books=50] [--prefix=wsps] [--seed=1]
//
// stdin (JSON lines):  {"cmd":"rate","perBook":R}   updates per second per book (0: pause)
// stdout (JSON lines): {"type":"ready","books":N}, then every second
//                      {"type":"tick","t":ms,"published":n,"refused":n,"skipped":n,"target":R*books}
//                      (skipped: due while MAX_IN_FLIGHT writes waited for Redis)
// Exits when stdin closes.

import { createInterface } from 'node:readline'
import { Redis } from 'ioredis'
import { applyBook, canonicalBook } from '@wsps/shared/books'
import { redisKeys } from '@wsps/shared/keys'
import { registerScripts } from '@wsps/shared/scripts'
import { BookWalk } from './book-walk.js'
import { parseFlags } from './cli.js'

const args = parseFlags({ redis: { type: 'string' }, books: { type: 'string' }, prefix: { type: 'string' }, seed: { type: 'string' } })
const N = Number(args.books ?? 50)
const seed = Number(args.seed ?? 1)
const keys = redisKeys(args.prefix ?? 'wsps')
/** Books outlive the run's pauses. */
const TTL_MS = 3_600_000
/** The write loop's period: each turn writes the updates due since the last. */
const TURN_MS = 10
/**
 * Writes in flight at most: an update due while this many wait for Redis
 * is skipped (counted), so a slow Redis or a starved publisher shows as
 * updates not published, never as a queue whose age the latency (from the
 * ts taken at the write) would count against the servers.
 */
const MAX_IN_FLIGHT = 64
/** Levels per side each book spans: depth 25 and some below it (the book script reads and writes the whole book per update). */
const LEVELS = 40

const redis = registerScripts(/** @type {any} */ (new Redis(args.redis ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: true, maxRetriesPerRequest: null })))
const books = Array.from({ length: N }, (_, i) => ({
  symbol: `S${String(i).padStart(4, '0')}`,
  walk: new BookWalk({ seed: seed * 7919 + i, mid: 10_000 + 137 * i, levels: LEVELS }),
  // Each book's share of the rate, phased so the books' writes spread over the second.
  credit: i / N
}))

/**
 * @param {string} symbol
 * @param {'snapshot' | 'delta'} kind
 * @param {{bids: [string, string][], asks: [string, string][]}} levels
 */
async function write (symbol, kind, levels) {
  const update = canonicalBook({ symbol, kind, ...levels, ts: Date.now() })
  if (typeof update === 'string') throw new Error(`${symbol}: ${update}`)
  const r = await applyBook(redis, keys, update, { ttlMs: TTL_MS })
  return !('refused' in r) || r.refused === undefined
}

await Promise.all(books.map((b) => write(b.symbol, 'snapshot', b.walk.snapshot())))
process.stdout.write(JSON.stringify({ type: 'ready', books: N }) + '\n')

let perBook = 0
let published = 0
let refused = 0
let skipped = 0
let inFlight = 0
let last = performance.now()
createInterface({ input: process.stdin })
  .on('line', (line) => {
    const msg = JSON.parse(line)
    if (msg.cmd === 'rate') {
      perBook = Number(msg.perBook) || 0
    }
  })
  .on('close', () => process.exit(0))

setInterval(() => {
  const now = performance.now()
  const add = (perBook * (now - last)) / 1000
  last = now
  // Each book writes the updates due to it this turn; the writes pipeline.
  for (const b of books) {
    b.credit += add
    for (; b.credit >= 1; b.credit--) {
      if (inFlight >= MAX_IN_FLIGHT) {
        skipped++
        continue
      }
      inFlight++
      write(b.symbol, 'delta', b.walk.next()).then((ok) => { if (ok) published++; else refused++ }, (err) => {
        process.stderr.write(`book-publisher: ${err.message}\n`)
        refused++
      }).finally(() => { inFlight-- })
    }
  }
}, TURN_MS)

setInterval(() => {
  process.stdout.write(JSON.stringify({ type: 'tick', t: Date.now(), published, refused, skipped, target: perBook * N }) + '\n')
  published = 0
  refused = 0
  skipped = 0
}, 1000)
