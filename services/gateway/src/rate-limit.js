// Token-bucket limits kept as ONE number per connection (GCRA: the
// "theoretical arrival time" of the next request). The rate and burst live
// once per gateway in a RateLimit; each connection stores only its TAT, so an
// idle connection pays for a number, not for a bucket object.

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
   * Admits one request at `now` given the connection's TAT (0 for a new one).
   *
   * @param {number} tat
   * @param {number} [now]
   * @returns {number} the connection's new TAT, or -1 when the request is
   *   over the limit (the TAT is then unchanged)
   */
  take (tat, now = Date.now()) {
    const from = tat > now ? tat : now
    if (from - now > this.tolerance) return -1
    return from + this.interval
  }
}
