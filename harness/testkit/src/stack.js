// The stack of one test file (or chaos scenario): its own Redis and the
// gateways, fetchers, Redis connections and test clients started on it,
// all ended by one close() in the file's `after` hook.

import { after, before } from 'node:test'
import { Redis } from 'ioredis'
import { startFetcher, startGateway, startService } from './services.js'
import { startRedis } from './redis.js'
import { ClientPool } from './test-client.js'

/** @typedef {import('./services.js').ServiceHandle} ServiceHandle */

/**
 * The Stack of the test file that calls this at its top, closed in an
 * `after` hook. It starts its Redis when first asked for something.
 *
 * @param {import('./redis.js').RedisOptions} [options]
 */
export function useStack (options) {
  const stack = new Stack(options)
  after(() => stack.close())
  return stack
}

/**
 * What the `before` hook of the test file that calls this at its top starts,
 * as one object typed by what `setup` returns: its fields are there once the
 * hook has run, so the file declares no `let` per service.
 *
 * @template {object} T
 * @param {() => Promise<T>} setup
 * @returns {T}
 */
export function setUp (setup) {
  /** @type {Partial<T>} */
  const started = {}
  before(async () => { Object.assign(started, await setup()) })
  return /** @type {T} */ (started)
}

export class Stack {
  #options
  /** @type {import('./redis.js').RedisHandle | null} */
  #redis = null
  /** @type {Promise<this> | null} */
  #starting = null
  /** @type {ServiceHandle[]} */
  #services = []
  /** @type {Redis[]} */
  #connections = []
  #clients = new ClientPool()

  /** @param {import('./redis.js').RedisOptions} [options] its Redis */
  constructor (options) {
    this.#options = options
  }

  /** Starts its Redis (once; everything below calls it). */
  start () {
    this.#starting ??= startRedis(this.#options).then((r) => {
      this.#redis = r
      return this
    })
    return this.#starting
  }

  /** Its Redis (once started). */
  get redis () {
    if (!this.#redis) throw new Error('Stack: start() first')
    return this.#redis
  }

  /** @param {Record<string, string | number>} [env] */
  async gateway (env) {
    await this.start()
    return this.#own(await startGateway(this.redis.url, env))
  }

  /** @param {Record<string, string | number>} [env] */
  async fetcher (env) {
    await this.start()
    return this.#own(await startFetcher(this.redis.url, env))
  }

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
  async redisClient () {
    await this.start()
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
    await this.#starting?.catch(() => {})
    this.#clients.terminate()
    for (const r of this.#connections) r.disconnect()
    await Promise.all(this.#services.map((s) => s.kill()))
    await this.#redis?.close()
  }
}
