// Publishes quotes: one round trip per job, each quote through the publish
// script (seq INCR, latest SET with TTL, PUBLISH) atomically. On a Redis
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
   * @returns {Promise<number>} quotes published
   */
  async publish (quotes) {
    if (quotes.length === 0) return 0
    const { keys } = this
    const flag = this.sharded ? 1 : 0
    /** @param {any} target */
    const call = (target, /** @type {import('./providers/provider.js').QuoteFields} */ q) => {
      // symbol first: the script splices seq in front of the body.
      const { symbol, ...rest } = q
      const body = JSON.stringify({ symbol, ...rest })
      return target.wspsPublish(keys.seq(symbol), keys.latest(symbol), keys.channel(symbol), body, this.ttlMs, this.lastSeq.get(symbol) ?? 0, flag)
    }
    /** @type {[Error | null, unknown][]} */
    let results
    if (this.sharded) {
      // A cluster pipeline cannot span shards; auto-pipelining batches per shard.
      results = await Promise.all(quotes.map((q) => call(this.redis, q).then((seq) => [null, seq], (err) => [err, null])))
    } else {
      const pipeline = this.redis.pipeline()
      for (const q of quotes) call(pipeline, q)
      results = /** @type {[Error | null, unknown][]} */ (await pipeline.exec())
    }
    let n = 0
    results.forEach(([err, seq], i) => {
      if (err) return
      n++
      this.remember(quotes[i].symbol, /** @type {number} */ (seq))
    })
    const failed = results.find(([err]) => err)
    if (failed && n === 0) throw failed[0]
    return n
  }
}
