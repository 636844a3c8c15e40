// Every Redis link proves it is alive. A link can go silent with its socket
// open (a partition, a dropped NAT or conntrack entry, a hung node): TCP
// says nothing for minutes, ioredis stays `ready`, and commands or pub/sub
// messages simply stop coming back. A PING every intervalMs must be
// answered within timeoutMs; a link that does not answer is destroyed at
// once (not ended: a FIN over a silent link is never answered either), and
// ioredis reconnects it. A link still handshaking after timeoutMs (the
// ready check over a silent proxy never answers) is destroyed the same way.
//
// One watcher per ioredis client. For a Cluster it watches every node
// connection, and, with sharded pub/sub, every shard's subscriber: those
// are ioredis 5.11 internals (`shardedSubscribers.shardedSubscribers`, a
// Map of ShardedSubscriber with getInstance()), pinned by package-lock.json
// and checked by redis-liveness.test.js against a real Cluster.

import { Cluster } from 'ioredis'
import { RedisSilentError } from './errors.js'

/**
 * @typedef {import('ioredis').Redis} Redis
 *
 * @typedef {object} LivenessSettings
 * @property {number} redisPingIntervalMs WSPS_REDIS_PING_INTERVAL_MS
 * @property {number} redisPingTimeoutMs WSPS_REDIS_PING_TIMEOUT_MS
 *
 * @typedef {object} LivenessHandlers
 * @property {(info: {node: string, silentMs: number, lastAliveAt: number}) => void} [onSilent] a link did not
 *   answer in time and was torn down (lastAliveAt: wall clock of its last answer, 0 never)
 * @property {(node: string) => void} [onAlive] a link answered (after onSilent: it is back)
 *
 * @typedef {object} Liveness
 * @property {() => boolean} alive every watched link answered its last PING in time
 * @property {() => number} lastAliveAt wall clock (ms) of the last moment every link was known alive
 * @property {() => void} stop
 */

/** @param {Redis} r */
const nodeOf = (r) => `${r.options.host}:${r.options.port}`

/**
 * The single-node connections behind a client right now.
 *
 * @param {Redis | Cluster} client
 * @returns {Redis[]}
 */
function linksOf (client) {
  if (!(client instanceof Cluster)) return [client]
  const links = client.nodes('all')
  const group = /** @type {{shardedSubscribers?: {shardedSubscribers?: Map<string, {getInstance(): Redis | null}>}}} */ (/** @type {unknown} */ (client)).shardedSubscribers
  for (const s of group?.shardedSubscribers?.values() ?? []) {
    const r = s.getInstance()
    if (r) links.push(r)
  }
  return links
}

/** How often deadlines are checked: a silent link is found within this of its deadline. */
const CHECK_MS = 250

/**
 * @typedef {object} LinkState
 * @property {number} pingAt when the PING in flight was sent (0: none)
 * @property {number} pingedAt when the last PING was sent
 * @property {number} handshakeAt when it was first seen handshaking (0: not)
 * @property {number} answeredAt wall clock of its last answer
 * @property {boolean} silent torn down as silent, not answered since
 */

/**
 * @param {Redis | Cluster} client
 * @param {LivenessSettings} settings
 * @param {LivenessHandlers} [handlers]
 * @returns {Liveness}
 */
export function watchLiveness (client, { redisPingIntervalMs, redisPingTimeoutMs }, { onSilent, onAlive } = {}) {
  /** @type {WeakMap<Redis, LinkState>} */
  const links = new WeakMap()
  let allAlive = true
  let lastAliveAt = Date.now()

  /** @param {Redis} r @returns {LinkState} */
  const stateOf = (r) => {
    let s = links.get(r)
    if (s === undefined) links.set(r, s = { pingAt: 0, pingedAt: 0, handshakeAt: 0, answeredAt: Date.now(), silent: false })
    return s
  }

  /** @param {Redis} r @param {LinkState} s @param {number} waitedMs */
  const tearDown = (r, s, waitedMs) => {
    const node = nodeOf(r)
    if (!s.silent) {
      s.silent = true
      onSilent?.({ node, silentMs: waitedMs, lastAliveAt: s.answeredAt })
    }
    s.pingAt = 0
    s.handshakeAt = 0
    r.stream?.destroy(new RedisSilentError(node, waitedMs))
  }

  /** @param {Redis} r @param {LinkState} s @param {number} now */
  const ping = (r, s, now) => {
    s.pingAt = s.pingedAt = now
    r.ping().then(() => {
      if (s.pingAt !== now) return
      s.pingAt = 0
      s.answeredAt = Date.now()
      if (s.silent) {
        s.silent = false
        onAlive?.(nodeOf(r))
      }
    }, () => {
      // Rejected: the connection closed (ioredis reconnects it) or the node
      // refused the command; the next PING asks again.
      if (s.pingAt === now) s.pingAt = 0
    })
  }

  const check = () => {
    const now = performance.now()
    let ok = true
    let ready = 0
    for (const r of linksOf(client)) {
      const s = stateOf(r)
      if (r.status === 'connect') {
        // TCP connected, perhaps to a proxy whose far side is gone: the
        // ready check then never answers.
        if (s.handshakeAt === 0) s.handshakeAt = now
        else if (now - s.handshakeAt > redisPingTimeoutMs) tearDown(r, s, Math.round(now - s.handshakeAt))
        continue
      }
      s.handshakeAt = 0
      if (r.status !== 'ready') continue
      ready++
      if (s.pingAt !== 0) {
        if (now - s.pingAt > redisPingTimeoutMs) {
          ok = false
          tearDown(r, s, Math.round(now - s.pingAt))
        }
      } else if (now - s.pingedAt >= redisPingIntervalMs) {
        ping(r, s, now)
      }
    }
    allAlive = ok && ready > 0
    if (allAlive) lastAliveAt = Date.now()
  }
  const timer = setInterval(check, Math.min(CHECK_MS, redisPingIntervalMs))
  timer.unref()
  return {
    alive: () => allAlive,
    lastAliveAt: () => lastAliveAt,
    stop: () => clearInterval(timer)
  }
}
