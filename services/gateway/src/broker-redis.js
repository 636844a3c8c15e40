// Redis implementation of the Broker: one subscription connection (pub/sub
// mode cannot run other commands) and one command connection. On a Redis
// Cluster, channels are shard channels (SSUBSCRIBE), each on the shard that
// owns its symbol, so a gateway talks only to the shards of its symbols.

import calculateSlot from 'cluster-key-slot'
import { closeRedis, connectRedis, watchPrimary } from '@wsps/shared/redis'
import { watchLiveness } from '@wsps/shared/redis-liveness'
import { latestQuotes } from '@wsps/shared/latest'
import { bookDemand, readBook } from '@wsps/shared/books'
import { traceOf, untraced } from '@wsps/shared/published'
import { adminChannel } from '@wsps/shared/admin-commands'
import { sessionSlots } from '@wsps/shared/session-slots'
import { usageRecords } from '@wsps/shared/usage-records'
import { readFleet, removeStatus, writeStatus } from '@wsps/shared/fleet-status'
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
 * @typedef {object} RedisBrokerExtras
 * @property {(handlers: import('./broker.js').BrokerHandlers) => void} start connects and reports to
 *   the handlers; nothing is connected before
 * @property {() => number} aliveForMs how long every link has been ready and answering (0: not now)
 * @property {() => number} lastAliveAt wall clock (ms) of the last moment every link was known alive
 * @property {(url: string, ttlMs: number) => Promise<string[]>} announce records this gateway (reachable
 *   at url) as seen now; resolves with the other gateways seen within ttlMs
 * @property {(record: import('@wsps/shared/fleet-status').StatusRecord, intervalMs: number) => Promise<void>} writeStatus
 *   this process's record in the fleet's (fleet-status.js)
 * @property {(record: import('@wsps/shared/fleet-status').StatusRecord) => Promise<void>} removeStatus
 * @property {() => Promise<import('@wsps/shared/fleet-status').FleetEntry[]>} readFleet every process's record
 * @property {import('@wsps/shared/admin-commands').AdminChannel} admin an operator's commands to the
 *   gateways, on the command connection (after start())
 * @property {(cap: {leaseMs: number, max: number, policy: 'refuse' | 'close-oldest'}) => import('@wsps/shared/session-slots').SessionSlots} sessionSlots
 *   each user's sessions over the fleet, on the command connection (after start())
 * @property {import('@wsps/shared/usage-records').UsageRecords} usage the usage records, on the
 *   command connection (after start())
 * @property {import('./books/book-hub.js').BookSource} books the order books' channels and reads; their
 *   messages go to onBook, and onBooksLost names the channels a reconnect may have cost messages
 *
 * @typedef {import('./broker.js').Broker & RedisBrokerExtras} RedisBroker
 */

