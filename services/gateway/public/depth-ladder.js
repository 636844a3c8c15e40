// The selected symbol's order book as a depth ladder: asks above (best at
// the bottom), bids below (best at the top), each level with its size and
// the size cumulated from the best level outward, and a bar for that
// cumulative size. A symbol without a book says so; one out of sync too.

/**
 * @typedef {[price: string, size: string]} Level
 * @typedef {{bids: Level[], asks: Level[], sync: boolean, seq: number}} BookView
 */

/** Levels per side shown (the subscription's depth). */
export const LADDER_DEPTH = 10

export class DepthLadder {
  #els
  /** @type {string | null} */
  #symbol = null

  /**
   * @param {{root: HTMLElement, symbol: HTMLElement, rows: HTMLTableSectionElement, state: HTMLElement}} els
   */
  constructor (els) {
    this.#els = els
  }

  get symbol () { return this.#symbol }

  /**
   * Shows the ladder of a symbol (null: hides it), waiting for its book.
   * @param {string | null} symbol
   */
  show (symbol) {
    this.#symbol = symbol
    this.#els.root.hidden = symbol === null
    this.#els.symbol.textContent = symbol ?? ''
    this.#els.rows.replaceChildren()
    this.#note('Waiting for the book…')
  }

  /** The symbol has no book (NO_BOOK): quotes only. */
  none () {
    this.#els.rows.replaceChildren()
    this.#note('No order book for this symbol.')
  }

  /** @param {BookView} book */
  render (book) {
    const { rows } = this.#els
    if (!book.sync) {
      rows.replaceChildren()
      this.#note('Order book out of sync: waiting for the feed\'s snapshot.')
      return
    }
    const asks = cumulate(book.asks)
    const bids = cumulate(book.bids)
    const max = Math.max(asks.at(-1)?.[2] ?? 0, bids.at(-1)?.[2] ?? 0) || 1
    const out = []
    for (const level of asks.slice().reverse()) out.push(row('ask', level, max))
    for (const level of bids) out.push(row('bid', level, max))
    rows.replaceChildren(...out)
    this.#note(book.bids.length || book.asks.length ? '' : 'The book is empty.')
    this.#els.root.dataset.seq = String(book.seq)
  }

  /** @param {string} text */
  #note (text) {
    this.#els.state.textContent = text
    this.#els.state.hidden = text === ''
  }
}

/**
 * @param {Level[]} levels best first
 * @returns {[price: string, size: string, cumulative: number][]}
 */
function cumulate (levels) {
  let sum = 0
  return levels.map(([p, s]) => {
    sum += Number(s)
    return [p, s, sum]
  })
}

/**
 * @param {'bid' | 'ask'} side
 * @param {[string, string, number]} level
 * @param {number} max the largest cumulative size shown
 */
function row (side, [price, size, cumulative], max) {
  const tr = document.createElement('tr')
  tr.className = side
  tr.dataset.price = price
  const cells = [price, size, formatSize(cumulative)]
  for (const [i, text] of cells.entries()) {
    const td = document.createElement('td')
    td.className = ['price', 'size', 'total'][i]
    td.textContent = text
    tr.append(td)
  }
  // The depth bar: the cumulative size against the deepest shown.
  tr.style.setProperty('--depth', `${Math.round((cumulative / max) * 100)}%`)
  return tr
}

/** @param {number} n */
function formatSize (n) {
  return Number.isInteger(n) ? String(n) : n.toFixed(4).replace(/0+$/, '').replace(/\.$/, '')
}
