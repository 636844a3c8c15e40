// The batching loop. Updates land in each subscriber's pending map as they
// arrive; one timer per process (not per connection) flushes every dirty
// connection once per window, so a reader of N symbols gets one frame per
// window instead of N, and an idle gateway runs no timers at all.

/**
 * @typedef {object} Flushable
 * @property {(now: number, tick: number, sent: import('./delta.js').Update[]) => boolean} flush
 *   writes pending updates; returns true to stay dirty (a slow reader to retry)
 */

export class Fanout {
  /**
   * @param {object} options
   * @param {number} options.batchMs window length; 0 flushes on the next event-loop turn
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   */
  constructor ({ batchMs, metrics }) {
    this.batchMs = batchMs
    this.metrics = metrics
    /** @type {Flushable[]} */
    this.dirty = []
    /** @type {NodeJS.Timeout | NodeJS.Immediate | null} */
    this.timer = null
    this.tick = 0
    this.flush = this.flush.bind(this)
  }

  /** @param {Flushable} client */
  mark (client) {
    this.dirty.push(client)
    if (this.timer === null) {
      this.timer = this.batchMs > 0 ? setTimeout(this.flush, this.batchMs) : setImmediate(this.flush)
    }
  }

  flush () {
    this.timer = null
    const batch = this.dirty
    this.dirty = []
    const tick = ++this.tick
    const now = Date.now()
    /** @type {import('./delta.js').Update[]} */
    const sent = []
    for (const client of batch) {
      if (client.flush(now, tick, sent)) this.mark(client)
    }
    // One latency sample per distinct update per tick, taken after the last
    // socket write of the tick: the worst case over its subscribers.
    if (sent.length) {
      const end = Date.now()
      for (const u of sent) this.metrics.publishToSend.observe(Math.max(0, end - u.ts) / 1000)
    }
  }

  stop () {
    if (this.timer) {
      clearTimeout(/** @type {NodeJS.Timeout} */ (this.timer))
      clearImmediate(/** @type {NodeJS.Immediate} */ (this.timer))
    }
    this.timer = null
    this.dirty = []
  }
}
