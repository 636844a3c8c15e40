// What an operator asks of this gateway through the admin API of any
// gateway (@wsps/shared/admin-commands): read from Redis every POLL_MS,
// acted on when it names this node or matches a connection here, and
// answered with this node's name, so the sender knows who has done it.

import { Disconnect } from '@wsps/protocol'
import { DISTINCT, FULL_RATE } from './delivery.js'

/** How often the commands are read: what an operator waits at most for an action to start. */
export const POLL_MS = 500
/** Connections described in one answer at most (`matched` still counts them all). */
const DESCRIBED = 100

/**
 * @typedef {import('@wsps/shared/admin-commands').AdminCommand} AdminCommand
 * @typedef {import('@wsps/shared/admin-commands').AdminAnswer} AdminAnswer
 * @typedef {object} Peers what the actions read and act through
 * @property {import('@wsps/shared/admin-commands').AdminChannel} channel
 * @property {string} node this process's name in the fleet view
 * @property {import('./connections.js').Connections} connections
 * @property {() => void} onDrain stop this process as on SIGTERM
 * @property {import('./session-cap.js').SessionCap | null} [cap] closes a session a newer one of its user replaced
 */

export class AdminActions {
  /** @type {Peers} */
  #peers
  #log
  /** @type {string | null} the last command read; null until the first poll */
  #after = null
  #polling = false
  /** @type {NodeJS.Timeout | undefined} */
  #timer

  /** @param {Peers & {logger: import('pino').Logger}} options */
  constructor ({ logger, ...peers }) {
    this.#peers = peers
    this.#log = logger.child({ component: 'admin' })
  }

  start () {
    this.#timer = setInterval(() => { this.poll() }, POLL_MS)
    this.#timer.unref()
    this.poll()
  }

  stop () {
    clearInterval(this.#timer)
  }

  /** Reads and acts on the commands since the last read; a failed read is retried at the next poll. */
  async poll () {
    if (this.#polling) return
    this.#polling = true
    try {
      const { channel, onDrain } = this.#peers
      // Commands sent before this process started are not for it.
      this.#after ??= await channel.lastId()
      for (const { id, command } of await channel.readAfter(this.#after)) {
        this.#after = id
        const answer = this.#act(command)
        if (answer === null) continue
        await channel.answer(id, answer).catch((err) => this.#log.warn({ err, id }, 'could not answer a command'))
        if (command.action === 'drain') onDrain()
      }
    } catch (err) {
      this.#log.debug({ err }, 'admin commands not read')
    } finally {
      this.#polling = false
    }
  }

  /**
   * @param {AdminCommand} command
   * @returns {AdminAnswer | null} null: not for this node
   */
  #act (command) {
    const { node, connections } = this.#peers
    if (command.node !== undefined && command.node !== node) return null
    switch (command.action) {
      case 'drain':
        this.#log.warn('drain asked by an operator')
        return { node, matched: 1 }
      case 'disconnect': {
        const matched = connections.matching(matcher(command))
        for (const client of matched) client.close(Disconnect.OPERATOR_DISCONNECT)
        if (matched.length) this.#log.warn({ connections: matched.map((c) => c.id), user: command.user }, 'disconnected by an operator')
        return { node, matched: matched.length }
      }
      case 'evict':
        // Sent by another gateway, not an operator: nobody waits for the answer.
        this.#peers.cap?.evictLocal(command.connection)
        return null
      case 'inspect': {
        const matched = connections.matching(matcher(command))
        return { node, matched: matched.length, connections: matched.slice(0, DESCRIBED).map(describe) }
      }
      default:
        return { node, matched: 0, error: 'unknown action' }
    }
  }
}

/**
 * @param {{connection?: number, user?: string}} target
 * @returns {(client: import('./connection.js').Connection) => boolean}
 */
function matcher ({ connection, user }) {
  // A command without either matches nothing (the API refuses it before).
  if (connection === undefined && user === undefined) return () => false
  return (c) => (connection === undefined || c.id === connection) && (user === undefined || c.user === user)
}

/**
 * One connection as an operator sees it: who, what it watches and how, how
 * far behind it is.
 *
 * @param {import('./connection.js').Connection} c
 */
function describe (c) {
  const subs = c.subscriptions
  const { slowForMs, skipped } = c.lag
  return {
    id: c.id,
    user: c.user,
    class: c.userClass,
    ip: c.ip,
    authed: c.authed,
    symbols: subs.symbols.map((symbol) => ({ symbol, mode: modeOf(subs.deliveryOf(symbol)), delayed: subs.delayedOf(symbol) })),
    bars: subs.barCount,
    bufferedBytes: c.bufferedAmount,
    slowForMs,
    skipped,
    resumes: c.resumes
  }
}

/**
 * @param {number} delivery
 * @returns {string} as a `sub` would ask for it: `distinct`, `merge` or `merge, maxRate N`
 */
function modeOf (delivery) {
  if (delivery === DISTINCT) return 'distinct'
  if (delivery === FULL_RATE) return 'merge'
  return `merge, maxRate ${delivery}`
}
