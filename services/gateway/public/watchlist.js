// The watchlist: an ordered set of symbols, saved in localStorage so a
// reload (or the next visit) comes back to the same list in the same order.

const STORAGE_KEY = 'wsps.watchlist.v1'

/**
 * @typedef {Pick<Storage, 'getItem' | 'setItem'>} StorageLike
 */

export class Watchlist {
  /** @type {string[]} */
  #symbols
  /** @type {StorageLike | null} */
  #storage

  /** @param {StorageLike | null} storage null: keep it in memory only */
  constructor (storage) {
    this.#storage = storage
    this.#symbols = load(storage)
  }

  /** @returns {readonly string[]} */
  get symbols () { return this.#symbols }

  /** @param {string} symbol */
  has (symbol) { return this.#symbols.includes(symbol) }

  /**
   * Appends a symbol; false if it was there already.
   * @param {string} symbol
   */
  add (symbol) {
    if (this.has(symbol)) return false
    this.#symbols = [...this.#symbols, symbol]
    this.#save()
    return true
  }

  /**
   * @param {string} symbol
   * @returns {boolean} false if it was not there
   */
  remove (symbol) {
    if (!this.has(symbol)) return false
    this.#symbols = this.#symbols.filter((s) => s !== symbol)
    this.#save()
    return true
  }

  #save () {
    try {
      this.#storage?.setItem(STORAGE_KEY, JSON.stringify(this.#symbols))
    } catch {
      // Storage full or disabled (private mode): the list still works for this visit.
    }
  }
}

/**
 * @param {StorageLike | null} storage
 * @returns {string[]}
 */
function load (storage) {
  try {
    const parsed = JSON.parse(storage?.getItem(STORAGE_KEY) ?? '[]')
    if (Array.isArray(parsed)) return [...new Set(parsed.filter((s) => typeof s === 'string' && s))]
  } catch {}
  return []
}

/**
 * Normalizes what was typed: "aapl, msft tsla" -> ['AAPL', 'MSFT', 'TSLA'].
 * Validation is the server's job, so its error codes reach the user.
 *
 * @param {string} text
 * @returns {string[]}
 */
export function parseSymbols (text) {
  return [...new Set(text.split(/[\s,;]+/).map((s) => s.trim().toUpperCase()).filter(Boolean))]
}
