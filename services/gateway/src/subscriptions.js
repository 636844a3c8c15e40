// What one connection holds: the symbols it subscribed, in order, with the
// delivery and timeline of each, its bar and its book subscriptions. A record with
// no I/O: sessions (session.js), bar and book requests (bars/, books/)
// change it, the outbox (outbox.js) reads it, and the Connection owns it
// beside the outbox whose queued updates some changes invalidate
// (Connection.redeliver, setDelayed, unsubscribe).
//
// Idle connections are what a gateway holds most of, so the defaults cost
// nothing: a shared empty list until the first `sub`, and each map or set
// null until some symbol needs it.

import { FULL_RATE } from './delivery.js'

/** @type {readonly string[]} */
const NONE = []

export class Subscriptions {
  /**
   * Subscribed symbols, in order. An array, not a Set: at the usual few
   * dozen symbols it costs a third of the memory; see holds() for large lists.
   * @type {readonly string[]}
   */
  #symbols = NONE
  /**
   * Delivery of the symbols not at FULL_RATE; null while every one is.
   * @type {Map<string, number> | null}
   */
  #delivery = null
  /**
   * The held symbols served delayed (from the delayed hub); null while none is.
   * @type {Set<string> | null}
   */
  #delayed = null
  /**
   * Those of #delayed that a `sub` asked delayed itself (`"delayed":true`)
   * rather than leaving the timeline to the token: a refresh granting them
   * real-time leaves them delayed, it moves the others. null while none.
   * @type {Set<string> | null}
   */
  #askedDelayed = null
  /**
   * Bar subscriptions: `${symbol} ${interval}` -> whether served delayed;
   * null while none (the series themselves are the BarHubs', bars/bar-hub.js).
   * @type {Map<string, boolean> | null}
   */
  #bars = null
  /**
   * The keys of #bars served delayed because a bars `sub` asked
   * (`"delayed":true`), as #askedDelayed is for quotes; null while none.
   * @type {Set<string> | null}
   */
  #barsAsked = null
  /**
   * Book subscriptions: `${symbol} ${depth}` -> its delivery (delivery.js:
   * DISTINCT, FULL_RATE or a maxRate); null while none (the books
   * themselves are the BookHub's, books/book-hub.js).
   * @type {Map<string, number> | null}
   */
  #books = null

