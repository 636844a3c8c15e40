// Per-process subscription hub: symbol -> its Feed (feed.js), and the broker
// side of each: the channel, the latest quote, the demand lease.
//
// The process holds a broker channel for a symbol exactly while some local
// client watches it (plus WSPS_UNSUBSCRIBE_DELAY_MS to absorb churn), keeps
// the latest full quote of each (the base for deltas and snapshots), and
// renews the symbol's demand lease so the fetchers keep fetching it.
//
// A symbol is `pending` from its first subscriber (or a broker reconnect)
// until both the channel subscription and the read of the latest quote have
// finished; quotes arriving meanwhile only update the held quote. Going live
// sends every subscriber one snapshot. This ordering is what guarantees no
// gap and no duplicate between snapshot and stream.
//
// After a broker reconnect every symbol is pending again; the subscribe pass
// then also reads, from the symbol's history, what it missed since the
// quote its subscribers hold (feed.js fills the gap with it). The history
// read comes after the SUBSCRIBE, so history and the buffered stream
// overlap and nothing falls between them.

import { Disconnect, ServerOp } from '@wsps/protocol'
import { parsePublished } from '@wsps/shared/published'
import { Feed, Taken } from './feed.js'
import { FULL_RATE } from './delivery.js'
import { RECEIVE_LAG_SAMPLE } from './metrics.js'
import { encodeFresh, encodeStale } from './protocol.js'
import { StaleBook } from './stale-book.js'

/**
 * @typedef {import('./delta.js').Quote} Quote
 * @typedef {import('./connection.js').Connection} Client
 */

/** How often interrupted symbols past their grace are told `stale`. */
const STALE_CHECK_MS = 250
/** Backoff of a failed subscribe pass: from this, doubling... */
const MIN_RETRY_MS = 100
/** ...up to this. */
const MAX_RETRY_MS = 2000

export class Hub {
  #broker
  #fanout
  #metrics
  #log
  #unsubscribeDelayMs
  #demandLeaseMs
  /** @type {Map<string, Feed>} symbols this process holds a channel for */
  #feeds = new Map()
  /** @type {Set<string>} symbols waiting for the next subscribe pass */
  #toSubscribe = new Set()
  #subscribeScheduled = false
  /** Generation: bumped by every resync; a feed restarted during a pass ignores that pass. */
  #gen = 0
  /** Delay before a failed subscribe pass is tried again (0: the last one succeeded). */
  #retryMs = 0
  /** Symbols still pending since the last resync; readiness waits for 0. */
  #resyncing = 0
  #subscriptionCount = 0
  /** Real-time quotes read, counted to sample every RECEIVE_LAG_SAMPLE-th one's lag. */
  #received = 0
  /** @type {NodeJS.Timeout[]} */
  #timers = []
  #recoveryMax
  #restoreDeadlineMs
  /** @type {Set<{left: Set<string>, done: () => void}>} whenLive() calls waiting */
  #liveWaiters = new Set()
  /** Symbols whose feed is interrupted, and whether their subscribers were told. */
  #stale
  #tracer

  /**
   * @param {object} options
   * @param {import('./broker.js').Broker} options.broker
   * @param {import('./fanout.js').Fanout} options.fanout
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   * @param {import('pino').Logger} options.logger
   * @param {number} options.unsubscribeDelayMs
   * @param {number} options.demandLeaseMs
   * @param {number} [options.recoveryMax] most ticks a gap fill reads and buffers per symbol (WSPS_RECOVERY_MAX)
   * @param {number} [options.restoreDeadlineMs] a subscribed symbol not live for this long while Redis
   *   answers gets its subscribers closed with 1012 (WSPS_RESTORE_DEADLINE_MS; 0: never)
   * @param {number} [options.staleGraceMs] an interruption shorter than this is not told (WSPS_STALE_GRACE_MS)
   * @param {import('./quote-trace.js').QuoteTracer | null} [options.tracer] with tracing on: the spans of traced quotes
   */
  constructor ({ broker, fanout, metrics, logger, unsubscribeDelayMs, demandLeaseMs, recoveryMax = 1000, restoreDeadlineMs = 0, staleGraceMs = 1000, tracer = null }) {
    this.#tracer = tracer
    this.#stale = new StaleBook(staleGraceMs)
    this.#restoreDeadlineMs = restoreDeadlineMs
    this.#recoveryMax = recoveryMax
    this.#broker = broker
    this.#fanout = fanout
    this.#metrics = metrics
    this.#log = logger.child({ component: 'hub' })
    this.#unsubscribeDelayMs = unsubscribeDelayMs
    this.#demandLeaseMs = demandLeaseMs
  }

