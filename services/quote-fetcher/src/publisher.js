// Publishes quotes: one round trip per job or publish request, through the
// publish script (per quote: seq INCR, PUBLISH, and the latest quote: a SET
// with TTL, or with history on the history append, atomically), many quotes
// per script call on a single Redis. On a Redis Cluster the script uses
// SPUBLISH (the channel shares the symbol's slot) and ioredis batches the
// calls per shard.
//
// With history on, the latest quote is the history stream's newest entry
// (scripts.js, PUBLISH), so the stream must outlive every quote by
// WSPS_QUOTE_TTL_MS: this publisher asks the script to renew its expiry
// (to that plus twice renewEvery()) once per renewEvery() per symbol, not
// per quote.
// A symbol it stops publishing has its history cut to the latest quote
// WSPS_HISTORY_TTL_MS later (the retire pass), which also sets the stream's
// expiry to what that quote has left.
//
// With WSPS_PUBLISH_WAIT_REPLICAS > 0 a call is: the script's writes (seq,
// history, latest) without the PUBLISH, then Redis WAIT on the same
// connection, then the PUBLISH of each message: a tick is fanned out only
// once that many replicas hold it, so a failover to one of them loses no
// tick any subscriber saw (docs/operations.md, "What asynchronous
// replication may lose").
//
// Every provider quote carries the fencing token of the claim it was
// fetched under (its job's, or its stream ownership's), and the script
// refuses one whose claim was superseded, or whose ts is older than the
// symbol's newest (scripts.js, PUBLISH): counted by reason through
// onRefused, never published.

import { publishArgs, refusal } from '@wsps/shared/scripts'
import { IngestTraces } from './ingest-traces.js'

/** Quotes per publish script call: bounds how long one call holds Redis. */
const CHUNK = 200

/** Remembered seqs are dropped beyond this many symbols (oldest first). */
const MAX_REMEMBERED = 200_000

/** The retire pass runs this often per WSPS_HISTORY_TTL_MS (and at most every 250 ms). */
const RETIRE_PASSES = 4

/**
 * How often a symbol's history stream gets its expiry renewed: a quarter of
 * WSPS_QUOTE_TTL_MS, at most a minute. The expiry is then WSPS_QUOTE_TTL_MS
 * plus twice this: once for the quotes between renewals, once for a call
 * that reaches Redis late.
 * @param {number} ttlMs
 */
const renewEvery = (ttlMs) => Math.min(ttlMs / 4, 60_000)

export class Publisher {
  /** Messages held back until replicas hold their writes (WAIT), per call. */
  #waitReplicas
  #waitTimeoutMs
  /** @type {((result: 'acked' | 'short' | 'failed') => void) | null} */
  #onWait
  /** @type {((refused: Refused, symbols: string[]) => void) | null} */
  #onRefused
  /** @type {import('./redis-clock.js').RedisClock | null} */
  #clock
  #deadlineMs
  /** @type {IngestTraces | null} */
  #traces
  /**
   * With history on, per symbol this publisher published and has not
   * retired: when and which seq it last published, and when it last asked
   * for the stream's expiry to be renewed.
   * @type {Map<string, {at: number, seq: number, renewedAt: number}>}
   */
  #published = new Map()
  /** @type {NodeJS.Timeout | null} the next retire pass, while #published holds symbols */
  #retireTimer = null
  #stopped = false

