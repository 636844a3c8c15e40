// Tells a gateway cut off from Redis apart from a Redis gone for everyone.
//
// Cut off alone (a partition, a dropped NAT entry, a hung link of its own),
// its clients are better served elsewhere: another gateway has every quote
// they miss here, and they resume there with `since`. With Redis gone for
// everyone, moving them helps nobody: they stay, told `stale`, and are gap
// filled when Redis is back.
//
// Which of the two it is, only the other gateways know. Each gateway
// announces itself in Redis (a ZSET of URLs, WSPS_PEER_URL) while it
// reaches it, so a gateway that lost Redis still knows whom to ask: each
// peer's GET /broker says how long its own Redis links have been alive. A
// peer alive for at least as long as this gateway has been cut off reached
// Redis the whole time: this gateway is isolated. A peer that came back
// later (a failover or restart everyone went through) proves nothing.

/** How often the gateway announces itself and, while cut off, asks its peers. */
const CHECK_MS = 1000
/** A peer that announced itself longer ago than this is not asked. */
const PEER_TTL_MS = 15_000
/** Longest wait for one peer's answer. */
const ASK_TIMEOUT_MS = 1000

/**
 * @typedef {object} IsolationBroker
 * @property {() => boolean} ready
 * @property {() => number} aliveForMs
 * @property {() => number} lastAliveAt
 * @property {(url: string, ttlMs: number) => Promise<string[]>} announce
 */

export class Isolation {
  #broker
  #peerUrl
  #closeAfterMs
  #onIsolated
  #log
  /** @type {string[]} peers from the last announce that Redis answered */
  #peers = []
  #asking = false
  #isolated = false
  /** @type {NodeJS.Timeout | null} */
  #timer = null

  /**
   * @param {object} options
   * @param {IsolationBroker} options.broker
   * @param {string} options.peerUrl how peers reach this gateway ('' announces nothing, asks no one)
   * @param {number} options.closeAfterMs WSPS_ISOLATION_CLOSE_MS: cut off this long before peers are asked (0: never)
   * @param {(isolated: boolean) => void} options.onIsolated cut off while a peer is not (true), or reconnected (false)
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ broker, peerUrl, closeAfterMs, onIsolated, logger }) {
    this.#broker = broker
    this.#peerUrl = peerUrl
    this.#closeAfterMs = closeAfterMs
    this.#onIsolated = onIsolated
    this.#log = logger.child({ component: 'isolation' })
  }

  start () {
    if (this.#peerUrl === '' || this.#closeAfterMs === 0) return
    this.#timer = setInterval(() => this.#check(), CHECK_MS)
    this.#timer.unref()
    // Announced as soon as Redis answers, so peers know of it from the start.
    setImmediate(() => this.#check())
  }

  stop () {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }

  #check () {
    if (this.#broker.ready()) {
      if (this.#isolated) {
        this.#isolated = false
        this.#log.info('Redis answers again: no longer isolated')
        this.#onIsolated(false)
      }
      this.#broker.announce(this.#peerUrl, PEER_TTL_MS).then((peers) => { this.#peers = peers }, () => {})
      return
    }
    const downForMs = Date.now() - this.#broker.lastAliveAt()
    if (this.#isolated || this.#asking || downForMs < this.#closeAfterMs || this.#peers.length === 0) return
    this.#asking = true
    this.#askPeers(downForMs).then((peer) => {
      this.#asking = false
      if (peer === null || this.#broker.ready() || this.#isolated) return
      this.#isolated = true
      this.#log.warn({ downForMs, peer }, 'cut off from Redis while a peer reaches it: sending clients elsewhere')
      this.#onIsolated(true)
    })
  }

  /**
   * @param {number} downForMs
   * @returns {Promise<string | null>} a peer whose Redis links have been alive at least that long
   */
  async #askPeers (downForMs) {
    const answers = await Promise.all(this.#peers.map(async (url) => {
      try {
        const res = await fetch(new URL('/broker', url), { signal: AbortSignal.timeout(ASK_TIMEOUT_MS) })
        if (!res.ok) return null
        const body = /** @type {{alive?: unknown, aliveForMs?: unknown}} */ (await res.json())
        return body.alive === true && typeof body.aliveForMs === 'number' && body.aliveForMs >= downForMs ? url : null
      } catch {
        return null
      }
    }))
    return answers.find((u) => u !== null) ?? null
  }
}
