// This gateway process's part of the usage records (WSPS_USAGE_RECORDS,
// @wsps/shared/usage-records): a record per session, venue and service
// level, opened when the session first subscribes a symbol of that venue
// at that level (quotes, bars or a book; a `sub`, an SSE stream, a refresh
// moving it to the other timeline) and closed when the session ends. Every third of the lease it says it is
// alive, and closes the open records of processes that stopped saying so.
// Only sessions with a user (auth on) are recorded.

import { randomBytes } from 'node:crypto'
import { NO_VENUE } from '@wsps/shared/usage-records'

/**
 * @typedef {import('./connection.js').Connection} Client
 * @typedef {import('@wsps/shared/usage-records').UsageRecord} UsageRecord
 */

export class UsageRecorder {
  #records
  #venueOf
  #node
  #leaseMs
  #log
  /** This process in the records: its node and a start id (a restarted node is another instance). */
  #instance
  /** @type {Map<Client, Map<string, UsageRecord>>} each session's open records by `venue level` */
  #open = new Map()
  #n = 0
  /** @type {NodeJS.Timeout | undefined} */
  #timer

  /**
   * @param {object} options
   * @param {import('@wsps/shared/usage-records').UsageRecords} options.records
   * @param {import('./venues.js').VenueOf} options.venueOf
   * @param {string} options.node this process's name in the fleet view
   * @param {number} options.leaseMs WSPS_SESSION_LEASE_MS: how long a silent process's records stay open
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ records, venueOf, node, leaseMs, logger }) {
    this.#records = records
    this.#venueOf = venueOf
    this.#node = node
    this.#leaseMs = leaseMs
    this.#instance = `${node}@${randomBytes(4).toString('hex')}`
    this.#log = logger.child({ component: 'usage' })
  }

  start () {
    this.#tick()
    this.#timer = setInterval(() => this.#tick(), Math.floor(this.#leaseMs / 3))
    this.#timer.unref()
  }

  stop () {
    clearInterval(this.#timer)
  }

  /**
   * The session subscribed these symbols, each on its timeline.
   *
   * @param {Client} client
   * @param {readonly string[]} symbols
   * @param {(symbol: string) => boolean} delayed
   */
  saw (client, symbols, delayed) {
    const user = client.user
    if (user === null || symbols.length === 0) return
    let held = this.#open.get(client)
    for (const s of symbols) {
      const venue = this.#venueOf(s) ?? NO_VENUE
      const level = delayed(s) ? 'delayed' : 'realtime'
      const key = `${venue} ${level}`
      if (held?.has(key)) continue
      if (held === undefined) {
        held = new Map()
        this.#open.set(client, held)
      }
      /** @type {UsageRecord} */
      const record = { id: `${this.#instance}:${client.id}:${++this.#n}`, user, class: client.userClass ?? 'pro', venue, level, start: Date.now(), end: null, gateway: this.#node }
      held.set(key, record)
      this.#records.open(this.#instance, record).catch((err) => this.#log.warn({ err, id: record.id }, 'usage record not opened'))
    }
  }

  /**
   * The session ended: its records close.
   *
   * @param {Client} client
   */
  end (client) {
    const held = this.#open.get(client)
    if (held === undefined) return
    this.#open.delete(client)
    const end = Date.now()
    for (const record of held.values()) {
      this.#records.close(this.#instance, { ...record, end }).catch((err) => this.#log.warn({ err, id: record.id }, 'usage record not closed'))
    }
  }

  #tick () {
    const now = Date.now()
    this.#records.alive(this.#instance, now)
      .then(() => this.#records.sweep(now, this.#leaseMs))
      .then((closed) => { if (closed) this.#log.info({ closed }, 'closed the usage records of a gateway that stopped') })
      .catch((err) => this.#log.debug({ err }, 'usage liveness not written'))
  }
}
