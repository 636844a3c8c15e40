// Each user's sessions over the fleet, in Redis: one HASH per user
// (keys.js, userSessions), changed only by the two session scripts
// (scripts.js, SESSION_TAKE and SESSION_RENEW) and a release. A session is
// named `<node>#<connection id>`, so the gateway holding one it must close
// is known from the name alone. Every place is a lease on Redis's clock:
// the sessions of a gateway that stopped renewing them (it died) free
// their places by themselves.

/** Between a node's name and a connection id in a session's name. */
const SEPARATOR = '#'

/**
 * @param {string} node
 * @param {number} connection
 * @returns {string} the session's name
 */
export function sessionName (node, connection) {
  return `${node}${SEPARATOR}${connection}`
}

/**
 * @param {string} session a session's name
 * @returns {{node: string, connection: number}}
 */
export function sessionOf (session) {
  const at = session.lastIndexOf(SEPARATOR)
  return { node: session.slice(0, at), connection: Number(session.slice(at + 1)) }
}

/**
 * @typedef {{taken: true, start: number, evicted: string[]} | {taken: false}} Taken
 *   start: the session's start (ms, Redis's clock); evicted: the sessions
 *   that made room for it (close-oldest), to be closed by their gateways
 */

/**
 * @param {import('./scripts.js').ScriptedRedis} redis
 * @param {import('./keys.js').RedisKeys} keys
 * @param {{leaseMs: number, max: number, policy: 'refuse' | 'close-oldest'}} cap
 */
export function sessionSlots (redis, keys, { leaseMs, max, policy }) {
  return {
    /**
     * @param {string} user
     * @param {string} session its name (sessionName())
     * @returns {Promise<Taken>}
     */
    async take (user, session) {
      const [taken, start, ...evicted] = await redis.wspsSessionTake(keys.userSessions(user), session, leaseMs, max, policy)
      return taken === 1 ? { taken: true, start: Number(start), evicted: evicted.map(String) } : { taken: false }
    },
    /**
     * @param {string} user
     * @param {[session: string, start: number][]} held the user's sessions this gateway holds
     * @returns {Promise<string[]>} those that lost their place (evicted, or expired and taken)
     */
    async renew (user, held) {
      const kept = await redis.wspsSessionRenew(keys.userSessions(user), leaseMs, max, ...held.flat())
      return held.filter((_, i) => kept[i] !== 1).map(([session]) => session)
    },
    /**
     * @param {string} user
     * @param {string} session
     */
    async release (user, session) {
      await redis.hdel(keys.userSessions(user), session)
    }
  }
}

/** @typedef {ReturnType<typeof sessionSlots>} SessionSlots */
