// Redis implementation of the Broker: one subscriber connection (pub/sub
// mode cannot run other commands) and one command connection.

import { connectRedis } from '@wsps/shared/redis'
import { redisKeys } from '@wsps/shared/keys'
import { registerScripts } from '@wsps/shared/scripts'

const CHUNK = 1000

/**
 * @template T
 * @param {T[]} list
 * @param {number} size
 */
function * chunks (list, size) {
  for (let i = 0; i < list.length; i += size) yield list.slice(i, i + size)
}

/**
 * @param {import('@wsps/shared/redis').RedisSettings & {redisKeyPrefix: string, nodeName: string}} config
 * @param {import('./broker.js').BrokerHandlers} handlers
 * @param {import('pino').Logger} logger
 * @returns {import('./broker.js').Broker}
 */
export function createRedisBroker (config, handlers, logger) {
  const keys = redisKeys(config.redisKeyPrefix)
  const log = logger.child({ component: 'redis' })
  let channels = 0
  let subReadyOnce = false
  let closing = false

  /** @param {string} conn */
  const onError = (conn) => (/** @type {Error} */ err) => log.warn({ conn, err: err.message }, 'redis connection error')

  // autoResubscribe is off on purpose: after a reconnect the hub resubscribes
  // and sends fresh snapshots itself, so it knows exactly when that is done.
  const sub = connectRedis(config, { name: `wsps-gw-sub-${config.nodeName}`, autoResubscribe: false, onError: onError('sub') })
  const cmd = registerScripts(connectRedis(config, { name: `wsps-gw-cmd-${config.nodeName}`, onError: onError('cmd') }))

  sub.on('message', (/** @type {string} */ channel, /** @type {string} */ message) => {
    const symbol = keys.symbolOf(channel)
    if (symbol) handlers.onQuote(symbol, message)
  })
  for (const [name, conn] of /** @type {const} */ ([['sub', sub], ['cmd', cmd]])) {
    conn.on('ready', () => {
      log.info({ conn: name }, 'redis ready')
      handlers.onStatus?.(true, name)
      if (name === 'sub') {
        channels = 0
        if (subReadyOnce) handlers.onReconnect()
        subReadyOnce = true
      }
    })
    conn.on('close', () => {
      if (!closing) log.warn({ conn: name }, 'redis connection lost')
      handlers.onStatus?.(false, name)
    })
  }

  return {
    async subscribe (symbols) {
      for (const part of chunks(symbols, CHUNK)) {
        channels = /** @type {number} */ (await sub.subscribe(...part.map(keys.channel)))
      }
    },
    async unsubscribe (symbols) {
      for (const part of chunks(symbols, CHUNK)) {
        channels = /** @type {number} */ (await sub.unsubscribe(...part.map(keys.channel)))
      }
    },
    async latest (symbols) {
      /** @type {(string | null)[]} */
      const out = []
      for (const part of chunks(symbols, CHUNK)) out.push(...await cmd.mget(...part.map(keys.latest)))
      return out
    },
    async renewDemand (symbols, leaseMs) {
      const now = Date.now()
      const pipeline = cmd.pipeline()
      for (const part of chunks(symbols, 500)) {
        /** @type {any} */ (pipeline).wspsDemand(keys.demand, keys.due, now + leaseMs, now, ...part)
      }
      const results = await pipeline.exec()
      const failed = results?.find(([err]) => err)
      if (failed) throw failed[0]
    },
    ready: () => sub.status === 'ready' && cmd.status === 'ready',
    channelCount: () => channels,
    async close () {
      closing = true
      await Promise.allSettled([sub.quit(), cmd.quit()])
      sub.disconnect()
      cmd.disconnect()
    }
  }
}
