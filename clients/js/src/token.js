// The token source (options.getToken) and when to ask it again: a bit
// before the current token expires, or a little later when it failed.

/** Refresh the token this long before it expires: a quarter of its life, at most 30 s. */
const refreshLeadMs = (/** @type {number} */ expiresInMs) => Math.min(30_000, expiresInMs / 4)

export class TokenSource {
  /** @type {(() => Promise<string> | string) | null} */
  #getToken
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #timer

  /** @param {(() => Promise<string> | string) | null} getToken */
  constructor (getToken) {
    this.#getToken = getToken
  }

  /** Whether there is a token source at all. */
  get enabled () {
    return this.#getToken !== null
  }

  /**
   * Asks for a token; a source that throws rejects.
   *
   * @returns {Promise<string>}
   */
  get () {
    return Promise.resolve().then(() => /** @type {() => Promise<string> | string} */ (this.#getToken)())
  }

  /**
   * The token expires in `expiresInMs` (from `hello`, or the `ack` of a
   * refresh): `refresh` runs a bit before.
   *
   * @param {number | undefined} expiresInMs
   * @param {() => void} refresh
   */
  refreshBefore (expiresInMs, refresh) {
    clearTimeout(this.#timer)
    if (this.#getToken === null || typeof expiresInMs !== 'number') return
    this.#timer = setTimeout(refresh, Math.max(0, expiresInMs - refreshLeadMs(expiresInMs)))
  }

  /**
   * @param {number} delayMs
   * @param {() => void} refresh runs after delayMs (a refresh that failed)
   */
  retry (delayMs, refresh) {
    this.#timer = setTimeout(refresh, delayMs)
  }

  cancel () {
    clearTimeout(this.#timer)
  }
}
