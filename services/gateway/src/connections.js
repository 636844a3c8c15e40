// The open connections of a process, whatever their transport: created
// here once admitted, counted, heartbeated, forgotten on close, drained on
// shutdown.

import { Disconnect } from '@wsps/protocol'
import { Connection } from './connection.js'
import { Heartbeat } from './heartbeat.js'

export class Connections {
  /** @type {Set<Connection>} */
  #clients = new Set()
  #nextId = 1
  #ctx
  #admission
  #sessions
  #metrics
  #heartbeat
  #log

  /**
   * @param {object} options
   * @param {import('./connection.js').ConnectionContext} options.ctx what every connection is given
   * @param {import('./admission.js').Admission} options.admission frees a closed connection's IP place
   * @param {import('./session.js').Sessions} options.sessions told of every close
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   * @param {number} options.heartbeatMs
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ ctx, admission, sessions, metrics, heartbeatMs, logger }) {
    this.#ctx = ctx
    this.#admission = admission
    this.#sessions = sessions
    this.#metrics = metrics
    this.#heartbeat = new Heartbeat(this.#clients, heartbeatMs)
    this.#log = logger.child({ component: 'connections' })
  }

  /** Connections open now. */
  get size () {
    return this.#clients.size
  }

  start () {
    this.#heartbeat.start()
  }

  /**
   * A connection on a transport that has just opened: counted, heartbeated
   * and drained with the others. The transport's owner calls onClose() when
   * it closes.
   *
   * @param {import('./connection.js').Transport} transport
   * @param {import('./admission.js').Lease} lease what admission let in
   * @returns {Connection} not authed yet: Sessions.welcome() or the `auth` frame does it
   */
  open (transport, { ip }) {
    const client = new Connection(transport, this.#ctx, { id: this.#nextId++, ip, grants: null, authed: false })
    this.#clients.add(client)
    this.#metrics.connections.set(this.#clients.size)
    return client
  }

  /**
   * The transport closed: forget the client everywhere.
   *
   * @param {Connection} client
   * @param {number} code
   */
  onClose (client, code) {
    // The code we closed with, not the peer's answer: a stuck reader never
    // echoes the close frame and would show as 1006.
    code = client.closeCode ?? code
    this.#clients.delete(client)
    this.#admission.release(client.ip)
    this.#sessions.onClose(client)
    this.#metrics.connections.set(this.#clients.size)
    this.#metrics.closes.inc({ code: String(code) })
  }

  /**
   * Closes every client with 1012, spread evenly at random over `windowMs`
   * so they do not all reconnect to the remaining pods in the same instant.
   * Resolves when every connection is closed.
   *
   * @param {number} windowMs
   * @param {import('@wsps/protocol').Disconnect} [disconnect] a 1012 (SERVICE_RESTART: shutting down)
   */
  drain (windowMs, disconnect = Disconnect.SERVICE_RESTART) {
    const clients = [...this.#clients]
    this.#log.info({ clients: clients.length, windowMs, reason: disconnect.reason }, 'draining')
    return new Promise((resolve) => {
      if (this.#clients.size === 0) return resolve(undefined)
      const check = setInterval(() => {
        if (this.#clients.size === 0) {
          clearInterval(check)
          resolve(undefined)
        }
      }, 50)
      for (const client of clients) {
        setTimeout(() => client.close(disconnect), Math.floor(Math.random() * windowMs))
      }
    })
  }

  /**
   * @param {(client: Connection) => boolean} match
   * @returns {Connection[]} the open connections it matches (not those closing)
   */
  matching (match) {
    const out = []
    for (const client of this.#clients) if (client.open && match(client)) out.push(client)
    return out
  }

  /** Stops the heartbeat and drops every connection at once. */
  close () {
    this.#heartbeat.stop()
    for (const client of this.#clients) client.terminate()
  }
}
