// The order books a client wants (docs/protocol.md, Order books): the
// depth of each symbol's book, the books held (the protocol's
// BookReceiver, the one owner of what is held), what the server holds from
// the latest ack of each depth, and the subscribeBook() calls waiting for
// it. A book subscription is apart from the quote subscription of the same
// symbol; one depth per symbol.

import { BookReceiver } from './book-receiver.js'

/**
 * @typedef {import('./types.js').ErrorInfo} ErrorInfo
 * @typedef {import('./book-receiver.js').HeldBook} HeldBook
 * @typedef {{depth: number, symbols: string[], noBook: string[]}} BookSubscribed what subscribeBook() resolves with
 * @typedef {{pending: Set<string>, symbols: string[], depth: number, noBook: string[], resolve: (r: BookSubscribed) => void, reject: (e: Error) => void}} Waiter
 */

/**
 * @param {string} symbol
 * @param {number} depth
 */
const keyOf = (symbol, depth) => `${symbol} ${depth}`

/**
 * @param {ErrorInfo} error
 * @returns {Error & ErrorInfo} what a subscribeBook() promise rejects with: its `code` is the ErrorCode
 */
export function bookError (error) {
  return Object.assign(new Error(`${error.code}: ${error.message}`), error)
}

/**
 * @typedef {{mode?: 'distinct', maxRate?: number}} BookDelivery a book `sub`'s delivery fields
 *   ({}: merge, at full rate)
 */

/** @type {BookDelivery} */
const MERGE = Object.freeze({})

/**
 * @param {BookDelivery} d
 * @returns {string} the same for the same delivery ('' for merge at full rate)
 */
const deliveryKey = (d) => (d.mode === 'distinct' ? 'distinct' : d.maxRate === undefined ? '' : String(d.maxRate))

export class BookSubscriptions {
  /** the wanted set (symbol -> depth) and the books held */
  receiver = new BookReceiver()
  /** @type {Set<string>} `${symbol} ${depth}` the server holds, from the latest ack of each depth */
  #held = new Set()
  /** @type {Set<Waiter>} */
  #waiters = new Set()
  /** Resyncs asked for (a gap or a checksum mismatch): unsub + sub of a book. */
  resyncs = 0
  /** @type {Map<string, BookDelivery>} books wanted with a delivery other than merge at full rate */
  #delivery = new Map()

  /**
   * @param {string} symbol
   * @returns {BookDelivery} how its book is wanted (the `sub`'s mode and maxRate; {} is merge at full rate)
   */
  deliveryOf (symbol) {
    return this.#delivery.get(symbol) ?? MERGE
  }

  /** @returns {number} books wanted */
  get size () {
    return this.receiver.symbols.length
  }

  /**
   * Adds to the wanted set at this depth.
   *
   * @param {string[]} symbols distinct
   * @param {number} depth
   * @param {BookDelivery} [delivery] the mode and maxRate (docs/protocol.md, Order books)
   * @returns {{send: string[], moved: Map<number, string[]>}} send: to subscribe (new, at a new depth or
   *   with another delivery); moved: those held at another depth before, by that depth (to unsubscribe there)
   */
  watch (symbols, depth, delivery = MERGE) {
    const key = deliveryKey(delivery)
    /** @type {string[]} */
    const send = []
    /** @type {Map<number, string[]>} */
    const moved = new Map()
    for (const s of symbols) {
      const was = this.receiver.depthOf(s)
      const changed = deliveryKey(this.deliveryOf(s)) !== key
      if (key === '') this.#delivery.delete(s)
      else this.#delivery.set(s, delivery)
      if (was === depth) {
        // Another delivery at the same depth: the gateway moves it (a sub, no unsub).
        if (changed) send.push(s)
        continue
      }
      if (was !== undefined) {
        moved.set(was, [...(moved.get(was) ?? []), s])
        this.#held.delete(keyOf(s, was))
      }
      this.receiver.want(s, depth)
      send.push(s)
    }
    return { send, moved }
  }

  /**
   * Out of the wanted set; their books are forgotten.
   *
   * @param {string[]} symbols
   * @returns {Map<number, string[]>} those that were wanted, by depth
   */
  unwatch (symbols) {
    /** @type {Map<number, string[]>} */
    const byDepth = new Map()
    for (const s of symbols) {
      const depth = this.receiver.depthOf(s)
      if (depth === undefined) continue
      byDepth.set(depth, [...(byDepth.get(depth) ?? []), s])
      this.receiver.forget(s)
      this.#delivery.delete(s)
      this.#held.delete(keyOf(s, depth))
    }
    this.#end([...byDepth].flatMap(([d, list]) => list.map((s) => keyOf(s, d))), { code: 'CANCELLED', message: 'unsubscribed before the server confirmed' })
    return byDepth
  }

  /**
   * @returns {import('./sse-socket.js').StreamBooks | null} what an SSE stream carries of the
   *   wanted set: the books of the first one's depth and delivery (null: none wanted)
   */
  forStream () {
    const first = this.receiver.symbols[0]
    if (first === undefined) return null
    const depth = /** @type {number} */ (this.receiver.depthOf(first))
    const delivery = this.deliveryOf(first)
    const key = deliveryKey(delivery)
    const symbols = this.receiver.symbols.filter((s) => this.receiver.depthOf(s) === depth && deliveryKey(this.deliveryOf(s)) === key)
    return { symbols, depth, delivery }
  }

