// ioredis connections built the same way by every service, for a single
// Redis or a Redis Cluster (WSPS_REDIS_MODE).

import { readFileSync } from 'node:fs'
import { Cluster, Redis } from 'ioredis'

/**
 * @typedef {object} RedisSettings
 * @property {string} redisUrl
 * @property {'standalone' | 'cluster'} redisMode
 * @property {string} redisUsername
 * @property {string} redisPassword
 * @property {string} redisTlsCaFile
 * @property {boolean} [redisAutoPipeline] cluster: ioredis auto-pipelining (WSPS_REDIS_AUTO_PIPELINE)
 *
 * @typedef {Redis | Cluster} RedisClient
 */

/** Capped exponential backoff with jitter; never gives up. @param {number} times */
const retry = (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000) + Math.floor(Math.random() * 100)

/**
 * Opens a connection that retries for ever: a gateway must outlive a Redis
 * restart, not exit on it.
 *
 * @param {RedisSettings} settings
 * @param {{name: string, onError?: (err: Error) => void, shardedSubscribers?: boolean} & import('ioredis').RedisOptions} options
 * @returns {RedisClient}
 */
export function connectRedis (settings, { name, onError, shardedSubscribers, ...options }) {
  const url = new URL(settings.redisUrl)
  /** @type {import('ioredis').RedisOptions} */
  const auth = {}
  if (settings.redisUsername) auth.username = settings.redisUsername
  if (settings.redisPassword) auth.password = settings.redisPassword
  else if (url.password) auth.password = decodeURIComponent(url.password)
  if (url.protocol === 'rediss:') {
    auth.tls = settings.redisTlsCaFile ? { ca: readFileSync(settings.redisTlsCaFile) } : {}
  }
  /** @type {RedisClient} */
  let client
  if (settings.redisMode === 'cluster') {
    client = new Cluster([{ host: url.hostname, port: Number(url.port || 6379) }], {
      redisOptions: { connectionName: name, maxRetriesPerRequest: null, ...auth, ...options },
      clusterRetryStrategy: retry,
      enableOfflineQueue: true,
      // Batching per node is faster, but ioredis handles a MOVED for an
      // auto-pipelined batch as a whole and may keep routing to the old
      // node through a failover (ioredis #2075): off unless asked for.
      enableAutoPipelining: settings.redisAutoPipeline ?? false,
      // A slot map that went stale in a failover is refreshed at least this often.
      slotsRefreshInterval: 2000,
      shardedSubscribers: shardedSubscribers ?? false,
      // Keep the seed's host name: TLS certificates name it, not the IPs.
      dnsLookup: (address, callback) => callback(null, address)
    })
  } else {
    client = new Redis(settings.redisUrl, {
      connectionName: name,
      maxRetriesPerRequest: null,
      enableAutoPipelining: false,
      retryStrategy: retry,
      ...auth,
      ...options
    })
  }
  // Without a listener ioredis prints every reconnect error to stderr.
  client.on('error', onError ?? (() => {}))
  return client
}

/**
 * GET of many keys in one round trip: MGET on a single Redis; on a cluster
 * (where MGET cannot span slots) one GET per key, all sent at once.
 *
 * @param {RedisClient} client
 * @param {string[]} keys
 * @returns {Promise<(string | null)[]>}
 */
export function getMany (client, keys) {
  if (keys.length === 0) return Promise.resolve([])
  if (client instanceof Cluster) return Promise.all(keys.map((k) => client.get(k)))
  return client.mget(...keys)
}

/**
 * Like getMany, but on a cluster a key whose shard fails (down, failing
 * over) is an Error in its place instead of failing every key: one shard's
 * trouble must not stop the others. On a single Redis it is one MGET, all
 * or nothing.
 *
 * @param {RedisClient} client
 * @param {string[]} keys
 * @returns {Promise<(string | null | Error)[]>}
 */
export function getEach (client, keys) {
  if (!(client instanceof Cluster)) return getMany(client, keys)
  return Promise.all(keys.map((k) => client.get(k).catch((/** @type {Error} */ err) => err)))
}
