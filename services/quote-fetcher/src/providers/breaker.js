// Circuit breaker: after `threshold` consecutive failures the upstream is
// left alone for `cooldownMs`; then a single trial request decides whether
// it closes again. Keeps a sick upstream from being hammered by every job.

import { BreakerOpenError } from '../errors.js'

export const BreakerState = Object.freeze({ CLOSED: 0, HALF_OPEN: 1, OPEN: 2 })

export class CircuitBreaker {
  /**
   * @param {{threshold: number, cooldownMs: number, onState?: (state: number, lastError: Error | null) => void, now?: () => number}} options
   */
  constructor ({ threshold, cooldownMs, onState, now = Date.now }) {
    this.threshold = threshold
    this.cooldownMs = cooldownMs
    this.onState = onState ?? (() => {})
    this.now = now
    this.failures = 0
    /** @type {Error | null} the failure that last counted, reported with state changes */
    this.lastError = null
    /** @type {number} */
    this.state = BreakerState.CLOSED
    this.openedAt = 0
    this.trialInFlight = false
  }

  /**
   * Runs `fn` unless the breaker is open.
   * @template T
   * @param {() => Promise<T>} fn
   * @returns {Promise<T>}
   */
  async run (fn) {
    if (this.state === BreakerState.OPEN) {
      if (this.now() - this.openedAt < this.cooldownMs) throw new BreakerOpenError()
      this.set(BreakerState.HALF_OPEN)
    }
    if (this.state === BreakerState.HALF_OPEN) {
      if (this.trialInFlight) throw new BreakerOpenError()
      this.trialInFlight = true
    }
    try {
      const result = await fn()
      this.failures = 0
      this.set(BreakerState.CLOSED)
      return result
    } catch (err) {
      this.failures++
      this.lastError = /** @type {Error} */ (err)
      if (this.state === BreakerState.HALF_OPEN || this.failures >= this.threshold) {
        this.openedAt = this.now()
        this.set(BreakerState.OPEN)
      }
      throw err
    } finally {
      if (this.state !== BreakerState.HALF_OPEN) this.trialInFlight = false
    }
  }

  /** @param {number} state */
  set (state) {
    if (state === this.state) return
    this.state = state
    if (state !== BreakerState.HALF_OPEN) this.trialInFlight = false
    this.onState(state, state === BreakerState.CLOSED ? null : this.lastError)
  }
}
