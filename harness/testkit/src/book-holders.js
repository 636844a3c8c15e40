// Order books held by real JS clients, checked against the books in Redis
// (the fault tests: books must be exact after every failover). The check
// pauses the fetcher (SIGSTOP) so no book moves while both are compared.

import assert from 'node:assert/strict'
import { WspsClient } from '@wsps/client'
import { readBook } from '@wsps/shared/books'
import { redisKeys } from '@wsps/shared/keys'
import WebSocket from 'ws'
import { sleep, waitFor } from './wait.js'

/**
 * @typedef {{symbol: string, seq: number, sync: boolean, top: string}} HeldBook one book the client showed: its
 *   levels as the JSON of `{bids, asks}`
 * @typedef {{client: WspsClient, depth: number, symbols: string[], held: HeldBook[]}} BookHolder
 */

/**
 * A real JS client holding these symbols' books at one depth, recording
 * every book it showed (`held`).
 *
 * @param {string | string[]} url the gateways, in the order tried
 * @param {string[]} symbols
 * @param {number} depth
 * @param {{waitMs?: number, transport?: 'auto' | 'websocket' | 'sse'}} [options] waitMs: ask again until every
 *   symbol has a book, for this long (a venue stream's books appear once a fetcher subscribed them); 0
 *   (default): every symbol must have one at once. transport: the client's (default auto)
 * @returns {Promise<BookHolder>} close its client when done
 */
export async function holdBooks (url, symbols, depth, { waitMs = 0, transport = 'auto' } = {}) {
  const client = new WspsClient({ url: Array.isArray(url) ? url : [url], WebSocket, initialBackoffMs: 50, symbols: [], transport })
  /** @type {HeldBook[]} */
  const held = []
  client.on('book', ({ symbol, book }) => held.push({ symbol, seq: book.seq, sync: book.sync, top: JSON.stringify({ bids: book.bids, asks: book.asks }) }))
  client.connect()
  try {
    if (waitMs > 0) await waitFor(async () => (await client.subscribeBook(symbols, depth)).noBook.length === 0, { timeout: waitMs, message: `books of ${symbols}` })
    else assert.deepEqual((await client.subscribeBook(symbols, depth)).noBook, [], 'every symbol has a book')
  } catch (err) {
    client.close()
    throw err
  }
  return { client, depth, symbols, held }
}

/**
 * With the fetcher paused (no book moves), every book each holder holds is
 * in sync and is the book in Redis: seq, epoch and levels.
 *
 * @param {BookHolder[]} holders
 * @param {import('@wsps/shared/redis').RedisClient} redis
 * @param {number} fetcherPid
 * @param {{prefix?: string, timeout?: number}} [options]
 */
export async function booksAsInRedis (holders, redis, fetcherPid, { prefix = 'wsps', timeout = 5000 } = {}) {
  const keys = redisKeys(prefix)
  const symbols = [...new Set(holders.flatMap((h) => h.symbols))]
  process.kill(fetcherPid, 'SIGSTOP')
  try {
    // A write in flight when it stopped lands; the book read after it is final.
    await sleep(200)
    for (const s of symbols) {
      const state = await readBook(redis, keys, s)
      assert.ok(state, `${s}'s book in Redis`)
      const mine = holders.filter((h) => h.symbols.includes(s))
      const held = () => mine.map((h) => h.client.book(s))
      await waitFor(() => held().every((b) => b?.sync === true && b.seq === state.seq && b.epoch === state.epoch), { timeout, message: `${s}: every client holds the book of seq ${state.seq} (they hold ${held().map((b) => `${b?.seq}${b?.sync ? '' : ' unsynced'}`).join(', ')})` })
      for (const h of mine) {
        const b = h.client.book(s)
        assert.deepEqual({ bids: b?.bids, asks: b?.asks }, { bids: state.bids.slice(0, h.depth), asks: state.asks.slice(0, h.depth) }, `${s} at depth ${h.depth}: the book in Redis`)
      }
    }
  } finally {
    process.kill(fetcherPid, 'SIGCONT')
  }
}
