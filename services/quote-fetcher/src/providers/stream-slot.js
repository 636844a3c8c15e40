// Which replicas may hold an upstream connection (WSPS_STREAM_MAX_CONNECTIONS):
// most vendor plans allow one stream per key and refuse a second (Alpaca:
// 406), so the fleet elects up to N holders through Redis. Each tick every
// ws-stream replica runs the slot script: the holders renew their slot, a
// standby gets one when a slot is free. A holder that dies stops renewing;
// its slot is free after the lease, and a standby takes it at its next tick.
// Leases are on one clock for the fleet, Redis' (RedisClock.now): a replica
// whose host clock is off neither keeps a slot past its lease nor takes a
// live holder's.

export class ConnectionSlot {
  /** Until when (ms) this replica's slot is surely its own: 0 when it holds none. */
  #until = 0
  #redis
  #key
  #node
  #leaseMs
  #max
  #now

  /**
   * @param {object} options
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {string} options.node this replica's name (WSPS_NODE_NAME, unique per pod)
   * @param {number} options.leaseMs how long a slot lasts unless renewed
   * @param {number} options.max slots in the fleet
   * @param {() => number} [options.now] Redis' clock (RedisClock.now)
   */
  constructor ({ redis, keys, node, leaseMs, max, now = Date.now }) {
    this.#now = now
    this.#redis = redis
    this.#key = keys.streamConnections
    this.#node = node
    this.#leaseMs = leaseMs
    this.#max = max
  }

  /**
   * Renews this replica's slot or takes a free one.
   * @returns {Promise<boolean>} whether it holds one now
   * @throws when Redis does not answer: the slot lapses at its time (see held)
   */
  async acquire () {
    // The lease counts from before the call: a slow answer shortens it here,
    // never lengthens it past what Redis recorded.
    const at = this.#now()
    const got = await this.#redis.wspsSlot(this.#key, this.#node, at, this.#leaseMs, this.#max)
    this.#until = got === 1 ? at + this.#leaseMs : 0
    return got === 1
  }

  /**
   * Whether the slot is still this replica's for at least `marginMs`: a
   * holder that could not renew lets go of the vendor before a standby may
   * take the slot over, so the two never connect at once.
   * @param {number} now
   * @param {number} marginMs
   */
  held (now, marginMs) { return this.#until - marginMs > now }

  /** Gives the slot up at once (a stop, a refusal), so a standby need not wait for the lease. */
  async release () {
    this.#until = 0
    await this.#redis.zrem(this.#key, this.#node)
  }
}