  /**
   * @param {object} options
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {number} options.ttlMs
   * @param {boolean} options.sharded Redis Cluster: sharded pub/sub
   * @param {number} [options.historySize] ticks kept per symbol (0: none)
   * @param {number} [options.historyTtlMs] a symbol not published for this
   *   long has its history cut to its latest quote
   * @param {number} [options.waitReplicas] WSPS_PUBLISH_WAIT_REPLICAS: > 0 makes
   *   each call write, then wait (Redis WAIT) until that many replicas hold the
   *   writes, then publish (0: the script publishes at once)
   * @param {number} [options.waitTimeoutMs] WSPS_PUBLISH_WAIT_TIMEOUT_MS
   * @param {(result: 'acked' | 'short' | 'failed') => void} [options.onWait] told
   *   each wait's outcome (metrics)
   * @param {(refused: Refused, symbols: string[]) => void} [options.onRefused] told,
   *   once per publish() that had some, the quotes the script refused by reason,
   *   and (up to 10 of) their symbols (metrics, log)
   * @param {import('./redis-clock.js').RedisClock} [options.clock] Redis' clock, for the deadline and the push leases
   * @param {number} [options.deadlineMs] WSPS_PUBLISH_DEADLINE_MS: a call that reaches Redis
   *   later than this after it was sent is refused as late (0: never)
   * @param {IngestTraces | null} [options.traces] with tracing on: which quotes are traced, and their spans
   */
  constructor ({ redis, keys, ttlMs, sharded, historySize = 0, historyTtlMs = 0, waitReplicas = 0, waitTimeoutMs = 500, onWait, onRefused, clock, deadlineMs = 0, traces = null }) {
    this.#traces = traces
    this.#clock = clock ?? null
    this.#deadlineMs = deadlineMs
    this.redis = redis
    this.keys = keys
    this.ttlMs = ttlMs
    this.sharded = sharded
    this.historySize = historySize
    this.historyTtlMs = historyTtlMs
    this.#waitReplicas = waitReplicas
    this.#waitTimeoutMs = waitTimeoutMs
    this.#onWait = onWait ?? null
    this.#onRefused = onRefused ?? null
    /**
     * Last seq seen per symbol. Passed as the floor to the publish script so
     * that a Redis restart that lost the counters cannot rewind seq.
     * @type {Map<string, number>}
     */
    this.lastSeq = new Map()
  }

  /**
   * A seq read from Redis (a latest quote): the floor rises to it. Not while
   * waiting for replicas: such a read may see the writes of a call whose
   * WAIT has not come back, which the replica promoted after a failover
   * never got; a floor above them would make its next seq jump and start a
   * new epoch for nothing.
   *
   * @param {string} symbol
   * @param {number} seq
   */
  remember (symbol, seq) {
    if (this.#waitReplicas === 0) this.#remember(symbol, seq)
  }

  /**
   * @param {string} symbol
   * @param {number} seq
   */
  #remember (symbol, seq) {
    if ((this.lastSeq.get(symbol) ?? 0) >= seq) return
    this.lastSeq.delete(symbol)
    this.lastSeq.set(symbol, seq)
    if (this.lastSeq.size > MAX_REMEMBERED) {
      const drop = this.lastSeq.size - MAX_REMEMBERED / 2
      let i = 0
      for (const k of this.lastSeq.keys()) {
        if (i++ >= drop) break
        this.lastSeq.delete(k)
      }
    }
  }

