// The order books this gateway serves, one BookFeed per symbol while some
// connection holds it (or a request waits for it: open()). A book starts by subscribing its channel and then
// reading the whole book from Redis: messages that arrive meanwhile wait,
// and those the read already covers are dropped by seq, so nothing falls
// between the read and the channel. The same read again repairs a feed
// after a lost message (a seq that skips) or a broker reconnect: its
// subscribers get the difference as one more update. Changes are sent
// once per batching window (WSPS_BATCH_MS; 0: once per event-loop turn),
// what a window's readers hold conflated into one frame per window.

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
 * @property {(symbols: string[], leaseMs: number) => Promise<void>} renewDemand ask the fetchers to keep fetching
 *   these (a simulated market makes their books from their quotes)
 *
 * @typedef {object} Entry
 * @property {BookFeed} feed
 * @property {Promise<boolean | Error>} ready resolves once first read: whether there is a book (an Error: it could not be read)
 * @property {((found: boolean | Error) => void) | null} answer settles `ready` (null once it did)
 * @property {NodeJS.Timeout} [giveUp] when the first answer is "no book"
 * @property {number} pins open() calls not released yet
 * @property {BookMessage[] | null} waiting messages that arrived during a read
 * @property {boolean} reading a read is in flight
 * @property {boolean} again another read is needed when this one ends
 * @property {NodeJS.Timeout} [stale] the feed is interrupted: when its grace ends, its
 *   subscribers hold an empty, out-of-sync book until the read that repairs it
 */

/**
 * @typedef {object} BookMetrics
 * @property {{set: (n: number) => void}} held books held (wsps_gateway_books)
 * @property {{inc: (labels: {cause: ReadCause}) => void}} reads whole-book reads (wsps_gateway_book_reads_total)
 * @property {{inc: () => void}} unsynced out-of-sync snapshots told on an interruption (wsps_gateway_books_unsynced_total)
 * @property {{inc: () => void}} rewound books read behind the one held in its epoch: writes Redis lost (wsps_gateway_books_rewound_total)
 *
 * @typedef {'first' | 'gap' | 'resync' | 'retry'} ReadCause
 */

/** @type {BookMetrics} */
const NO_METRICS = { held: { set () {} }, reads: { inc () {} }, unsynced: { inc () {} }, rewound: { inc () {} } }

/** A failed read is tried again after this long while the book has subscribers. */
const RETRY_MS = 1000

export class BookHub {
  #source
  #log
  #demandLeaseMs
  #appearMs
  #staleGraceMs
  #batchMs
  #metrics
  /** @type {Set<BookFeed>} books changed since the last flush */
  #dirty = new Set()
  /** @type {NodeJS.Timeout | NodeJS.Immediate | null} */
  #timer = null
  /** @type {Map<string, Entry>} */
  #entries = new Map()
  #renewer

