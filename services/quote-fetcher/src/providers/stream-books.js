// The order books of the ws-stream provider (WSPS_STREAM_BOOKS): for each
// symbol this replica holds whose book some gateway holds (book demand), the
// venue's depth channel is subscribed on the stream's connection, its
// messages kept consistent by the template's book state machine
// (book-templates.js), and the book's top WSPS_STREAM_BOOK_DEPTH levels
// written through the book script: a snapshot when (re)synced, then the
// levels that changed. Each write builds on the seq this replica wrote last
// (expectSeq), so a book another writer moved meanwhile is refused whole,
// never half applied, and written again as a snapshot once the next claim
// confirms this replica still holds the symbol. A lost sequence (a
// gap, a bad checksum, the connection gone) is published as `sync:false`
// before the book is got again: a REST snapshot, or the channel subscribed
// again. Writes of one symbol go one at a time; events that arrive during
// one are folded into the next write (the top as of the last event).

import { windowDelta } from '@wsps/protocol/book'
import { applyBook, booksDemanded, readBook } from '@wsps/shared/books'
import { Code } from '../errors.js'
import { BOOK_TEMPLATES } from './book-templates.js'

/** How long a REST snapshot may take. */
const SNAPSHOT_TIMEOUT_MS = 5000

/**
 * @typedef {import('@wsps/protocol/book').Level} Level
 * @typedef {{bids: Level[], asks: Level[]}} Window
 *
 * @typedef {object} SymbolBook
 * @property {import('./book-templates.js').VenueBook} venue
 * @property {number | null} seq the seq this replica wrote last; null: unknown (read before the next snapshot)
 * @property {Window | 'unsync' | null} written what the stored book holds as far as this replica wrote it; null: not written yet
 * @property {boolean} lost the sequence was lost since the last write: `sync:false` goes out first
 * @property {boolean} writing
 * @property {boolean} dirty
 * @property {boolean} snapshotting a REST snapshot in flight
 * @property {boolean} gone unsubscribed: the last write is `sync:false`, then nothing
 * @property {number} resyncs since the book last moved in sync: a venue that keeps failing is asked ever more slowly
 * @property {boolean} yielded another writer moved the book: nothing is written until the next tick's claim confirms
 *   this replica still holds the symbol (a replica that was paused past its lease must not write its older book over
 *   the new holder's)
 */

/** The longest wait before a book is got again. */
const MAX_RESYNC_DELAY_MS = 30_000

export class StreamBooks {
  /** @type {Map<string, SymbolBook>} */
  #books = new Map()
  #template
  #depth
  #snapshotUrl
  #store
  #metrics
  #log
  #send
  #retryMs
  #now
  #stopped = false
  /** The connection's last message number (templates with `sequence`); null: none seen on this connection. @type {number | null} */
  #sequence = null
  /** Writes in flight, awaited by stop(). @type {Set<Promise<void>>} */
  #draining = new Set()

  /**
   * @param {object} options
   * @param {import('./book-templates.js').BookTemplateName} options.template WSPS_STREAM_BOOKS
   * @param {number} options.depth WSPS_STREAM_BOOK_DEPTH
   * @param {string} options.snapshotUrl WSPS_STREAM_BOOK_SNAPSHOT_URL
   * @param {import('@wsps/shared/books').BookStore} options.store
   * @param {import('../metrics.js').FetcherMetrics} options.metrics
   * @param {import('pino').Logger} options.logger
   * @param {(frame: string) => void} options.send to the venue, on the stream's connection
   * @param {number} options.retryMs a failed or stale REST snapshot is fetched again after this
   * @param {() => number} options.now Redis' clock
   */
  constructor ({ template, depth, snapshotUrl, store, metrics, logger, send, retryMs, now }) {
    this.#template = BOOK_TEMPLATES[template]
    this.#depth = depth
    this.#snapshotUrl = snapshotUrl
    this.#store = store
    this.#metrics = metrics
    this.#log = logger.child({ component: 'stream-books', venue: template })
    this.#send = send
    this.#retryMs = retryMs
    this.#now = now
  }

