// Token bucket, kept as two numbers on the connection (no timers).

export class TokenBucket {
  /**
   * @param {number} ratePerSec refill rate
   * @param {number} burst bucket size
   */
  constructor (ratePerSec, burst) {
    this.rate = ratePerSec / 1000
    this.burst = burst
    this.tokens = burst
    this.at = Date.now()
  }

  /**
   * Takes one token if there is one.
   * @param {number} [now]
   */
  take (now = Date.now()) {
    this.tokens = Math.min(this.burst, this.tokens + (now - this.at) * this.rate)
    this.at = now
    if (this.tokens < 1) return false
    this.tokens -= 1
    return true
  }
}
