// Which replica subscribes a symbol upstream. Every ws-stream fetcher runs
// the claim script each tick: it renews what it holds, claims demanded
// symbols nobody holds, and lets go of symbols nobody demands. The script is
// atomic, so a symbol has one holder across replicas; a holder that dies
// stops renewing and its symbols are free again after the lease.

export class StreamOwnership {
  /** @type {Set<string>} */
  #held = new Set()
  #redis
  #keys
  #node
  #leaseMs
  #max

  /**
   * @param {object} options
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {string} options.node this replica's name (WSPS_NODE_NAME, unique per pod)
   * @param {number} options.leaseMs
   * @param {number} options.maxSymbols
   */
  constructor ({ redis, keys, node, leaseMs, maxSymbols }) {
    this.#redis = redis
    this.#keys = keys
    this.#node = node
    this.#leaseMs = leaseMs
    this.#max = maxSymbols
  }

  /** Symbols held after the last claim. */
  get held () { return this.#held }

  /** @returns {Promise<Set<string>>} the symbols held now */
  async claim () {
    const k = this.#keys
    const mine = await this.#redis.wspsClaim(k.demand, k.streamOwner, k.streamLease, this.#node, Date.now(), this.#leaseMs, this.#max, ...this.#held)
    this.#held = new Set(mine)
    return this.#held
  }

  /** Gives everything up at once, so other replicas need not wait for the lease. */
  async releaseAll () {
    const symbols = [...this.#held]
    this.#held = new Set()
    if (symbols.length) await this.#redis.wspsRelease(this.#keys.streamOwner, this.#keys.streamLease, this.#node, ...symbols)
  }
}
