// The simulated market's order books: after a job's quotes are published,
// each of their symbols whose book some gateway holds (book demand) moves
// its book by the quote (providers/sim-book.js) and writes what changed.
// A write builds on the seq it read (0: there was none): when another
// replica moved the book first, this one is refused (moved) and the next
// quote's step catches up.
// Symbols nobody holds a book of cost nothing.

import { windowDelta } from '@wsps/protocol/book'
import { applyBook, booksDemanded, readBook } from '@wsps/shared/books'
import { simBook } from './providers/sim-book.js'

export class SimBooks {
  #store
  #seed
  #metrics
  #now

  /**
   * @param {object} options
   * @param {import('@wsps/shared/books').BookStore} options.store
   * @param {number} options.seed WSPS_SIM_SEED
   * @param {import('./metrics.js').FetcherMetrics} options.metrics
   * @param {() => number} options.now Redis' clock
   */
  constructor ({ store, seed, metrics, now }) {
    this.#store = store
    this.#seed = seed
    this.#metrics = metrics
    this.#now = now
  }

  /**
   * @param {import('./providers/provider.js').QuoteFields[]} quotes as published
   * @param {number[]} seqs per quote its seq, 0 when it was refused
   */
  async after (quotes, seqs) {
    const published = quotes.filter((_, i) => seqs[i] > 0)
    if (published.length === 0) return
    const { redis, keys, ttlMs, sharded } = this.#store
    const held = new Set(await booksDemanded(redis, keys, published.map((q) => q.symbol), this.#now()))
    await Promise.all(quotes.map(async (quote, i) => {
      if (seqs[i] === 0 || !held.has(quote.symbol)) return
      const stored = await readBook(redis, keys, quote.symbol)
      const previous = stored?.sync ? stored : null
      const next = simBook({ seed: this.#seed, symbol: quote.symbol, seq: seqs[i], quote, previous })
      if (next === null) return
      const update = previous === null
        ? { symbol: quote.symbol, kind: /** @type {const} */ ('snapshot'), ...next, ts: Number(quote.ts) || this.#now() }
        : { symbol: quote.symbol, kind: /** @type {const} */ ('delta'), ...windowDelta(previous, next), ts: Number(quote.ts) || this.#now() }
      const result = await applyBook(redis, keys, update, { ttlMs, expectSeq: stored?.seq ?? 0, sharded })
      this.#metrics.books.inc({ result: result.refused ?? 'written' })
    }))
  }
}
