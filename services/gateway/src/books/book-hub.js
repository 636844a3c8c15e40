// The order books this gateway serves, one BookFeed per symbol while some
// connection holds it (or a request waits for it: open()). A book starts by subscribing its channel and then
// reading the whole book from Redis: messages that arrive meanwhile wait,
// and those the read already covers are dropped by seq, so nothing falls
// between the read and the channel. The same read again repairs a feed
// after a lost message (a seq that skips) or a broker reconnect: its
// subscribers get the difference as one more update.

import { Applied, BookFeed } from './book-feed.js'

/**
 * @typedef {import('./book-feed.js').BookState} BookState
 * @typedef {import('./book-feed.js').BookMessage} BookMessage
 * @typedef {import('../connection.js').Connection} Client
 *
 * @typedef {object} BookSource what books need of the broker
 * @property {(symbols: string[]) => Promise<void>} subscribeBooks
 * @property {(symbols: string[]) => Promise<void>} unsubscribeBooks
 * @property {(symbol: string) => Promise<BookState | null>} readBook the whole book, null when there is none
 *
 * @typedef {object} Entry
 * @property {BookFeed} feed
 * @property {Promise<boolean | Error>} ready resolves once first read: whether there is a book (an Error: it could not be read)
 * @property {number} pins open() calls not released yet
 * @property {BookMessage[] | null} waiting messages that arrived during a read
 * @property {boolean} again another read is needed when this one ends
 */

/** A failed read is tried again after this long while the book has subscribers. */
const RETRY_MS = 1000

export class BookHub {
  #source
  #log
  /** @type {Map<string, Entry>} */
  #entries = new Map()

  /**
   * @param {object} options
   * @param {BookSource} options.source
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ source, logger }) {
    this.#source = source
    this.#log = logger.child({ component: 'books' })
  }

  /**
   * Makes the books of these symbols ready here and keeps them until the
   * returned release() (called in any case): add() may be called meanwhile
   * for any of them that has a book.
   *
   * @param {string[]} symbols
   * @returns {{ready: Promise<string[]>, release: () => void}} ready: those
   *   without a book; rejects when some could not be read
   */
  open (symbols) {
    const entries = symbols.map((s) => this.#entry(s))
    for (const e of entries) e.pins++
    const ready = Promise.all(entries.map((e) => e.ready)).then((found) => {
      const failed = found.find((f) => f instanceof Error)
      if (failed !== undefined) throw failed
      return symbols.filter((_, i) => found[i] === false)
    })
    let released = false
    const release = () => {
      if (released) return
      released = true
      entries.forEach((e, i) => {
        e.pins--
        this.#dropIfIdle(symbols[i], e)
      })
    }
    return { ready, release }
  }

  /**
   * @param {Client} client
   * @param {string} symbol opened and with a book
   * @param {number} depth
   */
  add (client, symbol, depth) {
    this.#entries.get(symbol)?.feed.add(client, depth)
  }

  /**
   * @param {Client} client
   * @param {string} symbol
   * @param {number} depth
   */
  remove (client, symbol, depth) {
    const e = this.#entries.get(symbol)
    if (e === undefined) return
    e.feed.remove(client, depth)
    this.#dropIfIdle(symbol, e)
  }

  /**
   * A message of a book channel.
   *
   * @param {string} symbol
   * @param {string} raw
   */
  onMessage (symbol, raw) {
    const e = this.#entries.get(symbol)
    if (e === undefined) return
    /** @type {BookMessage} */
    let msg
    try {
      msg = JSON.parse(raw)
    } catch {
      this.#log.warn({ symbol }, 'a book message that is not JSON: dropped')
      return
    }
    if (e.waiting !== null) e.waiting.push(msg)
    else if (e.feed.onMessage(msg) === Applied.GAP) this.#read(symbol, e)
  }

  /**
   * The broker's connection came back (or some of its channels moved): any
   * book may have missed messages; each is read again.
   */
  resync () {
    for (const [s, e] of this.#entries) this.#read(s, e)
  }

  /** @returns {number} books held */
  get size () { return this.#entries.size }

  /**
   * @param {string} symbol
   * @returns {Entry}
   */
  #entry (symbol) {
    const had = this.#entries.get(symbol)
    if (had !== undefined) return had
    /** @type {(found: boolean | Error) => void} */
    let settle = () => {}
    /** @type {Entry} */
    const e = { feed: new BookFeed(symbol), ready: new Promise((resolve) => { settle = resolve }), pins: 0, waiting: [], again: false }
    this.#entries.set(symbol, e)
    this.#source.subscribeBooks([symbol]).then(
      () => this.#read(symbol, e, settle),
      (/** @type {Error} */ err) => {
        this.#log.warn({ symbol, err: err.message }, 'book channel not subscribed')
        this.#entries.delete(symbol)
        settle(err)
      })
    return e
  }

  /**
   * Reads the whole book and takes it, then what arrived meanwhile; again
   * while a message skips ahead.
   *
   * @param {string} symbol
   * @param {Entry} e
   * @param {(found: boolean | Error) => void} [first] the first read's answer
   */
  #read (symbol, e, first) {
    if (e.waiting !== null && first === undefined) {
      e.again = true
      return
    }
    e.waiting ??= []
    this.#source.readBook(symbol).then((state) => {
      if (this.#entries.get(symbol) !== e) return
      if (state === null) e.feed.lost()
      else e.feed.load(state)
      first?.(state !== null)
      const waiting = /** @type {BookMessage[]} */ (e.waiting)
      e.waiting = null
      let gap = e.again
      e.again = false
      for (const msg of waiting) if (e.feed.onMessage(msg) === Applied.GAP) gap = true
      if (gap) this.#read(symbol, e)
    }, (/** @type {Error} */ err) => {
      this.#log.warn({ symbol, err: err.message }, 'book read failed; tried again')
      if (first !== undefined) {
        // Nobody holds it yet: the open() that asked is told it failed.
        this.#entries.delete(symbol)
        this.#source.unsubscribeBooks([symbol]).catch(() => {})
        first(err)
        return
      }
      setTimeout(() => {
        if (this.#entries.get(symbol) !== e) return
        e.waiting = null
        this.#read(symbol, e)
      }, RETRY_MS).unref()
    })
  }

  /**
   * @param {string} symbol
   * @param {Entry} e
   */
  #dropIfIdle (symbol, e) {
    if (e.pins > 0 || e.feed.subscribers > 0 || this.#entries.get(symbol) !== e) return
    this.#entries.delete(symbol)
    this.#source.unsubscribeBooks([symbol]).catch((/** @type {Error} */ err) => this.#log.warn({ symbol, err: err.message }, 'book channel not unsubscribed'))
  }
}