  /** @returns {readonly string[]} the subscribed symbols, in order */
  get symbols () { return this.#symbols }

  /** Quote, bar and book subscriptions together: what WSPS_MAX_SUBSCRIPTIONS bounds. */
  get count () { return this.#symbols.length + this.barCount + (this.#books?.size ?? 0) }

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
   * @returns {number} its delivery (DISTINCT, FULL_RATE or a maxRate: delivery.js)
   */
  deliveryOf (symbol) {
    return this.#delivery?.get(symbol) ?? FULL_RATE
  }

  /**
   * @param {string} symbol
   * @returns {boolean} whether it is held delayed
   */
  delayedOf (symbol) {
    return this.#delayed !== null && this.#delayed.has(symbol)
  }

  /**
   * @param {string} symbol
   * @returns {boolean} whether it is held delayed because a `sub` asked
   *   (`"delayed":true`), not because the token grants it delayed only
   */
  askedDelayed (symbol) {
    return this.#askedDelayed !== null && this.#askedDelayed.has(symbol)
  }

  /**
   * Adds symbols it does not hold yet (the caller checked).
   *
   * @param {readonly string[]} fresh
   * @param {number} delivery
   */
  add (fresh, delivery) {
    // concat allocates exactly what is held; push would leave slack in
    // every idle connection's list.
    if (fresh.length) this.#symbols = this.#symbols.concat(fresh)
    for (const s of fresh) this.setDelivery(s, delivery)
  }

  /**
   * @param {string} symbol
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
   * Marks a held symbol delayed or real-time; back to real-time, it is no
   * longer asked delayed either.
   *
   * @param {string} symbol
   * @param {boolean} delayed
   */
  setDelayed (symbol, delayed) {
    if (delayed) {
      (this.#delayed ??= new Set()).add(symbol)
    } else {
      this.#delayed = without(this.#delayed, symbol)
      this.#askedDelayed = without(this.#askedDelayed, symbol)
    }
  }

  /**
   * Notes whether the latest `sub` naming these held symbols asked for
   * their timeline itself (`"delayed":true`) or left it to the token
   * (asked false: no `delayed`, or `false`). Only delayed ones are noted.
   *
   * @param {readonly string[]} symbols
   * @param {boolean} asked
   */
  askDelayed (symbols, asked) {
    for (const s of symbols) {
      if (asked && this.delayedOf(s)) (this.#askedDelayed ??= new Set()).add(s)
      else this.#askedDelayed = without(this.#askedDelayed, s)
    }
  }

  /**
   * Removes symbols.
   *
   * @param {readonly string[]} symbols
   * @param {(symbol: string, delivery: number, delayed: boolean) => void} onRemoved called for
   *   each symbol that was held, with the delivery it had and whether it was delayed
   */
  remove (symbols, onRemoved) {
    const gone = new Set(symbols)
    /** @type {string[]} */
    const kept = []
    for (const s of this.#symbols) {
      if (gone.has(s)) {
        onRemoved(s, this.deliveryOf(s), this.delayedOf(s))
        this.setDelivery(s, FULL_RATE)
        this.setDelayed(s, false)
      } else {
        kept.push(s)
      }
    }
    this.#symbols = kept.length ? kept : NONE
  }

  /** Bar subscriptions held, each (symbol, interval) one. */
  get barCount () {
    return this.#bars?.size ?? 0
  }

  /**
   * @param {string} interval
   * @returns {string[]} the symbols it holds bars of this interval of, in the order subscribed
   */
  barsOf (interval) {
    /** @type {string[]} */
    const out = []
    if (this.#bars === null) return out
    const tail = ` ${interval}`
    for (const key of this.#bars.keys()) if (key.endsWith(tail)) out.push(key.slice(0, -tail.length))
    return out
  }

  /**
   * @param {string} symbol
   * @param {string} interval
   * @returns {boolean | undefined} whether its bars are served delayed; undefined: not held
   */
  barDelayed (symbol, interval) {
    return this.#bars?.get(`${symbol} ${interval}`)
  }

  /** @returns {[symbol: string, interval: string, delayed: boolean][]} every bar subscription */
  barSubscriptions () {
    if (this.#bars === null) return []
    return [...this.#bars].map(([key, delayed]) => {
      const i = key.indexOf(' ')
      return [key.slice(0, i), key.slice(i + 1), delayed]
    })
  }

  /**
   * Holds (or moves to the other timeline) a bar subscription (the caller
   * adds it to its series), noting whether the bars `sub` asked for its
   * timeline itself (`"delayed":true`) or left it to the token.
   *
   * @param {string} symbol
   * @param {string} interval
   * @param {boolean} delayed
   * @param {boolean} [asked] only of a delayed one
   */
  holdBars (symbol, interval, delayed, asked = false) {
    const key = `${symbol} ${interval}`
    ;(this.#bars ??= new Map()).set(key, delayed)
    if (delayed && asked) (this.#barsAsked ??= new Set()).add(key)
    else this.#barsAsked = without(this.#barsAsked, key)
  }

  /**
   * @param {string} symbol
   * @param {string} interval
   * @returns {boolean} whether its bars are held delayed because a bars
   *   `sub` asked (`"delayed":true`), not because the token grants delayed only
   */
  barsAsked (symbol, interval) {
    return this.#barsAsked !== null && this.#barsAsked.has(`${symbol} ${interval}`)
  }

  /**
   * @param {string} symbol
   * @param {string} interval
   * @returns {boolean} whether it was held
   */
  dropBars (symbol, interval) {
    const key = `${symbol} ${interval}`
    if (this.#bars === null || !this.#bars.delete(key)) return false
    if (this.#bars.size === 0) this.#bars = null
    this.#barsAsked = without(this.#barsAsked, key)
    return true
  }

  /**
   * @param {string} symbol
   * @param {number} depth
   * @param {number} [delivery] DISTINCT (every change its own frame), FULL_RATE (merged per
   *   batching window) or a maxRate (merged, at most that many frames a second)
   * @returns {boolean} whether it was held already, so
   */
  holdBook (symbol, depth, delivery = FULL_RATE) {
    const key = `${symbol} ${depth}`
    const books = (this.#books ??= new Map())
    const had = books.get(key) === delivery
    books.set(key, delivery)
    return had
  }

  /**
   * @param {string} symbol
   * @param {number} depth
   * @returns {number | undefined} the delivery it holds the book with (undefined: not held)
   */
  bookDelivery (symbol, depth) {
    return this.#books?.get(`${symbol} ${depth}`)
  }

  /**
   * @param {string} symbol
   * @param {number} depth
   * @returns {boolean} whether it was held
   */
  dropBook (symbol, depth) {
    if (this.#books === null || !this.#books.delete(`${symbol} ${depth}`)) return false
    if (this.#books.size === 0) this.#books = null
    return true
  }

  /**
   * @param {number} depth
   * @returns {string[]} the symbols whose book it holds at this depth, in the order subscribed
   */
  booksOf (depth) {
    return this.bookSubscriptions().filter(([, d]) => d === depth).map(([s]) => s)
  }

  /** @returns {[symbol: string, depth: number][]} every book subscription */
  bookSubscriptions () {
    if (this.#books === null) return []
    return [...this.#books.keys()].map((key) => {
      const at = key.lastIndexOf(' ')
      return [key.slice(0, at), Number(key.slice(at + 1))]
    })
  }

  /** Forgets everything (the connection closed). */
  clear () {
    this.#symbols = NONE
    this.#books = null
    this.#delivery = this.#bars = null
    this.#delayed = this.#askedDelayed = this.#barsAsked = null
  }
}

/**
 * A set without one key, or null once empty (the common case costs no set).
 *
 * @param {Set<string> | null} set
 * @param {string} key
 * @returns {Set<string> | null}
 */
function without (set, key) {
  if (set === null) return null
  set.delete(key)
  return set.size === 0 ? null : set
}
