// The symbols one connection subscribed and the delivery of each. Owned by
// its Connection (connection.js), which keeps what is queued for it
// (outbox.js) in step; Sessions reads it to answer and to check requests.

/**
 * A subscription's delivery, as one number: DISTINCT, FULL_RATE (merge, on
 * every pass) or a merge mode maxRate in updates per second.
 */
export const DISTINCT = -1
export const FULL_RATE = 0

export class Subscriptions {
  /**
   * Subscribed symbols, in order. An array, not a Set: at the usual few
   * dozen symbols it costs a third of the memory (idle connections are
   * what a gateway holds most of); see holds() for large lists.
   * @type {string[]}
   */
  #symbols = []
  /**
   * Delivery of the symbols not at FULL_RATE; null while every one is (the
   * default costs no map).
   * @type {Map<string, number> | null}
   */
  #delivery = null

  /** @returns {readonly string[]} the subscribed symbols, in order */
  get symbols () { return this.#symbols }

  /**
   * A membership test for the subscribed symbols: a scan for short lists,
   * a Set built once for long ones (WSPS_MAX_SUBSCRIPTIONS may be 10,000).
   *
   * @returns {(symbol: string) => boolean}
   */
  holds () {
    const subs = this.#symbols
    if (subs.length <= 32) return (s) => subs.includes(s)
    const set = new Set(subs)
    return (s) => set.has(s)
  }

  /**
   * @param {string} symbol
   * @returns {number} its delivery (DISTINCT, FULL_RATE or a maxRate)
   */
  deliveryOf (symbol) {
    return this.#delivery?.get(symbol) ?? FULL_RATE
  }

  /**
   * Adds symbols not held yet (the caller checked).
   *
   * @param {string[]} fresh
   * @param {number} delivery
   */
  add (fresh, delivery) {
    // concat allocates exactly what is held; push would leave slack in
    // every idle connection's list.
    if (fresh.length) this.#symbols = this.#symbols.concat(fresh)
    for (const s of fresh) this.setDelivery(s, delivery)
  }

  /**
   * @param {string} symbol a held symbol
   * @param {number} delivery
   */
  setDelivery (symbol, delivery) {
    if (delivery !== FULL_RATE) {
      (this.#delivery ??= new Map()).set(symbol, delivery)
    } else if (this.#delivery !== null) {
      this.#delivery.delete(symbol)
      if (this.#delivery.size === 0) this.#delivery = null
    }
  }

  /**
   * Removes symbols.
   *
   * @param {string[]} symbols
   * @param {(symbol: string, delivery: number) => void} onRemoved called for
   *   each symbol that was held, with the delivery it had
   */
  remove (symbols, onRemoved) {
    const gone = new Set(symbols)
    /** @type {string[]} */
    const kept = []
    for (const s of this.#symbols) {
      if (gone.has(s)) {
        onRemoved(s, this.deliveryOf(s))
        this.setDelivery(s, FULL_RATE)
      } else {
        kept.push(s)
      }
    }
    this.#symbols = kept
  }

  /** Forgets every symbol (the connection closed). */
  clear () {
    this.#symbols = []
    this.#delivery = null
  }
}
