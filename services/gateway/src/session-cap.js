// The fleet-wide cap on a user's sessions (WSPS_MAX_SESSIONS_PER_USER):
// the places this gateway's sessions hold in their users' counts in Redis
// (@wsps/shared/session-slots), taken when a session is authenticated,
// renewed every third of the lease, released when it closes. A token
// refresh keeps its place (the user cannot change: session.js).
//
// close-oldest: the session script names the sessions that made room.
// This gateway closes its own at once; another gateway's are sent an
// `evict` command (admin-commands.js, read every POLL_MS by each gateway),
// and, should that be missed, its next renewal finds the place lost and
// closes the session all the same.

import { Disconnect } from '@wsps/protocol'
import { sessionName, sessionOf } from '@wsps/shared/session-slots'

/**
 * @typedef {import('./connection.js').Connection} Client
 * @typedef {{user: string, session: string, start: number | null}} Held
 *   start: null while it is being taken
 */

export class SessionCap {
  #slots
  #channel
  #node
  #leaseMs
  #metrics
  #log
  /** @type {Map<Client, Held>} */
  #held = new Map()
  /** @type {Map<string, Client>} by session name */
  #byName = new Map()
  /** @type {NodeJS.Timeout | undefined} */
  #timer
  #renewing = false

  /**
   * @param {object} options
   * @param {import('@wsps/shared/session-slots').SessionSlots} options.slots
   * @param {import('@wsps/shared/admin-commands').AdminChannel} options.channel reaches the other gateways
   * @param {string} options.node this process's name in the fleet view
   * @param {number} options.leaseMs WSPS_SESSION_LEASE_MS
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ slots, channel, node, leaseMs, metrics, logger }) {
    this.#slots = slots
    this.#channel = channel
    this.#node = node
    this.#leaseMs = leaseMs
    this.#metrics = metrics
    this.#log = logger.child({ component: 'session-cap' })
  }

  start () {
    this.#timer = setInterval(() => { this.renew() }, Math.floor(this.#leaseMs / 3))
    this.#timer.unref()
  }

  stop () {
    clearInterval(this.#timer)
  }

  /**
   * A place for the connection among its user's sessions.
   *
   * @param {Client} client
   * @param {string} user
   * @returns {Promise<boolean>} false: the user holds the cap (refuse); rejects when Redis did not answer
   */
  async take (client, user) {
    const session = sessionName(this.#node, client.id)
    /** @type {Held} */
    const held = { user, session, start: null }
    // Held before it is taken: a close meanwhile releases it, after the
    // take on the same connection to Redis, so never before it.
    this.#held.set(client, held)
    this.#byName.set(session, client)
    let taken
    try {
      taken = await this.#slots.take(user, session)
    } catch (err) {
      this.#forget(client)
      throw err
    }
    if (!taken.taken) {
      this.#forget(client)
      this.#metrics.sessionCap.inc({ outcome: 'refused' })
      return false
    }
    held.start = taken.start
    this.#metrics.sessionCap.inc({ outcome: 'taken' })
    for (const name of taken.evicted) this.#evict(name)
    return true
  }

  /**
   * The connection closed: its place is free.
   *
   * @param {Client} client
   */
  release (client) {
    const held = this.#held.get(client)
    if (held === undefined) return
    this.#forget(client)
    this.#slots.release(held.user, held.session).catch((err) => {
      // Its lease runs out by itself.
      this.#log.debug({ err, session: held.session }, 'session not released')
    })
  }

  /**
   * Closes a session of this gateway that a newer one replaced (an `evict`
   * command, or a renewal that found its place lost).
   *
   * @param {number} connection its id
   * @returns {boolean} whether this gateway held it
   */
  evictLocal (connection) {
    const client = this.#byName.get(sessionName(this.#node, connection))
    const held = client && this.#held.get(client)
    if (client === undefined || held === undefined || held.start === null) return false
    // Renewed no more; its close releases it, and with it the eviction mark.
    held.start = null
    this.#metrics.sessionCap.inc({ outcome: 'evicted' })
    this.#log.info({ client: client.id, user: held.user }, 'session closed: a newer one of its user took its place')
    client.close(Disconnect.SESSION_EVICTED)
    return true
  }

  /** Renews every place held here, a user per script call; a failure is retried at the next. */
  async renew () {
    if (this.#renewing) return
    this.#renewing = true
    try {
      /** @type {Map<string, [string, number][]>} */
      const byUser = new Map()
      for (const { user, session, start } of this.#held.values()) {
        if (start === null) continue
        const list = byUser.get(user)
        if (list) list.push([session, start])
        else byUser.set(user, [[session, start]])
      }
      await Promise.all([...byUser].map(async ([user, held]) => {
        try {
          for (const lost of await this.#slots.renew(user, held)) this.evictLocal(sessionOf(lost).connection)
        } catch (err) {
          this.#log.debug({ err, user }, 'sessions not renewed')
        }
      }))
    } finally {
      this.#renewing = false
    }
  }

  /** @param {string} name an evicted session's */
  #evict (name) {
    const { node, connection } = sessionOf(name)
    if (node === this.#node) {
      this.evictLocal(connection)
      return
    }
    this.#channel.send({ action: 'evict', node, connection }).catch((err) => {
      // Its gateway's next renewal finds the place lost.
      this.#log.warn({ err, session: name }, 'evict command not sent')
    })
  }

  /** @param {Client} client */
  #forget (client) {
    const held = this.#held.get(client)
    if (held === undefined) return
    this.#held.delete(client)
    this.#byName.delete(held.session)
  }
}
