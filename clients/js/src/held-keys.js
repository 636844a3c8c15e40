// What the server holds of a subscription set (from its latest acks), and
// the calls waiting for it to hold theirs. One owner for both, shared by the
// quote subscriptions (keys are symbols) and the bar subscriptions (keys
// are "symbol interval"): an ack resolves the waits it completes, a refusal
// or a cancel ends the waits it touches.

/**
 * @typedef {import('./types.js').ErrorInfo} ErrorInfo
 * @typedef {{ok: true} | {ok: false, error: ErrorInfo}} HeldResult
 */

export class HeldKeys {
  /** @type {Set<string>} */
  #held = new Set()
  /** @type {Set<{pending: Set<string>, resolve: (r: HeldResult) => void}>} */
  #waiters = new Set()

  /** @param {string} key */
  has (key) {
    return this.#held.has(key)
  }

  /** @returns {string[]} every key held */
  get list () {
    return [...this.#held]
  }

  /**
   * An ack: the held keys it covers are replaced by `keys`, and the waits
   * it completes resolve.
   *
   * @param {string[]} keys what the server holds of the ack's scope now
   * @param {(key: string) => boolean} [inScope] held keys the ack speaks for (default: all)
   */
  acked (keys, inScope) {
    if (inScope === undefined) this.#held.clear()
    else for (const k of [...this.#held]) if (inScope(k)) this.#held.delete(k)
    for (const k of keys) this.#held.add(k)
    for (const w of this.#waiters) {
      for (const k of w.pending) if (this.#held.has(k)) w.pending.delete(k)
      if (w.pending.size === 0) {
        this.#waiters.delete(w)
        w.resolve({ ok: true })
      }
    }
  }

  /** A new connection holds nothing. */
  clear () {
    this.#held.clear()
  }

  /**
   * @param {string[]} keys
   * @param {boolean} live whether the connection's acks count now
   * @returns {Promise<HeldResult>} once the server holds all of them, or
   *   with the error that made it refuse one
   */
  wait (keys, live) {
    const pending = new Set(keys.filter((k) => !(live && this.#held.has(k))))
    if (pending.size === 0) return Promise.resolve({ ok: true })
    return new Promise((resolve) => this.#waiters.add({ pending, resolve }))
  }

  /**
   * Ends the waits that include any of `keys` with `error`.
   *
   * @param {string[]} keys
   * @param {ErrorInfo} error
   */
  settle (keys, error) {
    for (const w of this.#waiters) {
      if (keys.some((k) => w.pending.has(k))) {
        this.#waiters.delete(w)
        w.resolve({ ok: false, error })
      }
    }
  }

  /** @param {ErrorInfo} error ends every wait with it */
  settleAll (error) {
    for (const w of this.#waiters) w.resolve({ ok: false, error })
    this.#waiters.clear()
  }
}
