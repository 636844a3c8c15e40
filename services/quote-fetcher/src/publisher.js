// Publishes quotes: one round trip per job or publish request, each quote
// through the publish script (seq INCR, latest SET with TTL, PUBLISH)
// atomically. On a Redis
// Cluster the script uses SPUBLISH (the channel shares the symbol's slot)
// and ioredis batches the calls per shard.

/** Remembered seqs are dropped beyond this many symbols (oldest first). */
const MAX_REMEMBERED = 200_000

export class Publisher {
  /**
   * @param {object} options
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {number} options.ttlMs
   * @param {boolean} options.sharded Redis Cluster: sharded pub/sub
   */
  constructor ({ redis, keys, ttlMs, sharded }) {
    this.redis = redis
    this.keys = keys
    this.ttlMs = ttlMs
    this.sharded = sharded
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
    const flag = this.sharded ? 1 : 0
    /** @param {any} target */
    const call = (target, /** @type {import('./providers/provider.js').QuoteFields} */ q) => {
      // symbol first: the script splices seq in front of the body.
      const { symbol, ...rest } = q
      const body = JSON.stringify({ symbol, ...rest })
      return target.wspsPublish(keys.seq(symbol), keys.latest(symbol), keys.pushed(symbol), keys.channel(symbol),
        body, this.ttlMs, this.lastSeq.get(symbol) ?? 0, flag, pushLeaseMs)
    }
    /** The scheduler's view of the push leases: one ZADD for the batch. */
    const lease = pushLeaseMs > 0 ? ['zadd', keys.push, 'GT', ...leaseArgs(quotes, Date.now() + pushLeaseMs)] : null
    /** @type {[Error | null, unknown][]} */
    let results
    if (this.sharded) {
      // A cluster pipeline cannot span shards; auto-pipelining batches per shard.
      const leased = lease ? this.redis.call(...(/** @type {[string, ...string[]]} */ (lease))) : null
      results = await Promise.all(quotes.map((q) => call(this.redis, q).then((seq) => [null, seq], (err) => [err, null])))
      if (leased) await leased
    } else {
      const pipeline = this.redis.pipeline()
      if (lease) pipeline.call(...(/** @type {[string, ...string[]]} */ (lease)))
      for (const q of quotes) call(pipeline, q)
      results = /** @type {[Error | null, unknown][]} */ (await pipeline.exec())
      if (lease) {
        const [leaseResult] = results.splice(0, 1)
        if (leaseResult[0]) throw leaseResult[0]
      }
    }
    let published = 0
    let refused = 0
    results.forEach(([err, seq], i) => {
      if (err) return
      if (seq === 0) {
        refused++
        return
      }
      published++
      this.remember(quotes[i].symbol, /** @type {number} */ (seq))
    })
    const failed = results.find(([err]) => err)
    if (failed && (published === 0 || pushLeaseMs > 0)) throw failed[0]
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
