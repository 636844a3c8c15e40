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
 * @typedef {{client: WspsClient, depth: number, symbols: string[]}} BookHolder
 */

/**
 * A real JS client holding these symbols' books at one depth.
 *
 * @param {string | string[]} url the gateways, in the order tried
 * @param {string[]} symbols
 * @param {number} depth
 * @returns {Promise<BookHolder>} close its client when done
 */
export async function holdBooks (url, symbols, depth) {
  const client = new WspsClient({ url: Array.isArray(url) ? url : [url], WebSocket, initialBackoffMs: 50, symbols: [] })
  client.connect()
  const { noBook } = await client.subscribeBook(symbols, depth)
  assert.deepEqual(noBook, [], 'every symbol has a book')
  return { client, depth, symbols }
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