  start () {
    this.#timers.push(
      setInterval(() => this.#sweepIdle(), Math.max(10, Math.min(1000, this.#unsubscribeDelayMs))),
      setInterval(() => this.#renewAll(), Math.floor(this.#demandLeaseMs / 3)),
      setInterval(() => this.#tellStale(), STALE_CHECK_MS)
    )
    for (const t of this.#timers) t.unref()
  }

  stop () {
    for (const t of this.#timers) clearInterval(t)
    this.#timers = []
  }

  /** true once every symbol is subscribed and has been read after the last (re)connect */
  synced () {
    return this.#resyncing === 0
  }


  /** Symbols this process holds a channel for. */
  get symbolCount () {
    return this.#feeds.size
  }

  /**
   * What the fleet view shows of this hub: the symbols with the most
   * subscribers, and those whose subscribers were told stale.
   *
   * @param {number} max of each list
   * @returns {{top: {symbol: string, subscribers: number}[], stale: {symbol: string, since: number}[], staleCount: number}}
   */
  summary (max) {
    /** @type {{symbol: string, subscribers: number}[]} */
    const top = []
    for (const [symbol, feed] of this.#feeds) {
      if (top.length === max && feed.count <= top[max - 1].subscribers) continue
      top.push({ symbol, subscribers: feed.count })
      top.sort((a, b) => b.subscribers - a.subscribers)
      if (top.length > max) top.pop()
    }
    return { top, stale: this.#stale.told(max), staleCount: this.#stale.toldCount }
  }

  /**
   * Adds a subscriber. Returns the full quote it must start from when the
   * symbol is live and has one (the caller sends it as the snapshot);
   * otherwise the subscriber gets its snapshot when the symbol goes live or
   * quotes first. A client adds a symbol at most once (Sessions only adds
   * what it does not hold).
   *
   * @param {string} symbol
   * @param {Client} client
   * @param {number} [delivery] FULL_RATE, DISTINCT or a maxRate (delivery.js)
   * @returns {string | null}
   */
  add (symbol, client, delivery = FULL_RATE) {
    const feed = this.#feeds.get(symbol) ?? this.#open(symbol, false)
    this.#subscriptionCount++
    this.#metrics.subscriptions.set(this.#subscriptionCount)
    if (this.#stale.toldSince(symbol) !== null) {
      // After the sub's ack and snapshot, which are sent once add() returns.
      setImmediate(() => {
        const since = this.#stale.toldSince(symbol)
        if (since !== null && this.#feeds.get(symbol) === feed && feed.subscribers().includes(client)) client.send(encodeStale([symbol], since), ServerOp.STALE)
      })
    }
    return feed.add(client, delivery)
  }

  /**
   * The broker's feed of these symbols is interrupted (its link lost, or
   * found silent): their subscribers are told `stale` after the grace
   * (`now`: at once), and `fresh` when the symbol is live again.
   *
   * @param {Iterable<string> | undefined} symbols undefined: every symbol
   * @param {number} since wall clock (ms) of the last moment the feed was known good
   * @param {boolean} [now] found silent: tell without waiting for the grace
   */
  interrupted (symbols, since, now = false) {
    for (const symbol of symbols ?? this.#feeds.keys()) {
      if (this.#feeds.get(symbol)?.live) this.#stale.mark(symbol, since, now)
    }
    if (now) this.#tellStale()
  }

  /**
   * The feed of these symbols, interrupted, goes on where it stopped with
   * nothing missed: those told `stale` are told `fresh` (after the quotes
   * it takes in from now on are written).
   *
   * @param {readonly string[]} symbols
   */
  resumed (symbols) {
    this.#tellFresh(symbols.filter((symbol) => this.#stale.clear(symbol)))
  }

  /** Tells the subscribers of every interrupted symbol past its grace: one `stale` frame per connection and `since`. */
  #tellStale () {
    for (const [since, symbols] of this.#stale.due()) {
      for (const [client, list] of this.#bySubscriber(symbols)) client.send(encodeStale(list, since), ServerOp.STALE)
      this.#log.warn({ symbols: symbols.length, since: new Date(since).toISOString() }, 'symbols stale: their subscribers are told')
    }
    this.#metrics.staleSymbols.set(this.#stale.toldCount)
  }

  /**
   * Tells the subscribers of these symbols they are live again, once what
   * their feeds just took in (gap fill) has been written to them.
   *
   * @param {string[]} symbols
   */
  #tellFresh (symbols) {
    if (symbols.length === 0) return
    this.#metrics.staleSymbols.set(this.#stale.toldCount)
    this.#log.info({ symbols: symbols.length }, 'stale symbols live again: their subscribers are told')
    this.#fanout.afterNextPass(() => {
      for (const [client, list] of this.#bySubscriber(symbols)) client.send(encodeFresh(list), ServerOp.FRESH)
    })
  }

  /**
   * @param {readonly string[]} symbols
   * @returns {Map<Client, string[]>} each subscriber of any of them, with the ones it holds
   */
  #bySubscriber (symbols) {
    /** @type {Map<Client, string[]>} */
    const out = new Map()
    for (const symbol of symbols) {
      for (const c of this.#feeds.get(symbol)?.subscribers() ?? []) {
        const list = out.get(c)
        if (list) list.push(symbol)
        else out.set(c, [symbol])
      }
    }
    return out
  }

  /**
   * @param {string} symbol
   * @param {boolean} idle opened before its first subscriber
   * @returns {Feed}
   */
  #open (symbol, idle) {
    const feed = new Feed(symbol, this.#gen, this.#fanout, this.#recoveryMax, idle)
    this.#feeds.set(symbol, feed)
    this.#metrics.symbols.set(this.#feeds.size)
    this.#queueSubscribe(symbol)
    return feed
  }

  /**
   * What add() would return now for a subscriber of this delivery: the
   * full quote it would start from, when the symbol is live.
   *
   * @param {string} symbol
   * @param {number} delivery
   * @returns {string | null}
   */
  peek (symbol, delivery) {
    return this.#feeds.get(symbol)?.peek(delivery) ?? null
  }

  /**
   * Resolves once every symbol is live (subscribed and read), or after
   * timeoutMs. Symbols nobody here watches yet are subscribed now. Each
   * symbol stays pinned (never swept as idle) until unpin(): then, without
   * a subscriber, it is dropped like an idle one.
   *
   * @param {string[]} symbols
   * @param {number} timeoutMs
   * @returns {Promise<void>}
   */
  whenLive (symbols, timeoutMs) {
    const left = new Set()
    for (const s of symbols) {
      const feed = this.#feeds.get(s) ?? this.#open(s, true)
      feed.pin(1)
      if (!feed.live) left.add(s)
    }
    if (left.size === 0) return Promise.resolve()
    return new Promise((resolve) => {
      const waiter = {
        left,
        done: () => {
          clearTimeout(timer)
          this.#liveWaiters.delete(waiter)
          resolve()
        }
      }
      const timer = setTimeout(waiter.done, timeoutMs)
      this.#liveWaiters.add(waiter)
    })
  }

  /**
   * The quotes a pinned symbol's feed took in with seq from..to (what a
   * recovery's read could not see yet), or null unless it has them all.
   *
   * @param {string} symbol
   * @param {number} from
   * @param {number} to
   * @returns {string[] | null}
   */
  recent (symbol, from, to) {
    return this.#feeds.get(symbol)?.recent(from, to) ?? null
  }

  /**
   * Ends what whenLive() began for these symbols: the recovery added its
   * subscriber (or gave up), so the feeds may go idle again.
   *
   * @param {Iterable<string>} symbols
   */
  unpin (symbols) {
    for (const s of symbols) this.#feeds.get(s)?.pin(-1)
  }

  /**
   * Adds a reader of every quote of a symbol from now on, in seq order (a
   * bar series): it keeps the symbol's channel and demand like a
   * subscriber, on the same feed, so no second subscription is made.
   *
   * @param {string} symbol
   * @param {import('./feed.js').Tap} tap
   */
  tap (symbol, tap) {
    const feed = this.#feeds.get(symbol) ?? this.#open(symbol, true)
    feed.tap(tap)
    if (feed.live) this.#renew([symbol])
  }

  /**
   * @param {string} symbol
   * @param {import('./feed.js').Tap} tap
   */
  untap (symbol, tap) {
    this.#feeds.get(symbol)?.untap(tap)
  }

  /**
   * @param {string} symbol
   * @param {Client} client
   * @param {number} [delivery] as it was added with
   */
  remove (symbol, client, delivery = FULL_RATE) {
    const feed = this.#feeds.get(symbol)
    if (!feed || !feed.remove(client, delivery)) return
    this.#subscriptionCount--
    this.#metrics.subscriptions.set(this.#subscriptionCount)
  }

  /**
   * A full quote from the broker.
   *
   * @param {string} symbol
   * @param {string} raw
   * @param {string | null} [traceparent] its publish span's, when it is traced
   */
  onQuote (symbol, raw, traceparent = null) {
    const feed = this.#feeds.get(symbol)
    if (!feed) return
    this.#metrics.quotesIn.inc()
    const quote = this.#parse(raw)
    const lag = this.#metrics.receiveLag
    if (lag !== null && (++this.#received & (RECEIVE_LAG_SAMPLE - 1)) === 0 && typeof quote?.ts === 'number') lag.observe(Math.max(0, Date.now() - quote.ts) / 1000)
    const trace = traceparent !== null && quote !== null && this.#tracer !== null ? this.#tracer.received(quote, traceparent) : null
    const taken = quote === null ? Taken.STALE : feed.onQuote(quote, raw, trace)
    trace?.settle(taken)
    if (taken === Taken.STALE) this.#metrics.staleIn.inc()
    else if (taken === Taken.GAP) this.#fillGap(symbol, feed)
    // Redis lost the symbol's history while this gateway was connected
    // (FLUSHALL, eviction, a restart faster than the reconnect): a gap
    // nothing could fill, counted like one.
    else if (taken === Taken.NEW_EPOCH) this.#metrics.gapFills.inc({ result: 'snapshot' })
  }

  /**
   * The full quote a merge reader catching up must get for a symbol (the
   * base of the next update it will be handed), when it is live.
   *
   * @param {string} symbol
   * @param {number} [delivery] FULL_RATE or a maxRate
   * @returns {string | null}
   */
  latest (symbol, delivery = FULL_RATE) {
    return this.#feeds.get(symbol)?.latest(delivery) ?? null
  }

  /**
   * The broker lost and regained its subscription connection (or, on a
   * cluster, the shard of some symbols): their channels are gone and quotes
   * may have been missed. Resubscribe them, and fill what they missed from
   * history (feed.js), or snapshot where history cannot.
   *
   * @param {Iterable<string>} [symbols] the symbols whose channel was lost (default: every one)
   */
  resync (symbols = this.#feeds.keys()) {
    this.#gen++
    this.#metrics.resyncs.inc()
    let n = 0
    const now = Date.now()
    for (const symbol of symbols) {
      const feed = this.#feeds.get(symbol)
      if (!feed) continue
      if (feed.live) this.#stale.mark(symbol, now)
      if (feed.restart(this.#gen)) this.#resyncing++
      this.#queueSubscribe(symbol)
      n++
    }
    this.#log.info({ symbols: n, of: this.#feeds.size }, 'resyncing after broker reconnect')
  }

  /** Drops the channels nobody has watched for WSPS_UNSUBSCRIBE_DELAY_MS. */
  #sweepIdle () {
    const now = Date.now()
    /** @type {string[]} */
    const gone = []
    // Redis answers, yet a symbol's channel is still not restored: this
    // gateway's own trouble (a shard it cannot reach, a pass that keeps
    // failing). Its subscribers move to another gateway instead of waiting
    // without quotes; they resume there with `since`.
    const stuck = this.#restoreDeadlineMs > 0 && this.#broker.ready()
    for (const [symbol, feed] of this.#feeds) {
      if (stuck && feed.count > 0 && feed.pendingFor(now) > this.#restoreDeadlineMs) {
        const n = feed.closeAll(Disconnect.NOT_RESTORED)
        if (n > 0) {
          this.#metrics.restoreTimeouts.inc()
          this.#log.warn({ symbol, clients: n, pendingMs: feed.pendingFor(now) }, 'subscription not restored in time: its clients are sent elsewhere')
        }
      }
      if (feed.idleFor(now, this.#unsubscribeDelayMs)) {
        this.#feeds.delete(symbol)
        this.#stale.clear(symbol)
        this.#resynced(feed)
        gone.push(symbol)
      }
    }
    if (gone.length === 0) return
    this.#metrics.symbols.set(this.#feeds.size)
    this.#broker.unsubscribe(gone).then(
      () => this.#metrics.redisChannels.set(this.#broker.channelCount()),
      (err) => this.#log.warn({ err: err.message }, 'unsubscribe failed')
    )
  }

  /** @param {string} symbol */
  #queueSubscribe (symbol) {
    this.#toSubscribe.add(symbol)
    if (this.#subscribeScheduled) return
    this.#subscribeScheduled = true
    // Coalesce a burst (a client subscribing to 100 symbols, a reconnect
    // storm) into one SUBSCRIBE, one MGET and one lease renewal per group.
    setImmediate(() => {
      this.#subscribeScheduled = false
      const symbols = [...this.#toSubscribe]
      this.#toSubscribe.clear()
      // One pass per group the broker can fail apart (on a cluster, per
      // shard): a shard failing over never holds back the others' symbols.
      for (const group of this.#broker.partition(symbols)) this.#runPass(group)
    })
  }

  /** @param {string[]} symbols */
  #runPass (symbols) {
    // Each feed's generation now: one restarted meanwhile ignores this pass.
    const gens = symbols.map((s) => this.#feeds.get(s)?.gen ?? -1)
    this.#subscribePass(symbols, gens).catch((err) => ({ failed: symbols, err })).then(({ failed, err }) => {
      if (failed.length === 0) {
        this.#retryMs = 0
        return
      }
      // Never left waiting for an event that may not come (a cluster that
      // failed over is stable again, and ioredis emits nothing more): the
      // symbols that failed (only those: on a cluster, one shard's) are
      // tried again, with a capped backoff.
      this.#retryMs = Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, this.#retryMs * 2))
      this.#metrics.subscribeRetries.inc()
      this.#log.warn({ err: err?.message, symbols: failed.length, of: symbols.length, retryInMs: this.#retryMs }, 'subscribe pass failed; retrying')
      setTimeout(() => {
        for (const s of failed) if (this.#feeds.get(s)?.live === false) this.#queueSubscribe(s)
      }, this.#retryMs).unref()
    })
  }

  /**
   * @param {string[]} symbols
   * @param {number[]} gens each feed's generation when the pass began
   * @returns {Promise<{failed: string[], err: Error | null}>} the symbols that
   *   did not go live (their channel or a read failed: on a cluster, a
   *   shard failing over), to be tried again; it rejects when nothing went
   */
  async #subscribePass (symbols, gens) {
    /** @type {string[]} */
    const failed = []
    /** @type {Error | null} */
    let err = null
    const refused = new Set(await this.#broker.subscribe(symbols))
    this.#metrics.redisChannels.set(this.#broker.channelCount())
    const subscribed = refused.size ? symbols.filter((s) => !refused.has(s)) : symbols
    if (refused.size) failed.push(...refused)
    this.#renew(subscribed)
    // After the SUBSCRIBE: what a resuming feed missed (feed.js, gap fill).
    const [raws, missed] = await Promise.all([
      this.#broker.latest(subscribed),
      Promise.all(subscribed.map((s) => this.#readMissed(s).catch((/** @type {Error} */ e) => e)))
    ])
    const genOf = new Map(symbols.map((s, i) => [s, gens[i]]))
    /** @type {string[]} */
    const fresh = []
    for (let i = 0; i < subscribed.length; i++) {
      const raw = raws[i]
      const gap = missed[i]
      if (raw instanceof Error || gap instanceof Error) {
        failed.push(subscribed[i])
        err = raw instanceof Error ? raw : /** @type {Error} */ (gap)
        continue
      }
      if (this.#goLive(subscribed[i], raw, gap, /** @type {number} */ (genOf.get(subscribed[i])))) fresh.push(subscribed[i])
    }
    this.#tellFresh(fresh)
    return { failed, err: err ?? (failed.length ? new Error('subscribe refused') : null) }
  }

  /**
   * The ticks a feed resuming after a broker reconnect missed, from its
   * history: null when it is not resuming, or when more are missing than
   * WSPS_RECOVERY_MAX (then it is not filled). A failed read fails the pass
   * (it is tried again): a shard failing over must not cost a snapshot.
   *
   * @param {string} symbol
   * @returns {Promise<{quote: Quote, raw: string}[] | null>}
   */
  async #readMissed (symbol) {
    const from = this.#feeds.get(symbol)?.resumeFrom() ?? null
    if (from === null) return null
    const raws = await this.#broker.history(symbol, from, null, this.#recoveryMax + 1)
    if (raws.length > this.#recoveryMax) return null
    const out = []
    for (const raw of raws) {
      const quote = this.#parse(raw)
      if (quote === null) return null
      out.push({ quote, raw })
    }
    return out
  }

  /**
   * @param {number | null} filled what Feed#goLive or Feed#fill returned:
   *   null nothing to fill, -1 not fillable (a snapshot), else ticks filled
   */
  #countFill (filled) {
    if (filled === null) return
    this.#metrics.gapFills.inc({ result: filled < 0 ? 'snapshot' : 'filled' })
    if (filled > 0) this.#metrics.gapTicks.inc(filled)
  }

  /**
   * A live quote skipped ticks (Redis dropped a pub/sub message): read them
   * from history and hand them to the feed, which held the quote back.
   *
   * @param {string} symbol
   * @param {Feed} feed
   */
  #fillGap (symbol, feed) {
    const gen = feed.gen
    this.#readMissed(symbol).catch((err) => {
      this.#log.warn({ err: err.message, symbol }, 'history read for a live gap failed; the gap gets a snapshot')
      return null
    }).then((missed) => {
      if (this.#feeds.get(symbol) !== feed) return
      this.#countFill(feed.fill(missed, gen))
    })
  }

  /**
   * @param {string} symbol
   * @param {string | null} raw latest quote read from the broker
   * @param {{quote: Quote, raw: string}[] | null} missed
   * @param {number} gen
   * @returns {boolean} whether its subscribers had been told it was stale (now they are to be told fresh)
   */
  #goLive (symbol, raw, missed, gen) {
    const feed = this.#feeds.get(symbol)
    if (!feed || feed.live || feed.gen !== gen) return false
    this.#countFill(feed.goLive(raw === null ? null : this.#parse(raw), raw, missed))
    this.#resynced(feed)
    for (const w of this.#liveWaiters) {
      w.left.delete(symbol)
      if (w.left.size === 0) w.done()
    }
    return this.#stale.clear(symbol)
  }

  /** @param {Feed} feed */
  #resynced (feed) {
    if (feed.resynced() && --this.#resyncing === 0) this.#log.info('resync complete')
  }

  /**
   * @param {string} raw a quote as published
   * @returns {Quote | null} null (logged) when it does not parse
   */
  #parse (raw) {
    const quote = parsePublished(raw)
    if (quote === null) this.#log.error({ raw: raw.slice(0, 200) }, 'unparsable quote from broker')
    return quote
  }

  #renewAll () {
    /** @type {string[]} */
    const watched = []
    for (const [symbol, feed] of this.#feeds) if (feed.count > 0 || feed.tapped) watched.push(symbol)
    if (watched.length) this.#renew(watched)
  }

  /** @param {string[]} symbols */
  #renew (symbols) {
    this.#broker.renewDemand(symbols, this.#demandLeaseMs).catch((err) => {
      this.#log.warn({ err: err.message }, 'demand renewal failed')
    })
  }
}
