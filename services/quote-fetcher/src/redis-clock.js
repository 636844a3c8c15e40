// Redis' clock as seen from this process: the offset between Redis' TIME
// and Date.now(), measured over a round trip (its middle), so that a
// deadline written in Redis' clock (the publish script's notAfterMs) is
// right even when this host's clock is off by seconds.

/** How often the offset is measured again (clocks drift, a failover changes servers). */
const EVERY_MS = 10_000
/** Until the first measurement succeeds, it is tried this often. */
const RETRY_MS = 250
/** A measurement whose round trip took longer says little: it is dropped. */
const MAX_RTT_MS = 200
/** TIME round trips per measurement; the shortest is used. */
const SAMPLES = 3

export class RedisClock {
  #redis
  /** @type {number | null} Redis' clock minus Date.now(), ms */
  #offsetMs = null
  /** @type {NodeJS.Timeout | null} */
  #timer = null
  #stopped = false
  /** The last value now() returned. */
  #last = 0

  /** @param {{time(): Promise<(string | number)[]>}} redis */
  constructor (redis) {
    this.#redis = redis
  }

  /**
   * Measures now and every EVERY_MS (every RETRY_MS until the first
   * measurement succeeds).
   *
   * @param {number} [waitMs] longest wait for the first measurement
   * @returns {Promise<boolean>} once measured (true), or after waitMs (false:
   *   Redis did not answer; now() is Date.now() until it does)
   */
  start (waitMs = 5000) {
    const tick = async () => {
      await this.#measure()
      if (this.#stopped) return
      this.#timer = setTimeout(tick, this.#offsetMs === null ? RETRY_MS : EVERY_MS)
      this.#timer.unref()
    }
    tick()
    return new Promise((resolve) => {
      const started = Date.now()
      const check = () => {
        if (this.#offsetMs !== null || this.#stopped || Date.now() - started >= waitMs) return resolve(this.#offsetMs !== null)
        setTimeout(check, 20)
      }
      check()
    })
  }

  stop () {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }

  /** Whether the offset has been measured (until then now() is Date.now()). */
  get measured () {
    return this.#offsetMs !== null
  }

  /**
   * Now on Redis' clock: what every time this process writes into Redis or
   * onto a quote is read from, so that a host clock off by seconds skews
   * neither the quotes' ts nor the leases and due times shared in Redis.
   * Never behind a value it returned before: a new measurement a
   * millisecond lower must not stamp a quote older than the last one (the
   * publish script would refuse it as old). Bound: pass it around as a function.
   */
  now = () => {
    this.#last = Math.max(this.#last, Date.now() + (this.#offsetMs ?? 0))
    return this.#last
  }

  /**
   * The offset from the sample of a few back to back with the shortest
   * round trip: its middle is the surest (Cristian's method). The first of
   * them may have waited in the client for the connection to be ready, and
   * its middle then lies before the moment Redis read its clock.
   */
  async #measure () {
    /** @type {{rttMs: number, offsetMs: number} | null} */
    let best = null
    for (let i = 0; i < SAMPLES; i++) {
      try {
        const t0 = Date.now()
        const [s, us] = await this.#redis.time()
        const t1 = Date.now()
        if (best === null || t1 - t0 < best.rttMs) best = { rttMs: t1 - t0, offsetMs: Number(s) * 1000 + Math.floor(Number(us) / 1000) - (t0 + t1) / 2 }
      } catch {
        // Redis away: the last offset stands; the next interval tries again.
        break
      }
    }
    if (best !== null && best.rttMs <= MAX_RTT_MS) this.#offsetMs = best.offsetMs
  }
}
