// An operator's actions reach the gateways through Redis, like the fleet
// view they act on (fleet-status.js): whichever gateway serves the admin
// API appends a command to one STREAM; every gateway reads the stream from
// where it last read, acts on what concerns it, and answers into a LIST of
// that command (expiring), each answer naming its node. The sender knows
// the live gateways from the fleet view, so it knows whose answers to wait
// for. Nothing is sent to a pod's address: a command reaches a gateway
// behind any network the status records do.

/** The stream keeps about this many commands: enough for a gateway to read after a pause. */
const KEEP_COMMANDS = 1000
/** Answers are kept this long after the first, for a slow reader of them. */
const ANSWERS_TTL_MS = 30_000
/** Commands read per poll at most; the rest come at the next one. */
const READ_COUNT = 100

/**
 * @typedef {{action: 'disconnect', node?: string, connection?: number, user?: string}
 *   | {action: 'drain', node: string}
 *   | {action: 'inspect', node?: string, connection?: number, user?: string}
 *   | {action: 'evict', node: string, connection: number}} AdminCommand
 *   disconnect: close the connections matched (a connection id with its
 *   node, a user on every node or one) with OPERATOR_DISCONNECT; drain: the
 *   node stops as on SIGTERM; inspect: the matched connections, described;
 *   evict: not an operator's but a gateway's, whose new session took the
 *   place of this one in its user's sessions (close-oldest: session-cap.js),
 *   closed with SESSION_EVICTED
 * @typedef {{node: string, matched: number} & Record<string, unknown>} AdminAnswer
 * @typedef {{id: string, command: AdminCommand}} ReadCommand
 */

/**
 * @param {import('ioredis').Redis | import('ioredis').Cluster} redis
 * @param {import('./keys.js').RedisKeys} keys
 */
export function adminChannel (redis, keys) {
  return {
    /**
     * @param {AdminCommand} command
     * @returns {Promise<string>} its id: where its answers come
     */
    async send (command) {
      return /** @type {string} */ (await redis.xadd(keys.adminCommands, 'MAXLEN', '~', KEEP_COMMANDS, '*', 'c', JSON.stringify(command)))
    },
    /** @returns {Promise<string>} the id of the newest command ('0-0': none): a reader starts after it */
    async lastId () {
      const newest = await redis.xrevrange(keys.adminCommands, '+', '-', 'COUNT', 1)
      return newest[0]?.[0] ?? '0-0'
    },
    /**
     * @param {string} after an id
     * @returns {Promise<ReadCommand[]>} the commands after it, oldest first; one that does not parse
     *   as action `unreadable` (each gateway answers it as an unknown action)
     */
    async readAfter (after) {
      const entries = await redis.xrange(keys.adminCommands, `(${after}`, '+', 'COUNT', READ_COUNT)
      /** @type {ReadCommand[]} */
      const out = []
      for (const [id, fields] of entries) {
        try {
          out.push({ id, command: JSON.parse(fields[fields.indexOf('c') + 1]) })
        } catch {
          out.push({ id, command: /** @type {any} */ ({ action: 'unreadable' }) })
        }
      }
      return out
    },
    /**
     * @param {string} id the command's
     * @param {AdminAnswer} answer
     */
    async answer (id, answer) {
      await redis.multi().rpush(keys.adminAnswers(id), JSON.stringify(answer)).pexpire(keys.adminAnswers(id), ANSWERS_TTL_MS).exec()
    },
    /**
     * @param {string} id the command's
     * @returns {Promise<AdminAnswer[]>} the answers so far
     */
    async answers (id) {
      return (await redis.lrange(keys.adminAnswers(id), 0, -1)).map((text) => JSON.parse(text))
    }
  }
}

/** @typedef {ReturnType<typeof adminChannel>} AdminChannel */
