// Server pings, spread evenly over the heartbeat interval. Every SWEEP_MS a
// sweep pings the share of connections that falls due, continuing where the
// last sweep stopped, so each connection is visited once per interval and
// the gateway never pings (nor reads back the pongs of) thousands of sockets
// at once: a burst of 18,000 pings and pongs every 15 s was a latency spike
// for every quote behind it.

/** How often a sweep runs. */
export const SWEEP_MS = 100

/**
 * @typedef {object} Beating what the heartbeat needs of a connection
 * @property {() => void} beat a visit: drop the connection if it did not
 *   answer the last probe, else probe it again (Connection.beat)
 */

export class Heartbeat {
  /**
   * @param {Set<Beating>} clients the live set: connections may come and go between sweeps
   * @param {number} intervalMs each connection is pinged once per interval; one
   *   that has not answered by its next visit is terminated
   */
  constructor (clients, intervalMs) {
    this.clients = clients
    this.intervalMs = intervalMs
    /** Visits owed: the fractional share of connections due, carried between sweeps. */
    this.credit = 0
    /** Where the last sweep stopped. Set iterators stay valid while the set changes. */
    this.cursor = clients.values()
    /** @type {NodeJS.Timeout | null} */
    this.timer = null
  }

  start () {
    this.timer ??= setInterval(() => this.sweep(), SWEEP_MS).unref()
  }

  stop () {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  /** @returns {number} connections visited */
  sweep () {
    const size = this.clients.size
    this.credit = Math.min(size, this.credit + size * SWEEP_MS / this.intervalMs)
    const due = Math.floor(this.credit)
    this.credit -= due
    let visited = 0
    while (visited < due) {
      let next = this.cursor.next()
      if (next.done) {
        this.cursor = this.clients.values()
        next = this.cursor.next()
        if (next.done) break
      }
      visited++
      next.value.beat()
    }
    return visited
  }
}
