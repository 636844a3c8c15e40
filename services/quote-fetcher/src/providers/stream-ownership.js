// Which replica subscribes a symbol upstream. Every ws-stream fetcher runs
// the claim script each tick: it renews what it holds, claims demanded
// symbols nobody holds, and lets go of symbols nobody demands. The script is
// atomic, so a symbol has one holder across replicas; a holder that dies
// stops renewing and its symbols are free again after the lease.
//
// A holder that was only paused (or cut off from Redis) past its lease
// still has quotes of its symbols to publish when it comes back. Each
// ownership therefore carries a fencing token, drawn when it was granted:
// the holder's quotes carry it, and a new holder raises the symbol's fence
// to its own token before it subscribes, so the publish script refuses the
// old holder's quotes from then on (scripts.js, CLAIM, FENCE, PUBLISH).

export class StreamOwnership {
  /** Held symbol -> the fencing token of its ownership. @type {Map<string, number>} */
  #held = new Map()
  /** Held symbols whose fence could not be raised yet: tried again each claim. @type {Set<string>} */
  #unfenced = new Set()
  #redis
  /** @type {() => number} */
  #now
  #keys
  #node
  #leaseMs
  #max
  #fenceTtlMs

  /**
   * @param {object} options
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {string} options.node this replica's name (WSPS_NODE_NAME, unique per pod)
   * @param {number} options.leaseMs
   * @param {number} options.maxSymbols
   * @param {() => number} [options.now] Redis' clock (RedisClock.now): leases are compared across replicas
   * @param {number} options.fenceTtlMs a fence this raises where none was lives so long (WSPS_QUOTE_TTL_MS, as the fences of published quotes)
   */
  constructor ({ redis, keys, node, leaseMs, maxSymbols, fenceTtlMs, now = Date.now }) {
    this.#now = now
    this.#redis = redis
    this.#keys = keys
    this.#node = node
    this.#leaseMs = leaseMs
    this.#max = maxSymbols
    this.#fenceTtlMs = fenceTtlMs
  }

  /** Symbols held after the last claim, with their tokens. */
  get held () { return this.#held }

  /**
   * The fencing token of a held symbol's ownership; 0 for one not held
   * (its quotes are then refused wherever another owner's token is in the fence).
   * @param {string} symbol
   */
  token (symbol) { return this.#held.get(symbol) ?? 0 }

  /**
   * Claims, then raises the fence of each symbol granted anew to its new
   * token. A fence that could not be raised (Redis failing) is not waited
   * for: the holder's first published quote raises it too.
   * @returns {Promise<Map<string, number>>} the symbols held now, with their tokens
   */
  async claim () {
    const k = this.#keys
    const reply = await this.#redis.wspsClaim(k.demand, k.streamOwner, k.streamLease, k.streamToken, k.fenceToken,
      this.#node, this.#now(), this.#leaseMs, this.#max, ...this.#held.keys())
    const before = this.#held
    /** @type {Map<string, number>} */
    const held = new Map()
    for (let i = 0; i < reply.length; i += 2) held.set(reply[i], Number(reply[i + 1]))
    this.#held = held
    for (const s of this.#unfenced) if (!held.has(s)) this.#unfenced.delete(s)
    for (const [s, token] of held) if (before.get(s) !== token) this.#unfenced.add(s)
    const raise = [...this.#unfenced]
    const results = await Promise.all(raise.map((s) =>
      this.#redis.wspsFence(k.fence(s), /** @type {number} */ (held.get(s)), this.#fenceTtlMs).then(() => true, () => false)))
    raise.forEach((s, i) => { if (results[i]) this.#unfenced.delete(s) })
    return held
  }

  /** Gives everything up at once, so other replicas need not wait for the lease. */
  async releaseAll () {
    const symbols = [...this.#held.keys()]
    this.#held = new Map()
    this.#unfenced.clear()
    if (symbols.length) await this.#redis.wspsRelease(this.#keys.streamOwner, this.#keys.streamLease, this.#keys.streamToken, this.#node, ...symbols)
  }
}
