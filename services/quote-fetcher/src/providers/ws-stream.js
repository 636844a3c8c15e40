// The ws-stream provider: quotes streamed by a vendor over one WebSocket per
// replica, instead of polled. The upstream session (StreamSession: slot,
// connection, authentication) says when the vendor may be talked to; while it
// is ready, each tick the replica claims its share of the demanded symbols
// (StreamOwnership) and (un)subscribes upstream to match;
// vendor messages are mapped to quote fields (WSPS_STREAM_MAPPING), merged
// into the last known quote of the symbol (vendors send only what changed,
// e.g. a trade without bid/ask) and published in batches per event-loop turn,
// each quote with the fencing token its symbol's ownership had when the
// quote arrived: if the replica was paused, or its Redis link silent, past
// its lease, another replica owns the symbol now and those quotes are
// refused (stream-ownership.js). With WSPS_STREAM_BOOKS, the order books of
// the held symbols some gateway holds a book of come on the same connection
// (stream-books.js).

import { latestQuotes } from '@wsps/shared/latest'
import { parsePublished } from '@wsps/shared/published'
import { compileMapping } from './stream-mapping.js'
import { compileTemplate } from './stream-templates.js'
import { compileAuth, streamUrl } from './stream-auth.js'
import { StreamOwnership } from './stream-ownership.js'
import { StreamSession } from './stream-session.js'
import { ConnectionSlot } from './stream-slot.js'
import { VendorSocket } from './vendor-socket.js'
import { StreamBooks } from './stream-books.js'
import { numberTextReviver } from './book-templates.js'

export class WsStreamFeed {
  /** Symbols subscribed on the current connection. @type {Set<string>} */
  #subscribed = new Set()
  /** @type {() => number} */
  #now
  /** Last known fields per held symbol. @type {Map<string, import('./provider.js').QuoteFields>} */
  #last = new Map()
  /** @type {import('./provider.js').QuoteFields[]} */
  #pending = []
  /** The ownership's fencing token of each pending quote. @type {number[]} */
  #pendingTokens = []
  #flushQueued = false
  /** @type {NodeJS.Timeout | null} */
  #timer = null
  #ticking = Promise.resolve()
  #stopped = false
  #config
  #redis
  #keys
  #publisher
  #metrics
  #log
  #map
  /** The (un)subscribe messages for some symbols, compiled once. @type {(symbols: string[]) => string[]} */
  #subscribeFrames
  /** @type {(symbols: string[]) => string[]} */
  #unsubscribeFrames
  #ownership
  #session
  /** The venue's order books; null: WSPS_STREAM_BOOKS=none. @type {StreamBooks | null} */
  #books = null
  /** @type {((key: string, value: unknown, context?: {source?: string}) => unknown) | undefined} */
  #reviver

