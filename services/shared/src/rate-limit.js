// Token-bucket limits kept as ONE number per client (GCRA: the
// "theoretical arrival time" of the next request). The rate and burst live
// once per process in a RateLimit; each client (a gateway connection, a
// publish token) stores only its TAT, so an idle one pays for a number, not
// for a bucket object.

export class RateLimit {
  /**
   * @param {number} ratePerSec sustained requests per second
   * @param {number} burst requests allowed at once after a quiet period
   */
  constructor (ratePerSec, burst) {
    this.burst = burst
    /** ms one request "costs" */
    this.interval = 1000 / ratePerSec
    // How far ahead of now the TAT may run: burst - 1 requests' worth, plus
    // half a request so float rounding in the sums never costs the last one.
    this.tolerance = (burst - 0.5) * this.interval
  }

  /**
   * Admits one request at `now` given the client's TAT (0 for a new one).
   * A request costing several units (a batch of quotes) is admitted whole
   * while the client is within its burst and then owes the rest, so a batch
   * larger than the burst is slowed down, not refused for ever.
   *
   * @param {number} tat
   * @param {number} [now]
   * @param {number} [cost] units the request uses
   * @returns {number} the client's new TAT, or -1 when the request is
   *   over the limit (the TAT is then unchanged)
   */
  take (tat, now = Date.now(), cost = 1) {
    const from = tat > now ? tat : now
    if (from - now > this.tolerance) return -1
    return from + cost * this.interval
  }
}
