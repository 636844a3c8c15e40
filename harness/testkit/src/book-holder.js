// A real JS client (@wsps/client) holding order books, recording every book
// it showed, for the real-stack book tests to compare with a reference.

import { WspsClient } from '@wsps/client'
import WebSocket from 'ws'
import { waitFor } from './wait.js'

/**
 * @typedef {{symbol: string, seq: number, sync: boolean, top: string}} HeldBook one book the client showed: its
 *   levels as the JSON of `{bids, asks}`
 */

/**
 * Subscribes these symbols' books at one depth and records each `book` event.
 *
 * @param {string | string[]} url one gateway, or several to fail over between
 * @param {string[]} symbols
 * @param {number} depth
 * @param {object} options
 * @param {(client: WspsClient) => void} options.track closes the client after the file's tests
 * @param {number} [options.waitMs] ask again until every symbol has a book, for this long (a venue stream's books
 *   appear once a fetcher subscribed them); 0 (default): every symbol must have one at once
 * @returns {Promise<{client: WspsClient, held: HeldBook[], depth: number}>}
 */
export async function holdBooks (url, symbols, depth, { track, waitMs = 0 }) {
  const client = new WspsClient({ url: Array.isArray(url) ? url : [url], WebSocket, initialBackoffMs: 50, symbols: [] })
  track(client)
  /** @type {HeldBook[]} */
  const held = []
  client.on('book', ({ symbol, book }) => held.push({ symbol, seq: book.seq, sync: book.sync, top: JSON.stringify({ bids: book.bids, asks: book.asks }) }))
  client.connect()
  /** @type {string[]} */
  let missing = []
  const all = async () => {
    missing = (await client.subscribeBook(symbols, depth)).noBook
    return missing.length === 0
  }
  if (waitMs > 0) await waitFor(all, { timeout: waitMs, message: `books of ${symbols}` })
  else if (!await all()) throw new Error(`no book of ${missing.join(', ')}`)
  return { client, held, depth }
}
