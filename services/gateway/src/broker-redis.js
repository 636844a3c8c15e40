// Redis implementation of the Broker: one subscription connection (pub/sub
// mode cannot run other commands) and one command connection. On a Redis
// Cluster, channels are shard channels (SSUBSCRIBE), each on the shard that
// owns its symbol, so a gateway talks only to the shards of its symbols.

import calculateSlot from 'cluster-key-slot'
import { closeRedis, connectRedis, watchPrimary } from '@wsps/shared/redis'
import { latestQuotes } from '@wsps/shared/latest'
import { redisKeys } from '@wsps/shared/keys'
import { registerScripts } from '@wsps/shared/scripts'

const CHUNK = 1000
/** On a cluster, subscriber churn comes in bursts (one per shard): resync once. */
const CLUSTER_RESYNC_DEBOUNCE_MS = 200

/**
 * @template T
 * @param {T[]} list
 * @param {number} size
 */
function * chunks (list, size) {
  for (let i = 0; i < list.length; i += size) yield list.slice(i, i + size)
}

/**
 * Runs a pipeline; rejects with the first command's error, if any (exec
 * itself resolves with per-command errors).
 *
 * @param {import('ioredis').ChainableCommander} pipeline
 */
async function execAll (pipeline) {
  const failed = (await pipeline.exec())?.find(([err]) => err)
  if (failed) throw failed[0]
}

/**
 * @typedef {import('./broker.js').Broker & {start: (handlers: import('./broker.js').BrokerHandlers) => void}} RedisBroker
 *   start() connects and reports to the handlers; nothing is connected before
 */

/**
 * @param {import('@wsps/shared/redis').RedisSettings & {redisKeyPrefix: string, nodeName: string}} config
 * @param {import('pino').Logger} logger
 * @returns {RedisBroker}
 */
