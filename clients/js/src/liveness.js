// Is the connection alive? Browsers answer the server's pings without
// telling the page, so the client cannot see them: it sends {"op":"ping"}
// every heartbeatMs and treats 2 x heartbeatMs without any frame as a dead
// connection. Also measures the round trip of its pings.

/** Pings remembered for their pong. */
const MAX_PINGS = 8

export class Liveness {
  #heartbeatMs
  #lastFrameAt = 0
  #lastPingAt = 0
  /** @type {Map<number, number>} ping id -> sent at */
  #pings = new Map()
  /** @type {ReturnType<typeof setInterval> | undefined} */
  #timer
  /** @type {number | null} round trip of the last answered ping, ms */
  #rttMs = null

  /** @param {number} heartbeatMs used until set otherwise */
  constructor (heartbeatMs) {
    this.#heartbeatMs = heartbeatMs
  }

  /** @param {number} ms the interval the server announced */
  set heartbeatMs (ms) {
    this.#heartbeatMs = ms
  }

  /** @returns {number | null} round trip of the last answered ping, ms */
  get rttMs () {
    return this.#rttMs
  }

  /** @returns {number} when the last frame (or SSE heartbeat comment) arrived, ms since the epoch (0: none yet) */
  get lastFrameAt () {
    return this.#lastFrameAt
  }

  /** A frame (or an SSE heartbeat comment) arrived. */
  frame () {
    this.#lastFrameAt = Date.now()
  }

  /**
   * Starts watching a live connection.
   *
   * @param {() => void} ping sends a ping (and calls pinged())
   * @param {(reason: string) => void} dead the connection has been silent too long
   */
  start (ping, dead) {
    clearInterval(this.#timer)
    const hb = this.#heartbeatMs
    const tickMs = Math.max(25, Math.floor(hb / 2))
    let lastTick = Date.now()
    this.#lastFrameAt = lastTick
    this.#lastPingAt = lastTick
    this.#timer = setInterval(() => {
      const now = Date.now()
      // Timers that ran late (a background tab, a suspended laptop) mean we
      // were not looking, not that the server was silent: ping and look again.
      const late = now - lastTick > 2 * tickMs
      lastTick = now
      if (!late && now - this.#lastFrameAt >= 2 * hb) {
        dead(`no frame for ${2 * hb} ms`)
        return
      }
      if (late || now - this.#lastPingAt >= hb) ping()
    }, tickMs)
  }

  /** @param {number} id of a ping just sent */
  pinged (id) {
    this.#lastPingAt = Date.now()
    this.#pings.set(id, this.#lastPingAt)
    if (this.#pings.size > MAX_PINGS) this.#pings.delete(/** @type {number} */ (this.#pings.keys().next().value))
  }

  /** @param {unknown} id of a pong */
  pong (id) {
    const sentAt = typeof id === 'number' ? this.#pings.get(id) : undefined
    if (sentAt === undefined) return
    this.#pings.delete(/** @type {number} */ (id))
    this.#rttMs = Date.now() - sentAt
  }

  /** The connection is gone: no more checks, no pings awaited. */
  stop () {
    clearInterval(this.#timer)
    this.#pings.clear()
  }
}
