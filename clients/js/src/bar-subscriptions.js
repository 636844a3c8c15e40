// The bar subscriptions the client keeps (docs/protocol.md, "Bars"): which
// symbols it wants bars of, per interval, and how many closed bars each
// asks for first. A bar subscription is separate from the quote
// subscription of the same symbol, so this set is separate from the watch
// set (subscriptions.js). A new connection asks for all of them again and
// gets a fresh backfill of each.

/**
 * @typedef {object} BarWish
 * @property {string} symbol
 * @property {string} interval e.g. `1s`, `1m`, `5m`
 * @property {number} backfill closed bars to get first (0..500)
 */

/**
 * @param {string} symbol
 * @param {string} interval
 */
const keyOf = (symbol, interval) => `${interval} ${symbol}`

export class BarSubscriptions {
  /** @type {Map<string, BarWish>} by interval and symbol, in the order added */
  #wishes = new Map()

  /**
   * @param {string[]} symbols
   * @param {string} interval
   * @param {number} backfill
   * @returns {string[]} the symbols to ask the server for: new, or with another backfill
   */
  add (symbols, interval, backfill) {
    /** @type {string[]} */
    const send = []
    for (const symbol of symbols) {
      const key = keyOf(symbol, interval)
      if (this.#wishes.get(key)?.backfill === backfill) continue
      this.#wishes.set(key, { symbol, interval, backfill })
      send.push(symbol)
    }
    return send
  }

  /**
   * @param {string[]} symbols
   * @param {string} interval
   * @returns {string[]} those that were wanted
   */
  remove (symbols, interval) {
    return symbols.filter((s) => this.#wishes.delete(keyOf(s, interval)))
  }

  /**
   * @param {string} symbol
   * @param {string} interval
   */
  wants (symbol, interval) {
    return this.#wishes.has(keyOf(symbol, interval))
  }

  /**
   * Every wish, grouped into requests: one per interval and backfill.
   * @returns {{interval: string, backfill: number, symbols: string[]}[]}
   */
  groups () {
    /** @type {Map<string, {interval: string, backfill: number, symbols: string[]}>} */
    const out = new Map()
    for (const { symbol, interval, backfill } of this.#wishes.values()) {
      const key = `${interval} ${backfill}`
      const group = out.get(key) ?? { interval, backfill, symbols: [] }
      group.symbols.push(symbol)
      out.set(key, group)
    }
    return [...out.values()]
  }
}
