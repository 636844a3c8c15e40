// Publishes quotes: one pipelined round trip per job, each quote through the
// publish script (seq INCR, latest SET with TTL, PUBLISH) atomically.

/** Remembered seqs are dropped beyond this many symbols (oldest first). */
const MAX_REMEMBERED = 200_000

export class Publisher {
  /**
   * @param {object} options
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {number} options.ttlMs
   */
  constructor ({ redis, keys, ttlMs }) {
    this.redis = redis
    this.keys = keys
    this.ttlMs = ttlMs
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
    const pipeline = this.redis.pipeline()
    for (const q of quotes) {
      // symbol first: the script splices seq in front of the body.
      const { symbol, ...rest } = q
      const body = JSON.stringify({ symbol, ...rest })
      ;/** @type {any} */ (pipeline).wspsPublish(keys.seq(symbol), keys.latest(symbol), keys.channel(symbol), body, this.ttlMs, this.lastSeq.get(symbol) ?? 0, 0)
    }
    const results = await pipeline.exec()
    let n = 0
    results?.forEach(([err, seq], i) => {
      if (err) return
      n++
      this.remember(quotes[i].symbol, /** @type {number} */ (seq))
    })
    const failed = results?.find(([err]) => err)
    if (failed && n === 0) throw failed[0]
    return n
  }
}
