// The stack of one test file (or chaos scenario): its own Redis and the
// gateways, fetchers, Redis connections and test clients started on it,
// all ended by one close() in the file's `after` hook.

import { after, before } from 'node:test'
import { Redis } from 'ioredis'
import { startFetcher, startGateway, startService } from './index.js'
import { startRedis } from './redis.js'
import { ClientPool } from './test-client.js'

/** @typedef {import('./index.js').ServiceHandle} ServiceHandle */

/**
 * The Stack of the test file that calls this at its top: started in a
 * `before` hook (ahead of the file's own), closed in an `after` hook.
 *
 * @param {import('./redis.js').RedisOptions} [options]
 */
export function useStack (options) {
  const stack = new Stack()
  before(() => stack.start(options))
  after(() => stack.close())
  return stack
}

export class Stack {
  /** @type {import('./redis.js').RedisHandle | null} */
  #redis = null
  /** @type {ServiceHandle[]} */
  #services = []
  /** @type {Redis[]} */
  #connections = []
  #clients = new ClientPool()

  /**
   * Starts its Redis.
   *
   * @param {import('./redis.js').RedisOptions} [options]
   */
  async start (options) {
    this.#redis = await startRedis(options)
    return this
  }

  /** Its Redis (after start()). */
  get redis () {
    if (!this.#redis) throw new Error('Stack: start() first')
    return this.#redis
  }

  /** @param {Record<string, string | number>} [env] */
  async gateway (env) { return this.#own(await startGateway(this.redis.url, env)) }

  /** @param {Record<string, string | number>} [env] */
  async fetcher (env) { return this.#own(await startFetcher(this.redis.url, env)) }

  /**
   * Any other service process (its Redis is the caller's to name in `env`).
   *
   * @param {string} main
   * @param {Record<string, string | number>} env
   * @param {{ready?: boolean, name?: string}} [options]
   */
  async service (main, env, options) { return this.#own(await startService(main, env, options)) }

  /**
   * A TestClient, terminated by close().
   *
   * @param {string} url
   * @param {import('ws').ClientOptions} [options]
   */
  client (url, options) { return this.#clients.connect(url, options) }

  /** An ioredis connection to its Redis, disconnected by close(). */
  redisClient () {
    const r = new Redis(this.redis.url)
    this.#connections.push(r)
    return r
  }

  /** @param {ServiceHandle} s */
  #own (s) {
    this.#services.push(s)
    return s
  }

  /** Ends everything it started (services with SIGKILL: the tests are over). */
  async close () {
    this.#clients.terminate()
    for (const r of this.#connections) r.disconnect()
    await Promise.all(this.#services.map((s) => s.kill()))
    await this.#redis?.close()
  }
}