/**
 * @param {import('@wsps/shared/redis').RedisSettings & import('@wsps/shared/redis-liveness').LivenessSettings & {redisKeyPrefix: string, nodeName: string}} config
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
  /** @type {import('@wsps/shared/admin-commands').AdminChannel | null} */
  let admin = null
  /** @type {import('@wsps/shared/usage-records').UsageRecords | null} */
  let usage = null
  /** @type {import('@wsps/shared/redis-liveness').Liveness[]} */
  const liveness = []
  /** performance.now() since when every link has been alive (0: not alive now) */
  let aliveSince = 0
  /** @type {NodeJS.Timeout | null} */
  let aliveTimer = null
  /** Both connections ready and every link answering its PINGs in time. */
  const alive = () => sub.status === 'ready' && cmd.status === 'ready' && liveness.every((l) => l.alive())
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
   * Cluster: channel -> the shard subscriber (ioredis ShardedSubscriber)
   * that held it when it was subscribed. A subscriber ioredis replaced on the
   * same node (its connection dropped or was found silent) is a new object:
   * only its channels were lost.
   * @type {Map<string, unknown>}
   */
  const subscriberAt = new Map()
  /** @param {string} channel @returns {unknown} the shard subscriber serving it now */
  const subscriberOf = (channel) => /** @type {{shardedSubscribers?: {getResponsibleSubscriber?: (slot: number) => unknown}}} */ (/** @type {unknown} */ (sub)).shardedSubscribers?.getResponsibleSubscriber?.(calculateSlot(channel)) ?? null
  /**
   * Cluster: the symbols whose channels (quotes or books) a shard node (`host:port`) serves.
   * @param {string} node
   */
  const symbolsOn = (node) => {
    /** @type {Set<string>} */
    const out = new Set()
    for (const [channel, owner] of ownerAt) {
      const symbol = keys.symbolOf(channel) ?? keys.bookSymbolOf(channel)
      if (symbol && owner === node) out.add(symbol)
    }
    return [...out]
  }

  /**
   * Subscribes the channels of these symbols (named by channelOf).
   *
   * @param {string[]} symbols
   * @param {(symbol: string) => string} channelOf
   * @returns {Promise<string[]>} the symbols whose channel could not be
   *   subscribed (on a cluster, a shard failing over); rejects when none could
   */
  const subscribeChannels = async (symbols, channelOf) => {
    const names = symbols.map(channelOf)
    /** @type {string[]} */
    const refused = []
    if (sharded) {
      // SSUBSCRIBE takes channels of one slot only: one call per symbol;
      // a shard failing over refuses its own, not the others'.
      const results = await Promise.allSettled(names.map((c) => sub.ssubscribe(c)))
      results.forEach((r, i) => {
        if (r.status === 'rejected') refused.push(symbols[i])
        else {
          ownerAt.set(names[i], ownerOf(names[i]))
          subscriberAt.set(names[i], subscriberOf(names[i]))
        }
      })
      if (refused.length === symbols.length && results[0]?.status === 'rejected') throw results[0].reason
    } else {
      for (const part of chunks(names, CHUNK)) await sub.subscribe(...part)
    }
    const no = new Set(refused)
    for (let i = 0; i < names.length; i++) if (!no.has(symbols[i])) channels.add(names[i])
    return refused
  }

  /**
   * @param {string[]} symbols
   * @param {(symbol: string) => string} channelOf
   */
  const unsubscribeChannels = async (symbols, channelOf) => {
    const names = symbols.map(channelOf)
    if (sharded) await Promise.all(names.map((c) => sub.sunsubscribe(c)))
    else for (const part of chunks(names, CHUNK)) await sub.unsubscribe(...part)
    for (const c of names) {
      channels.delete(c)
      ownerAt.delete(c)
      subscriberAt.delete(c)
    }
  }

  /**
   * @param {string[]} symbols
   * @param {number} leaseMs
   * @param {boolean} [books] their books too (book demand: the sim makes their books)
   */
  const renewDemand = async (symbols, leaseMs, books = false) => {
    const now = Date.now()
    // The scheduling keys share one hash tag: one pipeline, even on a cluster.
    const pipeline = cmd.pipeline()
    for (const part of chunks(symbols, 500)) {
      /** @type {any} */ (pipeline).wspsDemand(keys.demand, keys.due, now + leaseMs, now, ...part)
      if (books) bookDemand(pipeline, keys, part, now + leaseMs)
    }
    await execAll(pipeline)
  }

  /** @type {import('./books/book-hub.js').BookSource} */
  const books = {
    async subscribeBooks (symbols) {
      const refused = await subscribeChannels(symbols, keys.bookChannel)
      if (refused.length) throw new Error(`book channels not subscribed: ${refused.join(',')}`)
    },
    unsubscribeBooks: (symbols) => unsubscribeChannels(symbols, keys.bookChannel),
    readBook: (symbol) => readBook(cmd, keys, symbol),
    // A book's symbol is fetched like a watched one, and marked so the
    // simulated market makes its book.
    renewDemand: (symbols, leaseMs) => renewDemand(symbols, leaseMs, true)
  }

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
      subscriberAt.clear()
      if (subReadyOnce && !closing) {
        handlers.onReconnect()
        handlers.onBooksLost?.()
      }
      subReadyOnce = true
    }
    sub.on(sharded ? 'smessage' : 'message', (/** @type {string} */ channel, /** @type {string} */ message) => {
      const symbol = keys.symbolOf(channel)
      if (!symbol) {
        const book = keys.bookSymbolOf(channel)
        if (book) handlers.onBook?.(book, message)
        return
      }
      const traceparent = traceOf(message)
      handlers.onQuote(symbol, traceparent === null ? message : untraced(message), traceparent)
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
          /** @type {string[]} */
          const books = []
          for (const [channel, owner] of ownerAt) {
            const now = ownerOf(channel)
            const by = subscriberOf(channel)
            if (now === owner && by === subscriberAt.get(channel)) continue
            ownerAt.set(channel, now)
            subscriberAt.set(channel, by)
            const symbol = keys.symbolOf(channel)
            if (symbol) moved.push(symbol)
            const book = keys.bookSymbolOf(channel)
            if (book) books.push(book)
          }
          // Only the channels whose owner or subscriber changed were lost:
          // the other shards' symbols are not touched.
          log.info({ symbols: moved.length, books: books.length }, 'shard subscribers replaced')
          if (moved.length) handlers.onReconnect(moved)
          if (books.length) handlers.onBooksLost?.(books)
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
      liveness.push(watchLiveness(conn, config, {
        onSilent: ({ node, silentMs, lastAliveAt }) => {
          log.warn({ conn: name, node, silentMs }, 'redis link silent: torn down to reconnect')
          handlers.onSilent?.(name)
          // The pub/sub link is what feeds quotes: its symbols are stale
          // since its last answer, and are told so at once.
          if (name === 'sub') handlers.onInterrupted?.(sharded ? symbolsOn(node) : undefined, lastAliveAt, true)
        },
        onAlive: (node) => log.info({ conn: name, node }, 'redis link answers again')
      }))
    }
    if (!sharded) {
      // A lost pub/sub connection: its symbols may miss quotes until the
      // reconnect's pass restores them (told after the grace).
      sub.on('close', () => { if (!closing && subReadyOnce) handlers.onInterrupted?.(undefined, Date.now(), false) })
    }
    aliveTimer = setInterval(() => {
      if (!alive()) aliveSince = 0
      else if (aliveSince === 0) aliveSince = performance.now()
    }, 100)
    aliveTimer.unref()
  }

  return {
    start,
    subscribe: (symbols) => subscribeChannels(symbols, keys.channel),
    unsubscribe: (symbols) => unsubscribeChannels(symbols, keys.channel),
    latest: (symbols) => latestQuotes(cmd, keys, symbols),
    async history (symbol, fromSeq, toSeq, max) {
      const entries = await cmd.xrange(keys.history(symbol), `${fromSeq}-0`, toSeq === null ? '+' : `${toSeq}-0`, 'COUNT', max)
      // Each entry holds one field, `q`: the quote as it was published.
      return entries.map(([, fields]) => untraced(fields[1]))
    },
    renewDemand,
    books,
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
    partition (symbols) {
      if (!sharded) return [symbols]
      /** @type {Map<string, string[]>} */
      const byNode = new Map()
      for (const s of symbols) {
        const node = ownerOf(keys.channel(s))
        const group = byNode.get(node)
        if (group) group.push(s)
        else byNode.set(node, [s])
      }
      return [...byNode.values()]
    },
    ready: alive,
    aliveForMs: () => aliveSince === 0 ? 0 : Math.round(performance.now() - aliveSince),
    lastAliveAt: () => Math.min(...liveness.map((l) => l.lastAliveAt())),
    async announce (url, ttlMs) {
      const now = Date.now()
      const [, , peers] = /** @type {[unknown, unknown, [Error | null, string[]]]} */ (await cmd.multi()
        .zadd(keys.gateways, now, url)
        .zremrangebyscore(keys.gateways, '-inf', now - ttlMs)
        .zrange(keys.gateways, 0, -1)
        .exec() ?? [])
      return (peers?.[1] ?? []).filter((u) => u !== url)
    },
    writeStatus: (record, intervalMs) => writeStatus(cmd, keys, record, intervalMs),
    removeStatus: (record) => removeStatus(cmd, keys, record),
    readFleet: () => readFleet(cmd, keys),
    get admin () { return (admin ??= adminChannel(cmd, keys)) },
    sessionSlots: (cap) => sessionSlots(cmd, keys, cap),
    get usage () { return (usage ??= usageRecords(cmd, keys)) },
    channelCount: () => channels.size,
    async close () {
      closing = true
      for (const l of liveness) l.stop()
      if (aliveTimer) clearInterval(aliveTimer)
      if (resyncTimer) clearTimeout(resyncTimer)
      await Promise.all([closeRedis(sub), closeRedis(cmd)])
    }
  }
}