  /**
   * @param {string[]} symbols
   * @returns {[BookDelivery, string[]][]} them, by how they are wanted
   */
  byDelivery (symbols) {
    /** @type {Map<string, [BookDelivery, string[]]>} */
    const out = new Map()
    for (const s of symbols) {
      const d = this.deliveryOf(s)
      const key = deliveryKey(d)
      const group = out.get(key)
      if (group) group[1].push(s)
      else out.set(key, [d, [s]])
    }
    return [...out.values()]
  }

  /** @returns {Map<number, string[]>} the wanted set by depth (a new connection asks for all of it) */
  byDepth () {
    /** @type {Map<number, string[]>} */
    const out = new Map()
    for (const s of this.receiver.symbols) {
      const d = /** @type {number} */ (this.receiver.depthOf(s))
      out.set(d, [...(out.get(d) ?? []), s])
    }
    return out
  }

  /** @returns {Map<number, string[]>} as byDepth(), those the server does not hold (after RATE_LIMITED or INTERNAL) */
  missing () {
    /** @type {Map<number, string[]>} */
    const out = new Map()
    for (const [d, list] of this.byDepth()) {
      const rest = list.filter((s) => !this.#held.has(keyOf(s, d)))
      if (rest.length) out.set(d, rest)
    }
    return out
  }

  /**
   * @param {string[]} symbols
   * @param {number} depth
   * @param {boolean} live whether the connection's acks count now
   * @returns {Promise<BookSubscribed>} once the server holds them (those without a book, NO_BOOK, left out);
   *   rejects with bookError() when it refused them
   */
  wait (symbols, depth, live) {
    const pending = new Set(symbols.map((s) => keyOf(s, depth)).filter((k) => !(live && this.#held.has(k))))
    if (pending.size === 0) return Promise.resolve({ depth, symbols, noBook: [] })
    return new Promise((resolve, reject) => this.#waiters.add({ pending, symbols, depth, noBook: [], resolve, reject }))
  }

  /**
   * An ack of a book request: the connection's book subscriptions of that
   * depth after it. Resolves the waits it completes.
   *
   * @param {number} depth
   * @param {string[]} symbols
   */
  acked (depth, symbols) {
    for (const k of [...this.#held]) if (k.endsWith(` ${depth}`)) this.#held.delete(k)
    for (const s of symbols) this.#held.add(keyOf(s, depth))
    for (const w of this.#waiters) {
      for (const k of w.pending) if (this.#held.has(k)) w.pending.delete(k)
      this.#settleIfDone(w)
    }
  }

  /**
   * NO_BOOK: these symbols have no book (the others of the request are
   * subscribed): out of the wanted set, and their waits no longer wait
   * for them.
   *
   * @param {string[]} symbols
   * @param {number} depth
   * @returns {string[]} those that were wanted at that depth
   */
  noBook (symbols, depth) {
    const dropped = symbols.filter((s) => this.receiver.depthOf(s) === depth)
    for (const s of dropped) this.#forget(s)
    for (const w of this.#waiters) {
      for (const s of dropped) if (w.pending.delete(keyOf(s, depth))) w.noBook.push(s)
      this.#settleIfDone(w)
    }
    return dropped
  }

  /**
   * The server refused (or stopped granting) these books: out of the
   * wanted set, and the waits that include one reject.
   *
   * @param {string[]} symbols
   * @param {number | null} depth null: at any depth
   * @param {ErrorInfo} error
   * @returns {string[]} those that were wanted
   */
  refuse (symbols, depth, error) {
    const dropped = symbols.filter((s) => { const d = this.receiver.depthOf(s); return d !== undefined && (depth === null || d === depth) })
    const keys = dropped.map((s) => keyOf(s, /** @type {number} */ (this.receiver.depthOf(s))))
    for (const s of dropped) this.#forget(s)
    this.#end(keys, error)
    return dropped
  }

  /** @param {string} symbol no longer wanted */
  #forget (symbol) {
    this.receiver.forget(symbol)
    this.#delivery.delete(symbol)
  }

  /** A new connection holds nothing (the books held stay readable until their new snapshots). */
  clearHeld () {
    this.#held.clear()
  }

  /** @param {ErrorInfo} error ends every wait with it */
  settleAll (error) {
    for (const w of this.#waiters) w.reject(bookError(error))
    this.#waiters.clear()
  }

  /**
   * @param {string[]} keys
   * @param {ErrorInfo} error
   */
  #end (keys, error) {
    for (const w of this.#waiters) {
      if (!keys.some((k) => w.pending.has(k))) continue
      this.#waiters.delete(w)
      w.reject(bookError(error))
    }
  }

  /** @param {Waiter} w */
  #settleIfDone (w) {
    if (w.pending.size > 0) return
    this.#waiters.delete(w)
    w.resolve({ depth: w.depth, symbols: w.symbols.filter((s) => !w.noBook.includes(s)), noBook: w.noBook })
  }
}