  /**
   * @param {object} options
   * @param {import('../config.js').FetcherConfig} options.config
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {import('../publisher.js').Publisher} options.publisher
   * @param {import('../metrics.js').FetcherMetrics} options.metrics
   * @param {import('pino').Logger} options.logger
   * @param {() => number} [options.now] Redis' clock (RedisClock.now): the ts of a record that has none, the ownership leases and the connection slot
   * @param {import('@wsps/shared/books').BookStore} [options.bookStore] where the venue's books are written (WSPS_STREAM_BOOKS)
   */
  constructor ({ config, redis, keys, publisher, metrics, logger, now = Date.now, bookStore }) {
    this.#now = now
    this.#config = config
    this.#redis = redis
    this.#keys = keys
    this.#publisher = publisher
    this.#metrics = metrics
    this.#log = logger.child({ component: 'ws-stream' })
    this.#map = compileMapping(config.streamMapping)
    this.#subscribeFrames = compileTemplate(config.streamSubscribe, config.streamSubscribeBatch)
    this.#unsubscribeFrames = compileTemplate(config.streamUnsubscribe, config.streamSubscribeBatch)
    this.#ownership = new StreamOwnership({
      redis, keys, node: config.nodeName, leaseMs: config.streamLeaseMs, maxSymbols: config.streamMaxSymbols, fenceTtlMs: config.quoteTtlMs, now
    })
    const credentials = { key: config.streamKey, secret: config.streamSecret, token: config.streamToken }
    const auth = compileAuth({ auth: config.streamAuth, headers: config.streamHeaders, replies: config.streamAuthReplies }, credentials)
    const socket = new VendorSocket({
      url: streamUrl(config.streamUrl, credentials),
      headers: auth.headers,
      backoffMs: config.streamBackoffMs,
      pingMs: config.streamPingMs,
      logger: this.#log,
      metrics,
      onAttempt: () => this.#session.attempting(),
      onOpen: () => this.#session.opened(),
      onMessage: (text) => this.#session.message(text),
      onClose: (code, reason) => this.#session.closed(code, reason)
    })
    this.#session = new StreamSession({
      socket,
      slot: config.streamMaxConnections > 0
        ? new ConnectionSlot({ redis, keys, node: config.nodeName, leaseMs: config.streamLeaseMs, max: config.streamMaxConnections, now })
        : null,
      auth,
      authTimeoutMs: config.streamAuthTimeoutMs,
      authBackoffMs: config.streamAuthBackoffMs,
      tickMs: config.streamTickMs,
      logger: this.#log,
      metrics,
      // Subscribe at once instead of at the next tick.
      onReady: () => this.#schedule(0),
      onLeave: () => this.#onClose(),
      onMessage: (text) => this.#onMessage(text),
      // The slot's lease is on Redis' clock: so is the check that it still holds.
      now
    })
    if (config.streamBooks !== 'none' && bookStore) {
      this.#books = new StreamBooks({
        template: config.streamBooks,
        depth: config.streamBookDepth,
        snapshotUrl: config.streamBookSnapshotUrl,
        store: bookStore,
        metrics,
        logger: this.#log,
        send: (frame) => this.#session.send(frame),
        retryMs: config.streamBackoffMs,
        now
      })
      this.#reviver = numberTextReviver(this.#books.textFields)
    }
  }

  start () {
    this.#session.start()
    this.#schedule(0)
  }

  /** @param {number} delay */
  #schedule (delay) {
    if (this.#stopped) return
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      this.#ticking = this.#tick().finally(() => this.#schedule(this.#config.streamTickMs))
    }, delay)
  }

  /**
   * Claims only while the session is ready (connected, and accepted by the
   * vendor): a replica that cannot stream lets its claims go, so a replica
   * that can takes the symbols over.
   */
  async #tick () {
    await this.#session.tick()
    if (!this.#session.ready || this.#redis.status !== 'ready') return
    let held
    try {
      held = await this.#ownership.claim()
    } catch (err) {
      this.#log.warn({ err: /** @type {Error} */ (err).message }, 'stream claim failed')
      return
    }
    if (!this.#session.ready) {
      // It left ready during the claim, after releasing what it held before.
      await this.#releaseAll()
      return
    }
    const add = [...held.keys()].filter((s) => !this.#subscribed.has(s))
    const drop = [...this.#subscribed].filter((s) => !held.has(s))
    if (drop.length) {
      for (const f of this.#unsubscribeFrames(drop)) this.#session.send(f)
      for (const s of drop) {
        this.#subscribed.delete(s)
        this.#last.delete(s)
      }
      this.#log.info({ symbols: drop.length }, 'unsubscribed upstream')
    }
    if (add.length) {
      await this.#seed(add)
      // Left ready while the quotes were read: it holds nothing any more.
      if (!this.#session.ready) return
      for (const f of this.#subscribeFrames(add)) this.#session.send(f)
      for (const s of add) this.#subscribed.add(s)
      this.#log.info({ symbols: add.length }, 'subscribed upstream')
    }
    this.#metrics.streamSymbols.set(this.#subscribed.size)
    if (this.#books && this.#session.ready) await this.#books.follow([...this.#subscribed])
  }

  /**
   * Starts a newly held symbol from its latest published quote, so fields the
   * vendor sends rarely survive a takeover, and seq never goes back.
   * @param {string[]} symbols
   */
  async #seed (symbols) {
    try {
      const raws = await latestQuotes(this.#redis, this.#keys, symbols)
      raws.forEach((raw, i) => {
        const q = raw === null || raw instanceof Error ? null : parsePublished(raw)
        if (q === null) return
        // The quote's own fields; seq and epoch are the publish script's.
        const { seq, epoch: _epoch, ...fields } = q
        this.#publisher.remember(symbols[i], seq)
        this.#last.set(symbols[i], fields)
      })
      // On a cluster, a symbol of a shard that is failing over starts
      // without its previous fields; the others' were read.
      const unread = raws.find((raw) => raw instanceof Error)
      if (unread) throw unread
    } catch (err) {
      this.#log.warn({ err: /** @type {Error} */ (err).message }, 'could not read latest quotes of new symbols')
    }
  }

  /** The session is no longer ready (closed, refused, standing by, stopping). */
  #onClose () {
    this.#subscribed.clear()
    this.#last.clear()
    this.#metrics.streamSymbols.set(0)
    this.#books?.closed()
    // Free the symbols now: a replica still ready takes them over at its
    // next tick instead of after the lease.
    this.#releaseAll()
  }

  async #releaseAll () {
    try {
      await this.#ownership.releaseAll()
    } catch (err) {
      this.#log.warn({ err: /** @type {Error} */ (err).message }, 'stream release failed')
    }
  }

  /** @param {string} text */
  #onMessage (text) {
    let message
    try {
      message = JSON.parse(text, this.#reviver)
    } catch {
      this.#metrics.streamMessages.inc({ result: 'malformed' })
      this.#metrics.streamRecordsDropped.inc({ reason: 'malformed' })
      return
    }
    if (this.#books?.take(message)) {
      this.#metrics.streamMessages.inc({ result: 'book' })
      this.#session.sawData()
      return
    }
    const { quotes, dropped } = this.#map(message, this.#now())
    this.#metrics.streamMessages.inc({ result: dropped.malformed ? 'malformed' : quotes.length ? 'data' : 'ignored' })
    let unknown = 0
    for (const q of quotes) {
      // Vendors may send symbols we never asked for (or no longer hold).
      if (!this.#subscribed.has(q.symbol)) {
        unknown++
        continue
      }
      const merged = { ...this.#last.get(q.symbol), ...q }
      this.#last.set(q.symbol, merged)
      this.#pending.push(merged)
      this.#pendingTokens.push(this.#ownership.token(q.symbol))
    }
    for (const [reason, n] of Object.entries({ ...dropped, unknown_symbol: unknown })) {
      if (n) this.#metrics.streamRecordsDropped.inc({ reason }, n)
    }
    if (this.#pending.length && !this.#flushQueued) {
      this.#flushQueued = true
      setImmediate(() => this.#flush())
    }
  }

  async #flush () {
    this.#flushQueued = false
    const batch = this.#pending
    const tokens = this.#pendingTokens
    this.#pending = []
    this.#pendingTokens = []
    this.#session.sawData()
    try {
      const { published } = await this.#publisher.publish(batch, { tokens })
      this.#metrics.published.inc(published)
    } catch (err) {
      this.#log.warn({ err: /** @type {Error} */ (err).message, quotes: batch.length }, 'stream publish failed')
    }
  }

  async stop () {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    await this.#ticking
    await this.#session.stop()
    await this.#books?.stop()
    if (this.#pending.length) await this.#flush()
  }
}
