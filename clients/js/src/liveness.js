// Is the connection alive? Browsers answer the server's pings without
// telling the page, so the client cannot see them: it sends {"op":"ping"}
// every heartbeatMs and treats 2 x heartbeatMs without any frame as a dead
// connection. Also measures the round trip of its pings.
//
// Is it answering now? A gateway that freezes (a long GC pause, a stopped
// or starved process) keeps its socket open and says nothing: its clients
// would show their last prices as live until the connection is found dead.
// With quietMs, a connection that received nothing for quietMs is probed
// with a ping; when nothing at all arrives quietMs after the probe, it is
// `quiet` (its symbols are shown stale since the last frame) until the
// next frame. A busy connection is never probed; a quiet one that answers
// costs a ping per quietMs.

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
  /** When the probe awaiting an answer was sent (0: none). */
  #probedAt = 0
  #quiet = false
  /** @type {(() => void) | null} */
  #onAnswer = null

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
    this.#probedAt = 0
    if (this.#quiet) {
      this.#quiet = false
      this.#onAnswer?.()
    }
  }

  /**
   * Starts watching a live connection.
   *
   * @param {() => void} ping sends a ping (and calls pinged())
   * @param {(reason: string) => void} dead the connection has been silent too long
   * @param {{quietMs: number, watching: () => boolean, quiet: (since: number) => void, answered: () => void}} [probe]
   *   quietMs > 0: probe a connection that received nothing for quietMs while it is watching
   *   symbols; `quiet` when the probe got no answer within quietMs (since: the last frame),
   *   `answered` at the next frame
   */
  start (ping, dead, probe) {
    clearInterval(this.#timer)
    const hb = this.#heartbeatMs
    const quietMs = probe?.quietMs ?? 0
    // A quarter of quietMs: a freeze is told within 2 x quietMs and a half of it more.
    const tickMs = Math.max(25, Math.floor(quietMs > 0 ? Math.min(hb / 2, quietMs / 4) : hb / 2))
    let lastTick = Date.now()
    this.#lastFrameAt = lastTick
    this.#lastPingAt = lastTick
    this.#probedAt = 0
    this.#quiet = false
    this.#onAnswer = probe?.answered ?? null
    this.#timer = setInterval(() => {
      const now = Date.now()
      // Timers that ran late (a background tab, a suspended laptop) mean we
      // were not looking, not that the server was silent: ping and look again.
      const late = now - lastTick > 2 * tickMs
      lastTick = now
      if (late) this.#probedAt = 0
      if (!late && now - this.#lastFrameAt >= 2 * hb) {
        dead(`no frame for ${2 * hb} ms`)
        return
      }
      if (quietMs > 0 && !late) {
        if (this.#probedAt > 0 && !this.#quiet && now - this.#probedAt >= quietMs) {
          this.#quiet = true
          probe?.quiet(this.#lastFrameAt)
        } else if (this.#probedAt === 0 && now - this.#lastFrameAt >= quietMs && probe?.watching()) {
          this.#probedAt = now
          ping()
          return
        }
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
    this.#probedAt = 0
    this.#quiet = false
    this.#onAnswer = null
  }
}
