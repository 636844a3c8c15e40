// When and where the next connection attempt goes: exponential backoff with
// equal jitter, reset by a connection that stayed live; a drain (1012)
// retried at once, only jittered; the next URL of the list each time.

import { CloseCode } from './protocol.js'

/**
 * Retry delay after `attempt` failures in a row: exponential, capped, with
 * "equal jitter" (between half and all of the ceiling) so a fleet of clients
 * cut off at once spreads out, yet none retries in a tight loop.
 *
 * @param {number} attempt 0 for the first retry
 * @param {{initialMs: number, maxMs: number}} limits
 * @param {() => number} [random]
 */
export function backoffDelay (attempt, { initialMs, maxMs }, random = Math.random) {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30))
  return Math.round(ceiling / 2 + random() * ceiling / 2)
}

/**
 * @typedef {object} RetryOptions
 * @property {number} initialBackoffMs
 * @property {number} maxBackoffMs
 * @property {number} restartJitterMs
 * @property {number} stableMs a connection live this long resets the backoff
 * @property {() => number} random
 */

export class Retry {
  #urls
  #opts
  #urlIndex = 0
  /** Failed attempts in a row. */
  #attempt = 0
  /** When the current connection went live (0: it is not). */
  #liveSince = 0
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #timer

  /**
   * @param {readonly string[]} urls tried in turn
   * @param {RetryOptions} options
   */
  constructor (urls, options) {
    this.#urls = urls
    this.#opts = options
  }

  /** The URL of the next attempt. */
  get url () {
    return this.#urls[this.#urlIndex % this.#urls.length]
  }

  /** Failed attempts in a row. */
  get attempt () {
    return this.#attempt
  }

  /** A fresh start (connect()): no failures counted. */
  reset () {
    this.#attempt = 0
  }

  /** The connection went live. */
  live () {
    this.#liveSince = Date.now()
  }

  /**
   * The connection closed with `code` (null: it never got one): the delay
   * before the next attempt, which moves on to the next URL.
   *
   * @param {number | null} code
   * @returns {number} ms
   */
  next (code) {
    if (this.#liveSince && Date.now() - this.#liveSince >= this.#opts.stableMs) this.#attempt = 0
    this.#liveSince = 0
    // 1012: the gateway is draining on purpose and has already spread its
    // closes over a window; come back at once (elsewhere), only jittered.
    const delay = code === CloseCode.SERVICE_RESTART
      ? Math.floor(this.#opts.random() * this.#opts.restartJitterMs)
      : backoffDelay(this.#attempt++, { initialMs: this.#opts.initialBackoffMs, maxMs: this.#opts.maxBackoffMs }, this.#opts.random)
    // Rotate: the next gateway in the list is the likeliest to be up.
    this.#urlIndex = (this.#urlIndex + 1) % this.#urls.length
    return delay
  }

  /**
   * @param {number} delay from next()
   * @param {() => void} attempt
   */
  after (delay, attempt) {
    this.#timer = setTimeout(attempt, delay)
  }

  /** The pending attempt, if any, does not start. */
  cancel () {
    clearTimeout(this.#timer)
  }
}