export function createRedisBroker (config, logger) {
  const keys = redisKeys(config.redisKeyPrefix)
  const log = logger.child({ component: 'redis' })
  const sharded = config.redisMode === 'cluster'
  /** @type {Set<string>} channels subscribed since the last (re)connect */
  const channels = new Set()
  let subReadyOnce = false
  let closing = false

  /** @param {string} conn */
  const onError = (conn) => (/** @type {Error} */ err) => log.warn({ conn, err: err.message, code: /** @type {{code?: string}} */ (err).code }, 'redis connection error')

  /** @type {import('ioredis').Redis} the subscription connection (start() opens it) */
  let sub
  /** @type {ReturnType<typeof registerScripts>} the command connection (start() opens it) */
  let cmd
  /** @type {NodeJS.Timeout | null} */
  let resyncTimer = null
  /**
   * Cluster: channel -> the node that owned its slot when it was subscribed.
   * When ioredis replaces shard subscribers (failover, resharding), only the
   * channels whose owner changed were lost: the others never stopped.
   * @type {Map<string, string>}
   */
  const ownerAt = new Map()
  /** @param {string} channel @returns {string} the node ioredis routes its slot to now ('' unknown) */
  const ownerOf = (channel) => /** @type {{slots?: string[][]}} */ (/** @type {unknown} */ (sub)).slots?.[calculateSlot(channel)]?.[0] ?? ''

  /**
   * Opens both connections; from now on quotes, reconnects and status
   * changes go to the handlers.
   *
   * @param {import('./broker.js').BrokerHandlers} handlers
   */
  const start = (handlers) => {
    // autoResubscribe is off on purpose: after a reconnect the hub resubscribes
    // and sends fresh snapshots itself, so it knows exactly when that is done.
    // Typed as the single-node client: the methods used here exist on both.
    sub = /** @type {import('ioredis').Redis} */ (connectRedis(config, { name: `wsps-gw-sub-${config.nodeName}`, autoResubscribe: false, shardedSubscribers: sharded, onError: onError('sub') }))
    cmd = registerScripts(connectRedis(config, { name: `wsps-gw-cmd-${config.nodeName}`, onError: onError('cmd') }))

    const reconnected = () => {
      channels.clear()
      ownerAt.clear()
      if (subReadyOnce && !closing) handlers.onReconnect()
      subReadyOnce = true
    }
    sub.on(sharded ? 'smessage' : 'message', (/** @type {string} */ channel, /** @type {string} */ message) => {
      const symbol = keys.symbolOf(channel)
      if (symbol) handlers.onQuote(symbol, message)
    })
    if (sharded) {
      // ioredis keeps one subscriber per shard and replaces it on failover or
      // resharding; the channels of a replaced one may have missed quotes.
      sub.on('+subscriber', () => {
        if (!subReadyOnce || resyncTimer) return
        resyncTimer = setTimeout(() => {
          resyncTimer = null
          if (closing) return
          /** @type {string[]} */
          const moved = []
          for (const [channel, owner] of ownerAt) {
            const now = ownerOf(channel)
            if (now === owner) continue
            ownerAt.set(channel, now)
            const symbol = keys.symbolOf(channel)
            if (symbol) moved.push(symbol)
          }
          // No owner changed: a subscriber was replaced on the same node (its
          // connection dropped), and which one is not said. Resync them all:
          // gap fill makes that cheap for clients.
          log.info({ symbols: moved.length || 'all' }, 'shard subscribers replaced')
          handlers.onReconnect(moved.length ? moved : undefined)
        }, CLUSTER_RESYNC_DEBOUNCE_MS)
      })
    }
    for (const [name, conn] of /** @type {const} */ ([['sub', sub], ['cmd', cmd]])) {
      conn.on('ready', () => {
        log.info({ conn: name }, 'redis ready')
        handlers.onStatus?.(true, name)
        if (name === 'sub') reconnected()
      })
      conn.on('close', () => {
        if (!closing) log.warn({ conn: name }, 'redis connection lost')
        handlers.onStatus?.(false, name)
      })
      watchPrimary(conn, {
        onFailover: () => {
          log.warn({ conn: name }, 'redis primary changed (failover)')
          handlers.onFailover?.(name)
        },
        onOutage: (seconds) => handlers.onOutage?.(seconds, name)
      })
    }
  }

  return {
    start,
    async subscribe (symbols) {
      const names = symbols.map(keys.channel)
      /** @type {string[]} */
      const refused = []
      if (sharded) {
        // SSUBSCRIBE takes channels of one slot only: one call per symbol;
        // a shard failing over refuses its own, not the others'.
        const results = await Promise.allSettled(names.map((c) => sub.ssubscribe(c)))
        results.forEach((r, i) => {
          if (r.status === 'rejected') refused.push(symbols[i])
          else ownerAt.set(names[i], ownerOf(names[i]))
        })
        if (refused.length === symbols.length && results[0]?.status === 'rejected') throw results[0].reason
      } else {
        for (const part of chunks(names, CHUNK)) await sub.subscribe(...part)
      }
      const no = new Set(refused)
      for (let i = 0; i < names.length; i++) if (!no.has(symbols[i])) channels.add(names[i])
      return refused
    },
    async unsubscribe (symbols) {
      const names = symbols.map(keys.channel)
      if (sharded) await Promise.all(names.map((c) => sub.sunsubscribe(c)))
      else for (const part of chunks(names, CHUNK)) await sub.unsubscribe(...part)
      for (const c of names) {
        channels.delete(c)
        ownerAt.delete(c)
      }
    },
    latest: (symbols) => latestQuotes(cmd, keys, symbols),
    async history (symbol, fromSeq, toSeq, max) {
      const entries = await cmd.xrange(keys.history(symbol), `${fromSeq}-0`, toSeq === null ? '+' : `${toSeq}-0`, 'COUNT', max)
      // Each entry holds one field, `q`: the quote as it was published.
      return entries.map(([, fields]) => fields[1])
    },
    async renewDemand (symbols, leaseMs) {
      const now = Date.now()
      // The scheduling keys share one hash tag: one pipeline, even on a cluster.
      const pipeline = cmd.pipeline()
      for (const part of chunks(symbols, 500)) {
        /** @type {any} */ (pipeline).wspsDemand(keys.demand, keys.due, now + leaseMs, now, ...part)
      }
      await execAll(pipeline)
    },
    async keepHistory (pins, ttlMs) {
      if (pins.length === 0) return
      if (sharded) {
        // One slot per symbol: one command each (ioredis sends them at once).
        await Promise.all(pins.map(([s, seq]) => cmd.set(keys.historyPin(s), seq, 'PX', ttlMs)))
        return
      }
      const pipeline = cmd.pipeline()
      for (const [s, seq] of pins) pipeline.set(keys.historyPin(s), seq, 'PX', ttlMs)
      await execAll(pipeline)
    },
    ready: () => sub.status === 'ready' && cmd.status === 'ready',
    channelCount: () => channels.size,
    async close () {
      closing = true
      if (resyncTimer) clearTimeout(resyncTimer)
      await Promise.all([closeRedis(sub), closeRedis(cmd)])
    }
  }
}
