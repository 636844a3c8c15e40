// Publishes quotes: one round trip per job or publish request, through the
// publish script (per quote: seq INCR, latest SET with TTL, PUBLISH,
// and history append, atomically), many quotes per script call on a single Redis. On a Redis
// Cluster the script uses SPUBLISH (the channel shares the symbol's slot)
// and ioredis batches the calls per shard.

import { publishArgs } from '@wsps/shared/scripts'

/** Quotes per publish script call: bounds how long one call holds Redis. */
const CHUNK = 200

/** Remembered seqs are dropped beyond this many symbols (oldest first). */
const MAX_REMEMBERED = 200_000

export class Publisher {
  /**
   * @param {object} options
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {number} options.ttlMs
   * @param {boolean} options.sharded Redis Cluster: sharded pub/sub
   * @param {number} [options.historySize] ticks kept per symbol (0: none)
   * @param {number} [options.historyTtlMs]
   */
  constructor ({ redis, keys, ttlMs, sharded, historySize = 0, historyTtlMs = 0 }) {
    this.redis = redis
    this.keys = keys
    this.ttlMs = ttlMs
    this.sharded = sharded
    this.historySize = historySize
    this.historyTtlMs = historyTtlMs
    /**
     * Last seq seen per symbol. Passed as the floor to the publish script so
     * that a Redis restart that lost the counters cannot rewind seq.
     * @type {Map<string, number>}
     */
    this.lastSeq = new Map()
  }

  /**
   * @param {string} symbol
   * @param {number} seq
   */
  remember (symbol, seq) {
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
   * @param {{pushLeaseMs?: number}} [options] pushLeaseMs > 0: the quotes come
   *   through the publish API and take (or extend) the symbols' push lease
   * @returns {Promise<{published: number, refused: number}>} refused: provider
   *   quotes of a symbol under a push lease
   */
  async publish (quotes, { pushLeaseMs = 0 } = {}) {
    if (quotes.length === 0) return { published: 0, refused: 0 }
    const { keys } = this
    const options = { ttlMs: this.ttlMs, sharded: this.sharded, pushLeaseMs, historySize: this.historySize, historyTtlMs: this.historyTtlMs }
    const entries = quotes.map((q) => {
      // symbol first: the script splices seq in front of the body.
      const { symbol, ...rest } = q
      return { symbol, body: JSON.stringify({ symbol, ...rest }), floor: this.lastSeq.get(symbol) ?? 0 }
    })
    /** The scheduler's view of the push leases: one ZADD for the batch. */
    const lease = pushLeaseMs > 0 ? ['zadd', keys.push, 'GT', ...leaseArgs(quotes, Date.now() + pushLeaseMs)] : null
    /** Seq per quote, or the error of the call that carried it. @type {(number | Error)[]} */
    const seqs = []
    if (this.sharded) {
      // A cluster call cannot span slots: one quote per call, all sent at
      // once (ioredis batches them per shard with WSPS_REDIS_AUTO_PIPELINE);
      // a quote whose shard fails does not fail the others.
      const leased = lease ? this.redis.call(...(/** @type {[string, ...string[]]} */ (lease))) : null
      const results = await Promise.all(entries.map((e) => this.redis.wspsPublishOne(...publishArgs(keys, [e], options).slice(1)).then(([seq]) => seq, (err) => err)))
      seqs.push(...results)
      if (leased) await leased
    } else {
      // One script call per chunk, all chunks in one pipeline: one round trip,
      // and Redis is never blocked by one huge script run.
      const pipeline = this.redis.pipeline()
      if (lease) pipeline.call(...(/** @type {[string, ...string[]]} */ (lease)))
      for (let i = 0; i < entries.length; i += CHUNK) /** @type {any} */ (pipeline).wspsPublish(...publishArgs(keys, entries.slice(i, i + CHUNK), options))
      const results = /** @type {[Error | null, unknown][]} */ (await pipeline.exec())
      if (lease) {
        const [[err]] = results.splice(0, 1)
        if (err) throw err
      }
      results.forEach(([err, chunk], c) => {
        const n = Math.min(CHUNK, entries.length - c * CHUNK)
        for (let i = 0; i < n; i++) seqs.push(err ?? /** @type {number[]} */ (chunk)[i])
      })
    }
    let published = 0
    let refused = 0
    /** @type {Error | null} */
    let failed = null
    seqs.forEach((seq, i) => {
      if (seq instanceof Error) failed = seq
      else if (seq === 0) refused++
      else {
        published++
        this.remember(quotes[i].symbol, seq)
      }
    })
    if (failed && (published === 0 || pushLeaseMs > 0)) throw failed
    return { published, refused }
  }
}

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
