// The watch set and what the server holds of it: the symbols the user
// wants (in the order added) with their delivery, the connection's
// subscription set from its latest ack (and which of it the server serves
// delayed), and the subscribe() calls waiting for the server to hold their
// symbols (HeldKeys).

import { HeldKeys } from './held-keys.js'

/**
 * @typedef {import('./types.js').Delivery} Delivery
 * @typedef {import('./types.js').ErrorInfo} ErrorInfo
 * @typedef {import('./held-keys.js').HeldResult} HeldResult
 */

/**
 * @param {Delivery | undefined} delivery
 * @returns {string} '' for the default delivery; equal keys mean the same delivery
 */
function deliveryKey (delivery) {
  if (delivery === undefined) return ''
  const mode = delivery.mode ?? 'merge'
  const rate = delivery.maxRate ?? 0
  return mode === 'merge' && rate === 0 ? '' : `${mode}/${rate}`
}

export class Subscriptions {
  /** @type {Set<string>} what the user wants, in the order added */
  #wanted
  /** @type {Map<string, Delivery>} delivery of the watched symbols that do not use the default (merge, every update) */
  #delivery = new Map()
  /** what the server holds, from the latest ack, and who waits for it */
  #held = new HeldKeys()
  /** @type {Set<string>} what the server serves delayed, from the latest ack's `delayed` */
  #delayed = new Set()

  /** @param {Iterable<string>} symbols the initial watch set */
  constructor (symbols) {
    this.#wanted = new Set(symbols)
  }

  /** @returns {string[]} the watch set, in the order added */
  get list () {
    return [...this.#wanted]
  }

  /** @param {string} symbol */
  wants (symbol) {
    return this.#wanted.has(symbol)
  }

  /**
   * @param {string} symbol
   * @returns {Delivery | undefined} its delivery (undefined: the default, merge)
   */
  deliveryOf (symbol) {
    return this.#delivery.get(symbol)
  }

  /** @param {string} symbol */
  serverHolds (symbol) {
    return this.#held.has(symbol)
  }

  /** @param {string} symbol */
  isDelayed (symbol) {
    return this.#delayed.has(symbol)
  }

  /** @returns {string[]} the held symbols the server serves delayed */
  get delayed () {
    return [...this.#delayed]
  }

  /**
   * Adds to the watch set (or changes the delivery of watched symbols).
   *
   * @param {string[]} symbols distinct
   * @param {Delivery} delivery
   * @returns {string[]} those to ask the server for: new, or with another delivery
   */
  watch (symbols, delivery) {
    const key = deliveryKey(delivery)
    const send = symbols.filter((s) => !this.#wanted.has(s) || deliveryKey(this.#delivery.get(s)) !== key)
    for (const s of symbols) {
      this.#wanted.add(s)
      if (key === '') this.#delivery.delete(s)
      else this.#delivery.set(s, delivery)
    }
    return send
  }

  /**
   * Removes from the watch set; whoever waits for them is told CANCELLED.
   *
   * @param {string[]} symbols
   * @returns {string[]} those that were watched
   */
  unwatch (symbols) {
    const removed = symbols.filter((s) => this.#wanted.delete(s))
    for (const s of removed) this.#delivery.delete(s)
    this.settle(removed, { code: 'CANCELLED', message: 'unsubscribed before the server confirmed' })
    return removed
  }

  /**
   * The server refused symbols: out of the watch set, and whoever waits
   * for them gets the error.
   *
   * @param {string[]} symbols
   * @param {ErrorInfo} error
   * @returns {string[]} those that were watched
   */
  refuse (symbols, error) {
    const dropped = symbols.filter((s) => this.#wanted.delete(s))
    this.settle(symbols, error)
    return dropped
  }

  /**
   * Sub requests for `symbols`, one per delivery: each carries its symbols'
   * mode and maxRate.
   *
   * @param {string[]} symbols
   * @returns {[string[], Delivery | undefined][]}
   */
  byDelivery (symbols) {
    if (this.#delivery.size === 0) return [[symbols, undefined]]
    /** @type {Map<string, string[]>} */
    const groups = new Map()
    for (const s of symbols) {
      const key = deliveryKey(this.#delivery.get(s))
      const group = groups.get(key)
      if (group) group.push(s)
      else groups.set(key, [s])
    }
    return [...groups.values()].map((group) => [group, this.#delivery.get(group[0])])
  }

  /**
   * An ack: it lists the connection's full subscription set after the
   * request, and those of it served delayed. Resolves the waits it completes.
   *
   * @param {string[]} symbols
   * @param {string[]} [delayed] the ack's `delayed` (absent: none)
   * @returns {boolean} whether the set served delayed changed
   */
  acked (symbols, delayed = []) {
    const before = this.#delayed
    this.#delayed = new Set(delayed)
    this.#held.acked(symbols)
    return before.size !== this.#delayed.size || delayed.some((s) => !before.has(s))
  }

  /** A new connection holds nothing. */
  clearHeld () {
    this.#held.clear()
  }

  /**
   * @param {string[]} symbols
   * @param {boolean} live whether the connection's acks count now
   * @returns {Promise<HeldResult>} once the server holds all of them, or
   *   with the error that made it refuse one
   */
  held (symbols, live) {
    return this.#held.wait(symbols, live)
  }

  /**
   * Ends the waits that include any of `symbols` with `error`.
   *
   * @param {string[]} symbols
   * @param {ErrorInfo} error
   */
  settle (symbols, error) {
    this.#held.settle(symbols, error)
  }

  /** @param {ErrorInfo} error ends every wait with it */
  settleAll (error) {
    this.#held.settleAll(error)
  }

  /**
   * What brings the server in line with the watch set.
   *
   * @returns {{remove: string[], add: string[]}}
   */
  diff () {
    return {
      remove: this.#held.list.filter((s) => !this.#wanted.has(s)),
      add: [...this.#wanted].filter((s) => !this.#held.has(s))
    }
  }
}
