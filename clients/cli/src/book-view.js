// `wsps tail --book N`: the order books of the tailed symbols. On a
// terminal a ladder per symbol (bids and asks side by side, best first)
// redrawn in place; piped one JSON record per change with the whole window.

import { emit } from './io.js'
import { Screen } from './screen.js'

/**
 * @typedef {import('./io.js').Io} Io
 * @typedef {import('@wsps/client').HeldBook} HeldBook
 * @typedef {import('@wsps/client').BookEvent} BookEvent
 */

/** A terminal is redrawn at most this often. */

/** Levels a side a terminal shows at most (a window of 500 would not fit). */
export const LADDER_ROWS = 10

/**
 * The ladder of one book, as lines: a title, a header, then one row per
 * level, the bid (size, price) left and the ask (price, size) right.
 *
 * @param {string} symbol
 * @param {HeldBook | undefined} book
 * @param {{rows?: number, stale?: boolean}} [o] rows: levels a side shown; stale: the connection is not live
 * @returns {string[]}
 */
export function renderLadder (symbol, book, { rows = LADDER_ROWS, stale = false } = {}) {
  if (book === undefined) return [`${symbol}  waiting for the book`]
  const state = !book.sync ? 'OUT OF SYNC (waiting for the next snapshot)' : stale ? 'STALE' : 'live'
  const title = `${symbol}  depth ${book.depth}  seq ${book.seq}  ${state}`
  const n = Math.min(rows, Math.max(book.bids.length, book.asks.length))
  const cells = [['BID SIZE', 'BID', 'ASK', 'ASK SIZE']]
  for (let i = 0; i < n; i++) {
    const [bp = '', bs = ''] = book.bids[i] ?? []
    const [ap = '', as = ''] = book.asks[i] ?? []
    cells.push([bs, bp, ap, as])
  }
  const w = cells[0].map((_, i) => Math.max(...cells.map((r) => r[i].length)))
  const lines = cells.map(([bs, bp, ap, as]) => `${bs.padStart(w[0])}  ${bp.padStart(w[1])} | ${ap.padEnd(w[2])}  ${as.padEnd(w[3])}`.trimEnd())
  return [title, ...lines]
}

/**
 * @param {BookEvent} e
 * @returns {Record<string, unknown>} the JSON line of a change: the whole window held
 */
export function bookRecord ({ symbol, book, snapshot }) {
  return { type: 'book', symbol, seq: book.seq, epoch: book.epoch, sync: book.sync, snapshot, depth: book.depth, bids: book.bids, asks: book.asks }
}

/** The ladders of the tailed symbols, redrawn in place. */
export class Ladders {
  #symbols
  /** @type {Map<string, HeldBook>} */
  #books = new Map()
  #live = false
  #screen

  /**
   * @param {Io} io
   * @param {string[]} symbols
   */
  constructor (io, symbols) {
    this.#symbols = symbols
    this.#screen = new Screen(io, () => this.#symbols.flatMap((s) => [...renderLadder(s, this.#books.get(s), { stale: !this.#live }), '']))
  }

  /** @param {BookEvent} e */
  book (e) {
    this.#books.set(e.symbol, e.book)
    this.#screen.soon()
  }

  /** @param {import('@wsps/client').StatusInfo} s */
  status (s) {
    this.#live = s.state === 'live'
    this.#screen.status(`${s.state}${s.url ? ` to ${s.url}` : ''}${s.node ? ` (${s.node})` : ''}`)
  }

  /** @param {import('@wsps/client').ErrorInfo} e */
  error (e) { this.#screen.note(`${e.code}: ${e.message}${e.symbols ? ` (${e.symbols.join(', ')})` : ''}`) }

  end () { this.#screen.end() }
}

/** One record a line, for scripts. */
export class BookLines {
  /** @param {Io} io */
  constructor (io) { this.io = io }
  /** @param {BookEvent} e */
  book (e) { emit(this.io, bookRecord(e)) }
  /** @param {import('@wsps/client').StatusInfo} s */
  status (s) { emit(this.io, { type: 'status', state: s.state, url: s.url, transport: s.transport, node: s.node, closeCode: s.closeCode }) }
  /** @param {import('@wsps/client').ErrorInfo} e */
  error (e) { emit(this.io, { type: 'error', ...e }) }
  end () {}
}