  /** The JSON.parse reviver fields of the venue (book-templates.js numberTextReviver). */
  get textFields () { return this.#template.textFields }

  /**
   * Follows book demand among the symbols this replica streams: subscribes
   * the venue's depth of those whose book some gateway holds, unsubscribes
   * the others (their book is marked out of sync: nobody keeps it now).
   * @param {string[]} held subscribed on the connection now
   */
  async follow (held) {
    const { redis, keys } = this.#store
    let wanted
    try {
      wanted = new Set(await booksDemanded(/** @type {any} */ (redis), keys, held, this.#now()))
    } catch (err) {
      this.#log.warn({ err: /** @type {Error} */ (err).message }, 'could not read book demand')
      return
    }
    for (const [s, b] of this.#books) {
      if (!b.yielded || !wanted.has(s)) continue
      b.yielded = false
      this.#dirty(s, b)
    }
    const add = [...wanted].filter((s) => !this.#books.has(s))
    const drop = [...this.#books.keys()].filter((s) => !wanted.has(s))
    if (drop.length) {
      for (const f of this.#template.unsubscribe(drop, this.#depth)) this.#send(f)
      for (const s of drop) this.#leave(s)
      this.#log.info({ symbols: drop.length }, 'book channels unsubscribed upstream')
    }
    if (add.length) {
      for (const s of add) {
        this.#books.set(s, { venue: this.#template.create(this.#depth), seq: null, written: null, lost: false, writing: false, dirty: false, snapshotting: false, gone: false, resyncs: 0, yielded: false })
      }
      // What is stored of them is out of sync until the venue's book is known.
      for (const s of add) this.#dirty(s, /** @type {SymbolBook} */ (this.#books.get(s)))
      for (const f of this.#template.subscribe(add, this.#depth)) this.#send(f)
      // Buffering starts with the subscription; the snapshot is fetched after it.
      if (this.#template.resync === 'rest') for (const s of add) this.#fetchSnapshot(s)
      this.#log.info({ symbols: add.length }, 'book channels subscribed upstream')
    }
    this.#metrics.streamBooks.set(this.#books.size)
  }

  /**
   * Takes a vendor message if it is a book message.
   * @param {unknown} message parsed
   * @returns {boolean} it was one (it goes nowhere else)
   */
  take (message) {
    const seq = this.#template.sequence?.(message)
    if (seq !== undefined) {
      // A message lost on the connection may have been any book's: every book is.
      if (this.#sequence !== null && seq !== this.#sequence + 1) for (const [s, b] of this.#books) this.#resync(s, b, 'gap')
      this.#sequence = seq
    }
    const read = this.#template.read(message)
    if (read === null) return false
    if (read.malformed) this.#metrics.streamRecordsDropped.inc({ reason: 'malformed' }, read.malformed)
    for (const r of read.records) {
      const b = this.#books.get(r.symbol)
      if (!b || b.gone) {
        this.#metrics.streamRecordsDropped.inc({ reason: 'unknown_symbol' })
        continue
      }
      const step = r.feed(b.venue)
      if (step === 'applied') this.#dirty(r.symbol, b)
      else if (step === 'gap' || step === 'checksum' || step === 'stale_snapshot') this.#resync(r.symbol, b, step)
    }
    return true
  }

  /** The connection is gone, and every channel with it: each book held is out of sync. */
  closed () {
    this.#sequence = null
    for (const s of [...this.#books.keys()]) this.#leave(s)
    this.#metrics.streamBooks.set(0)
  }

  async stop () {
    this.closed()
    this.#stopped = true
    // The last writes (sync:false) land before the Redis connections close.
    await Promise.all(this.#draining)
  }

  /**
   * @param {string} symbol
   * @param {SymbolBook} b
   * @param {'gap' | 'checksum' | 'stale_snapshot'} reason
   */
  #resync (symbol, b, reason) {
    this.#metrics.streamBookResyncs.inc({ reason })
    this.#log.warn({ code: Code.STREAM_BOOK_RESYNC, symbol, reason }, 'venue book lost its sequence: out of sync until a new snapshot')
    b.lost = true
    this.#dirty(symbol, b)
    b.venue.lost()
    // At once the first time; a book that fails again before it moved in sync waits, doubling.
    const delay = b.resyncs === 0 ? 0 : Math.min(MAX_RESYNC_DELAY_MS, this.#retryMs * 2 ** (b.resyncs - 1))
    b.resyncs++
    setTimeout(() => {
      if (b.gone || this.#stopped) return
      if (this.#template.resync === 'rest') return this.#fetchSnapshot(symbol)
      // The venue sends a new snapshot on a new subscription.
      for (const f of this.#template.unsubscribe([symbol], this.#depth)) this.#send(f)
      for (const f of this.#template.subscribe([symbol], this.#depth)) this.#send(f)
    }, delay).unref()
  }

  /** @param {string} symbol */
  #leave (symbol) {
    const b = this.#books.get(symbol)
    if (!b) return
    this.#books.delete(symbol)
    b.gone = true
    b.venue.lost()
    if (b.written !== null && b.written !== 'unsync') this.#dirty(symbol, b)
  }

  /** @param {string} symbol */
  async #fetchSnapshot (symbol) {
    const b = this.#books.get(symbol)
    if (!b || b.snapshotting || this.#stopped) return
    b.snapshotting = true
    const url = this.#snapshotUrl.replaceAll('{symbol}', encodeURIComponent(symbol)).replaceAll('{depth}', String(this.#depth))
    let step = 'failed'
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(SNAPSHOT_TIMEOUT_MS) })
      const body = res.ok ? await res.json() : null
      const snapshot = /** @type {NonNullable<import('./book-templates.js').BookTemplate['snapshotOf']>} */ (this.#template.snapshotOf)(body)
      if (snapshot === null) throw new Error(res.ok ? 'not a depth snapshot' : `HTTP ${res.status}`)
      if (b.gone) return
      step = /** @type {import('./book-binance.js').DepthBook} */ (b.venue).snapshot(snapshot)
    } catch (err) {
      this.#log.warn({ code: Code.STREAM_BOOK_SNAPSHOT, symbol, err: /** @type {Error} */ (err).message }, 'venue book snapshot failed')
    } finally {
      b.snapshotting = false
    }
    const ok = step === 'applied' || step === 'buffered'
    this.#metrics.streamBookSnapshots.inc({ result: ok ? 'ok' : step })
    if (b.gone || this.#stopped) return
    if (step === 'applied') return this.#dirty(symbol, b)
    // Built, and in sync once the next event joins it.
    if (step === 'buffered') return
    if (step === 'stale_snapshot' || step === 'gap') this.#metrics.streamBookResyncs.inc({ reason: step })
    setTimeout(() => this.#fetchSnapshot(symbol), this.#retryMs).unref()
  }

  /** @param {string} symbol @param {SymbolBook} b */
  #dirty (symbol, b) {
    b.dirty = true
    if (b.writing) return
    const p = this.#drain(symbol, b).finally(() => this.#draining.delete(p))
    this.#draining.add(p)
  }

  /**
   * Writes until what is stored is what the venue's book is: `sync:false`
   * first when the sequence was lost, then the top of the book.
   * @param {string} symbol
   * @param {SymbolBook} b
   */
  async #drain (symbol, b) {
    b.writing = true
    try {
      while (b.dirty && !(b.yielded && !b.gone)) {
        b.dirty = false
        const { redis, keys, ttlMs, sharded } = this.#store
        /** @type {import('@wsps/shared/books').BookUpdate} */
        let update
        /** What the stored book holds once this write is in. @type {Window | 'unsync'} */
        let target = 'unsync'
        const ts = this.#now()
        if (b.lost || b.gone || !b.venue.synced) {
          b.lost = false
          if (b.written === 'unsync') continue
          if (b.written === null) {
            // Not written here (yet, or since a failure): a book stored in
            // sync is no one's now (its holder died, or this replica's write
            // failed) and must not show as live until the venue's is known.
            const stored = await readBook(/** @type {any} */ (redis), keys, symbol)
            b.seq = stored?.seq ?? 0
            if (!stored?.sync) {
              b.written = 'unsync'
              continue
            }
          }
          update = { symbol, kind: 'unsync', bids: [], asks: [], ts }
        } else {
          // The top as of the last event: events during the write wait for the next one.
          target = b.venue.top(this.#depth)
          if (b.written === null || b.written === 'unsync') update = { symbol, kind: 'snapshot', ...target, ts }
          else {
            const delta = windowDelta(b.written, target)
            if (delta.bids.length === 0 && delta.asks.length === 0) continue
            update = { symbol, kind: 'delta', ...delta, ts }
          }
        }
        let expectSeq = b.seq
        if (expectSeq === null) expectSeq = (await readBook(/** @type {any} */ (redis), keys, symbol))?.seq ?? 0
        const result = await applyBook(redis, keys, update, { ttlMs, expectSeq, sharded })
        this.#metrics.books.inc({ result: 'refused' in result ? result.refused : 'written' })
        if ('refused' in result) {
          // Expired (nobook): written whole by the next event. Another writer
          // moved it, or it is pushed: whole again once the next tick's claim
          // says this replica still holds the symbol (follow).
          b.seq = null
          b.written = null
          if (result.refused === 'moved' || result.refused === 'pushed') b.yielded = true
          continue
        }
        b.seq = result.seq
        if (update.kind === 'delta') b.resyncs = 0
        b.written = target
      }
    } catch (err) {
      this.#metrics.books.inc({ result: 'failed' })
      this.#log.warn({ symbol, err: /** @type {Error} */ (err).message }, 'book write failed')
      b.seq = null
      b.written = null
    } finally {
      b.writing = false
    }
  }
}