  /**
   * @param {import('./providers/provider.js').QuoteFields[]} quotes
   * @param {{pushLeaseMs?: number, tokens?: number | readonly number[], trace?: import('./ingest-traces.js').TraceOptions}} [options]
   *   pushLeaseMs > 0: the quotes come through the publish API and take (or
   *   extend) the symbols' push lease; tokens: the fencing token of the claim
   *   the quotes were fetched under, one for all or one per quote (0, the
   *   default: none, for publish API quotes); trace: how they entered, for
   *   their traces (with tracing on)
   * @returns {Promise<{published: number, refused: Refused, seqs: number[]}>} refused: the
   *   quotes the script refused, by reason; seqs: per quote the seq it was
   *   published with, 0 when it was not
   */
  async publish (quotes, { pushLeaseMs = 0, tokens = 0, trace } = {}) {
    if (quotes.length === 0) return { published: 0, refused: noneRefused(), seqs: [] }
    const { keys } = this
    const wait = this.#waitReplicas > 0
    const history = this.historySize > 0
    const now = Date.now()
    const every = renewEvery(this.ttlMs)
    const notAfterMs = this.#deadlineMs > 0 && this.#clock?.measured ? this.#clock.now() + this.#deadlineMs : 0
    const spans = this.#traces?.start(quotes, trace) ?? null
    const options = { ttlMs: this.ttlMs, sharded: this.sharded, pushLeaseMs, historySize: this.historySize, streamTtlMs: this.ttlMs + 2 * every, defer: wait, notAfterMs }
    const entries = quotes.map((q, i) => {
      // symbol first: the script splices seq (and epoch) in front of the
      // body. Neither may come along in the body: a reader's JSON.parse
      // keeps the last of two equal keys, so a quote built on the previous
      // one (the sim provider copies it whole) would carry the previous
      // epoch past a new one, and a new history would pass for the old.
      // Nor a trace read with it: a traced quote's comes last (published.js).
      const { symbol, seq: _seq, epoch: _epoch, trace: _trace, ...rest } = /** @type {Record<string, unknown> & {symbol: string}} */ (q)
      const known = history ? this.#published.get(symbol) : undefined
      const renew = !known || now - known.renewedAt >= every
      const token = typeof tokens === 'number' ? tokens : tokens[i]
      const traced = spans?.[i]
      return { symbol, body: JSON.stringify(traced ? { symbol, ...rest, trace: traced.traceparent } : { symbol, ...rest }), floor: this.lastSeq.get(symbol) ?? 0, renew, ts: q.ts, token }
    })
    /** The scheduler's view of the push leases, on its clock (Redis'): one ZADD for the batch. */
    const lease = pushLeaseMs > 0 ? ['zadd', keys.push, 'GT', ...leaseArgs(quotes, (this.#clock?.now() ?? Date.now()) + pushLeaseMs)] : null
    /** Seq per quote, or the error of the call that carried it. */
    /** @type {(number | Error)[]} */
    let seqs
    try {
      seqs = this.sharded ? await this.#publishEach(entries, options, lease) : await this.#publishPipelined(entries, options, lease)
    } catch (err) {
      spans?.forEach((s) => { if (s) IngestTraces.end(s, /** @type {Error} */ (err)) })
      throw err
    }
    let published = 0
    const refused = noneRefused()
    /** @type {number[]} */
    const accepted = quotes.map(() => 0)
    /** Symbols of refused quotes, for the log. @type {Set<string>} */
    const refusedSymbols = new Set()
    /** @type {Error | null} */
    let failed = null
    seqs.forEach((seq, i) => {
      const traced = spans?.[i]
      if (traced) IngestTraces.end(traced, seq instanceof Error ? seq : (refusal(seq) || seq))
      if (seq instanceof Error) {
        failed = seq
        return
      }
      const why = refusal(seq)
      if (why) {
        refused[why]++
        if (refusedSymbols.size < 10) refusedSymbols.add(quotes[i].symbol)
        return
      }
      published++
      accepted[i] = seq
      this.#remember(quotes[i].symbol, seq)
      if (history) this.#note(quotes[i].symbol, now, seq, entries[i].renew)
    })
    if (history && published > 0) this.#armRetire()
    if (refusedSymbols.size) this.#onRefused?.(refused, [...refusedSymbols])
    if (failed && (published === 0 || pushLeaseMs > 0)) throw failed
    return { published, refused, seqs: accepted }
  }

  /**
   * The Cluster path (a call cannot span slots).
   *
   * @param {PublishEntry[]} entries
   * @param {PublishOptions} options
   * @param {(string | number)[] | null} lease the push leases' ZADD
   * @returns {Promise<(number | Error)[]>} per quote its script reply, or the error of its call
   */
  async #publishEach (entries, options, lease) {
    const { keys } = this
    const wait = options.defer
    /** With wait: the message per quote, published once replicas hold it ('' refused). @type {string[]} */
    const msgs = []
    // A cluster call cannot span slots: one quote per call, all sent at
    // once (ioredis batches them per shard with WSPS_REDIS_AUTO_PIPELINE);
    // a quote whose shard fails does not fail the others. With wait, each
    // call is a pipeline of the script and WAIT, so WAIT goes down the
    // connection to the primary that holds the quote's slot, right behind
    // the writes it must see replicated.
    const leased = lease ? this.redis.call(...(/** @type {[string, ...string[]]} */ (lease))) : null
    const results = await Promise.all(entries.map((e, i) => {
      const args = /** @type {(string | number)[]} */ (publishArgs(keys, [e], options).slice(1))
      if (!wait) return this.redis.wspsPublishOne(...args).then(([seq]) => /** @type {number} */ (seq), (err) => err)
      const p = /** @type {any} */ (this.redis.pipeline())
      p.wspsPublishOne(...args)
      p.call('WAIT', this.#waitReplicas, this.#waitTimeoutMs)
      return p.exec().then((/** @type {[Error | null, any][]} */ [[err, out], [waitErr, acked]]) => {
        if (err) return err
        if (waitErr) return this.#waited('failed', waitErr)
        this.#waited(acked >= this.#waitReplicas ? 'acked' : 'short')
        msgs[i] = out[1]
        return out[0]
      }, (err) => err)
    }))
    if (leased) await leased
    if (wait) await Promise.all(entries.map((e, i) => msgs[i] ? this.redis.call('SPUBLISH', keys.channel(e.symbol), msgs[i]).catch(ignore) : null))
    return results
  }

  /**
   * One script call per chunk, all chunks in one pipeline: one round trip.
   *
   * @param {PublishEntry[]} entries
   * @param {PublishOptions} options
   * @param {(string | number)[] | null} lease the push leases' ZADD
   * @returns {Promise<(number | Error)[]>} per quote its script reply, or the error of the call that carried it
   */
  async #publishPipelined (entries, options, lease) {
    const { keys } = this
    const wait = options.defer
    /** @type {(number | Error)[]} */
    const seqs = []
    /** With wait: the message per quote, published once replicas hold it ('' refused). @type {string[]} */
    const msgs = []
    // One script call per chunk, all chunks in one pipeline: one round trip,
    // and Redis is never blocked by one huge script run. With wait, WAIT
    // closes the pipeline: it returns once the replicas acknowledged every
    // write this connection made before it.
    const pipeline = this.redis.pipeline()
    if (lease) pipeline.call(...(/** @type {[string, ...string[]]} */ (lease)))
    for (let i = 0; i < entries.length; i += CHUNK) /** @type {any} */ (pipeline).wspsPublish(...publishArgs(keys, entries.slice(i, i + CHUNK), options))
    if (wait) pipeline.call('WAIT', this.#waitReplicas, this.#waitTimeoutMs)
    const results = /** @type {[Error | null, unknown][]} */ (await pipeline.exec().catch((err) => {
      // The connection closed under the whole pipeline: with wait, the
      // same outcome as a WAIT that broke.
      throw wait ? this.#waited('failed', err) : err
    }))
    if (lease) {
      const [[err]] = results.splice(0, 1)
      if (err) throw err
    }
    if (wait) {
      const [[waitErr, acked]] = results.splice(-1, 1)
      // The connection broke before the replicas answered (the primary
      // died): nothing is published and no seq remembered. What was
      // replicated continues on the promoted replica; what was not is
      // gone, and no subscriber ever saw it.
      if (waitErr) throw this.#waited('failed', waitErr)
      this.#waited(/** @type {number} */ (acked) >= this.#waitReplicas ? 'acked' : 'short')
    }
    results.forEach(([err, chunk], c) => {
      const n = Math.min(CHUNK, entries.length - c * CHUNK)
      const out = /** @type {(number | string)[]} */ (chunk)
      for (let i = 0; i < n; i++) {
        seqs.push(err ?? /** @type {number} */ (out[i]))
        if (wait) msgs.push(err ? '' : /** @type {string} */ (out[n + i]))
      }
    })
    if (wait) {
      // A PUBLISH that fails now costs no tick: the writes are in Redis and
      // on its replicas, and a gateway fills the hole from history when the
      // symbol's next tick arrives (or at its resync).
      const out = this.redis.pipeline()
      msgs.forEach((msg, i) => { if (msg) out.publish(keys.channel(entries[i].symbol), msg) })
      await out.exec().catch(ignore)
    }
    return seqs
  }

  /**
   * This publisher published seq of symbol at now (history on).
   * @param {string} symbol
   * @param {number} now
   * @param {number} seq
   * @param {boolean} renewed the call renewed the stream's expiry
   */
  #note (symbol, now, seq, renewed) {
    const known = this.#published.get(symbol)
    if (!known) {
      // (Not renewed: the retire pass took the symbol while the call was
      // in flight; the next quote renews.)
      this.#published.set(symbol, { at: now, seq, renewedAt: renewed ? now : 0 })
      return
    }
    known.at = now
    if (seq > known.seq) known.seq = seq
    if (renewed) known.renewedAt = now
  }

  /** Stops the retire pass (the fetcher stopping). */
  stop () {
    this.#stopped = true
    if (this.#retireTimer) clearTimeout(this.#retireTimer)
    this.#retireTimer = null
  }

  #armRetire () {
    if (this.#retireTimer || this.#stopped) return
    this.#retireTimer = setTimeout(() => {
      this.#retireTimer = null
      this.#retire().finally(() => { if (this.#published.size) this.#armRetire() })
    }, Math.max(250, this.historyTtlMs / RETIRE_PASSES))
    this.#retireTimer.unref()
  }

  /**
   * The retire pass: each symbol this publisher has not published for
   * WSPS_HISTORY_TTL_MS has its history cut to its latest quote, and the
   * stream the expiry that quote has left of WSPS_QUOTE_TTL_MS (the RETIRE
   * script, which does nothing when another fetcher published it since).
   * Best effort: a symbol it could not reach, or one this process stopped
   * before, keeps its history until the stream expires, at most twice the
   * renewal interval after its latest quote would have.
   */
  async #retire () {
    const now = Date.now()
    const due = now - this.historyTtlMs
    /** @type {[string, number, number][]} symbol, seq, ms its latest quote has left */
    const quiet = []
    for (const [symbol, p] of this.#published) {
      if (p.at > due) continue
      // (Plus a renewal interval for a call that reached Redis late.)
      quiet.push([symbol, p.seq, Math.max(1, this.ttlMs + renewEvery(this.ttlMs) - (now - p.at))])
      this.#published.delete(symbol)
    }
    if (quiet.length === 0) return
    const { keys } = this
    /** @type {(number | null)[]} */
    let results
    if (this.sharded) {
      results = await Promise.all(quiet.map(([s, seq, left]) => this.redis.wspsRetire(keys.history(s), keys.historyPin(s), seq, left).catch(() => null)))
    } else {
      const pipeline = /** @type {any} */ (this.redis.pipeline())
      for (const [s, seq, left] of quiet) pipeline.wspsRetire(keys.history(s), keys.historyPin(s), seq, left)
      const replies = /** @type {[Error | null, number][] | null} */ (await pipeline.exec().catch(() => null))
      results = quiet.map((_, i) => replies?.[i]?.[1] ?? null)
    }
    // Pinned (delayed subscribers still read it): again one window later.
    quiet.forEach(([symbol, seq], i) => {
      if (results[i] === 2 && !this.#published.has(symbol)) this.#published.set(symbol, { seq, at: now, renewedAt: 0 })
    })
  }

  /**
   * A wait's outcome, told to onWait. Fewer replicas than asked within the
   * timeout ('short'): the quotes are published all the same (they are
   * already in the primary's history and latest quote, which every reader
   * sees; holding the fan-out back would not make them safer), and are as
   * exposed to a failover as with waiting off.
   *
   * @template {Error | undefined} E
   * @param {'acked' | 'short' | 'failed'} result
   * @param {E} [err]
   * @returns {E}
   */
  #waited (result, err) {
    this.#onWait?.(result)
    return /** @type {E} */ (err)
  }
}

function ignore () {}

/**
 * Quotes the publish script refused, by reason (scripts.js, REFUSED).
 * @typedef {Record<import('@wsps/shared/scripts').RefusalReason, number>} Refused
 * @typedef {Parameters<typeof publishArgs>[1][number]} PublishEntry one quote as the publish script takes it
 * @typedef {Parameters<typeof publishArgs>[2]} PublishOptions
 */

/** @returns {Refused} */
const noneRefused = () => ({ pushed: 0, fenced: 0, old: 0, late: 0 })

/**
 * ZADD arguments (score, member...) for the distinct symbols of quotes.
 * @param {import('./providers/provider.js').QuoteFields[]} quotes
 * @param {number} expiry
 */
function leaseArgs (quotes, expiry) {
  const out = []
  for (const symbol of new Set(quotes.map((q) => q.symbol))) out.push(String(expiry), symbol)
  return out
}