  /**
   * @param {object} options
   * @param {BookSource} options.source
   * @param {number} options.demandLeaseMs WSPS_DEMAND_LEASE_MS: books held are asked for this long, renewed at a third
   * @param {number} [options.appearMs] how long a book not there yet may take to appear before NO_BOOK
   * @param {number} [options.staleGraceMs] an interruption shorter than this is not told (WSPS_STALE_GRACE_MS)
   * @param {number} [options.batchMs] WSPS_BATCH_MS: the changes of this long go out as one frame per window (0: of one event-loop turn)
   * @param {BookMetrics} [options.metrics]
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ source, demandLeaseMs, appearMs = 3000, staleGraceMs = 1000, batchMs = 0, metrics = NO_METRICS, logger }) {
    this.#source = source
    this.#batchMs = batchMs
    this.#metrics = metrics
    this.#demandLeaseMs = demandLeaseMs
    this.#appearMs = appearMs
    this.#staleGraceMs = staleGraceMs
    this.#log = logger.child({ component: 'books' })
    this.#renewer = setInterval(() => {
      if (this.#entries.size) this.#source.renewDemand([...this.#entries.keys()], this.#demandLeaseMs).catch((/** @type {Error} */ err) => this.#log.warn({ err: err.message }, 'book demand not renewed'))
    }, Math.floor(demandLeaseMs / 3))
    this.#renewer.unref()
  }

  /** Stops renewing demand and sending (the gateway is closing). */
  close () {
    clearInterval(this.#renewer)
    this.#clearTimer()
    this.#dirty.clear()
  }

  /** Sends every book's changes now instead of at the end of the window (tests). */
  flushNow () {
    this.#clearTimer()
    this.#flush()
  }

  /** @param {BookFeed} feed changed */
  #changed = (feed) => {
    this.#dirty.add(feed)
    if (this.#timer === null) this.#timer = this.#batchMs > 0 ? setTimeout(this.#flush, this.#batchMs) : setImmediate(this.#flush)
  }

  #flush = () => {
    this.#timer = null
    const dirty = [...this.#dirty]
    this.#dirty.clear()
    for (const feed of dirty) feed.flush()
  }

  #clearTimer () {
    if (this.#timer === null) return
    clearTimeout(/** @type {NodeJS.Timeout} */ (this.#timer))
    clearImmediate(/** @type {NodeJS.Immediate} */ (this.#timer))
    this.#timer = null
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
   * @param {string} symbol
   * @param {number} depth
   * @param {number} delivery
   * @returns {import('../text-frame.js').TextFrame | null} a snapshot of that window as its readers hold it (a slow one catching up); null: not held
   */
  snapshotOf (symbol, depth, delivery) {
    return this.#entries.get(symbol)?.feed.snapshotOf(depth, delivery) ?? null
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
    else if (e.feed.onMessage(msg) === Applied.GAP) this.#read(symbol, e, 'gap')
    else this.#answer(symbol, e)
  }

  /**
   * The broker's connection came back (or some of its channels moved): those
   * books' channels are gone and they may have missed messages; each is
   * subscribed and read again.
   *
   * @param {string[]} [symbols] undefined: every book held
   */
  resync (symbols) {
    const named = symbols === undefined ? null : new Set(symbols)
    const lost = [...this.#entries.keys()].filter((s) => named === null || named.has(s))
    if (lost.length === 0) return
    // Their channels went with the connection: subscribed again, then read.
    this.#source.subscribeBooks(lost).then(() => {
      for (const s of lost) {
        const e = this.#entries.get(s)
        if (e !== undefined) this.#read(s, e, 'resync')
      }
    }, (/** @type {Error} */ err) => {
      this.#log.warn({ books: lost.length, err: err.message }, 'book channels not subscribed again; tried again')
      setTimeout(() => this.resync(lost.filter((s) => this.#entries.has(s))), RETRY_MS).unref()
    })
  }

  /**
   * The broker's feed of these books is interrupted (as Hub.interrupted):
   * after the grace, or at once when the link was found silent, their
   * subscribers get an out-of-sync snapshot, never a frozen book shown as
   * live; the read after the reconnect (resync) gives them the book again.
   *
   * @param {string[] | undefined} symbols undefined: every book held
   * @param {boolean} now found silent: told without the grace
   */
  interrupted (symbols, now) {
    const named = symbols === undefined ? null : new Set(symbols)
    for (const [s, e] of this.#entries) {
      if ((named !== null && !named.has(s)) || e.stale !== undefined) continue
      e.stale = setTimeout(() => {
        if (this.#entries.get(s) === e && e.feed.interrupt()) this.#metrics.unsynced.inc()
      }, now ? 0 : this.#staleGraceMs)
      e.stale.unref()
    }
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
    const e = { feed: new BookFeed(symbol, this.#changed), ready: new Promise((resolve) => { settle = resolve }), answer: null, pins: 0, waiting: [], reading: false, again: false }
    e.answer = (found) => {
      e.answer = null
      settle(found)
    }
    this.#entries.set(symbol, e)
    this.#metrics.held.set(this.#entries.size)
    this.#source.renewDemand([symbol], this.#demandLeaseMs).catch(() => {})
    this.#source.subscribeBooks([symbol]).then(
      () => this.#read(symbol, e, 'first'),
      (/** @type {Error} */ err) => {
        this.#log.warn({ symbol, err: err.message }, 'book channel not subscribed')
        this.#entries.delete(symbol)
        this.#metrics.held.set(this.#entries.size)
        e.answer?.(err)
      })
    return e
  }

  /**
   * Reads the whole book and takes it, then what arrived meanwhile; again
   * while a message skips ahead.
   *
   * @param {string} symbol
   * @param {Entry} e
   * @param {ReadCause} cause
   */
  #read (symbol, e, cause) {
    if (e.reading) {
      e.again = true
      return
    }
    e.reading = true
    this.#metrics.reads.inc({ cause })
    e.waiting ??= []
    this.#source.readBook(symbol).then((state) => {
      e.reading = false
      if (this.#entries.get(symbol) !== e) return
      clearTimeout(e.stale)
      e.stale = undefined
      if (state === null) e.feed.lost()
      else if (e.feed.load(state)) {
        this.#metrics.rewound.inc()
        this.#log.warn({ symbol, seq: state.seq, epoch: state.epoch }, 'the book read is behind the one delivered: writes lost by Redis (a failover?); sent whole')
      }
      const waiting = /** @type {BookMessage[]} */ (e.waiting)
      e.waiting = null
      let gap = e.again
      e.again = false
      for (const msg of waiting) if (e.feed.onMessage(msg) === Applied.GAP) gap = true
      this.#answer(symbol, e)
      if (gap) this.#read(symbol, e, 'gap')
    }, (/** @type {Error} */ err) => {
      e.reading = false
      if (this.#entries.get(symbol) !== e) return
      if (e.answer !== null) {
        // Nobody holds it yet: the open() that asked is told it failed.
        this.#log.warn({ symbol, err: err.message }, 'book read failed')
        this.#entries.delete(symbol)
        this.#metrics.held.set(this.#entries.size)
        this.#source.unsubscribeBooks([symbol]).catch(() => {})
        e.answer(err)
        return
      }
      // Messages wait meanwhile; the read after covers them.
      this.#log.warn({ symbol, err: err.message }, 'book read failed; tried again')
      setTimeout(() => { if (this.#entries.get(symbol) === e) this.#read(symbol, e, 'retry') }, RETRY_MS).unref()
    })
  }

  /**
   * The first open() of a book is answered once the book is known, or
   * after appearMs without one: a symbol just asked for is often fetched
   * (and its book made) within that.
   *
   * @param {string} symbol
   * @param {Entry} e
   */
  #answer (symbol, e) {
    const answer = e.answer
    if (answer === null) return
    if (e.feed.known) {
      clearTimeout(e.giveUp)
      answer(true)
      return
    }
    if (e.giveUp !== undefined) return
    e.giveUp = setTimeout(() => { if (e.answer !== null && !e.feed.known) e.answer(false) }, this.#appearMs)
    e.giveUp.unref()
  }

  /**
   * @param {string} symbol
   * @param {Entry} e
   */
  #dropIfIdle (symbol, e) {
    if (e.pins > 0 || e.feed.subscribers > 0 || this.#entries.get(symbol) !== e) return
    clearTimeout(e.giveUp)
    clearTimeout(e.stale)
    this.#entries.delete(symbol)
    this.#metrics.held.set(this.#entries.size)
    this.#source.unsubscribeBooks([symbol]).catch((/** @type {Error} */ err) => this.#log.warn({ symbol, err: err.message }, 'book channel not unsubscribed'))
  }
}
