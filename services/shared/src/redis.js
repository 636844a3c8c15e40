// ioredis connections built the same way by every service.

import { readFileSync } from 'node:fs'
import { Redis } from 'ioredis'

/**
 * @typedef {object} RedisSettings
 * @property {string} redisUrl
 * @property {string} redisPassword
 * @property {string} redisTlsCaFile
 */

/**
 * Opens a Redis connection that retries for ever with capped backoff: a
 * gateway must outlive a Redis restart, not exit on it.
 *
 * @param {RedisSettings} settings
 * @param {{name: string, onError?: (err: Error) => void} & import('ioredis').RedisOptions} options
 */
export function connectRedis (settings, { name, onError, ...options }) {
  const url = new URL(settings.redisUrl)
  /** @type {import('ioredis').RedisOptions} */
  const opts = {
    connectionName: name,
    maxRetriesPerRequest: null,
    enableAutoPipelining: false,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000) + Math.floor(Math.random() * 100),
    ...options
  }
  if (settings.redisPassword) opts.password = settings.redisPassword
  if (url.protocol === 'rediss:') {
    opts.tls = settings.redisTlsCaFile ? { ca: readFileSync(settings.redisTlsCaFile) } : {}
  }
  const client = new Redis(settings.redisUrl, opts)
  // Without a listener ioredis prints every reconnect error to stderr.
  client.on('error', onError ?? (() => {}))
  return client
}
