// The stack of one test file (or chaos scenario): its own Redis and the
// gateways, fetchers, Redis connections and test clients started on it,
// all ended by one close() in the file's `after` hook.

import { after, before } from 'node:test'
import { Redis } from 'ioredis'
import { startFetcher, startGateway, startService } from './services.js'
import { startRedis, startRedisCluster, startRedisSentinel } from './redis.js'
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

/**
 * What a file's `after` hook ends: the clients it `track`s (closed first),
 * then what it `defer`s, last first.
 */
function fileTeardown () {
  /** @type {{close: () => void}[]} */
  const clients = []
  /** @type {(() => Promise<unknown>)[]} */
  const cleanups = []
  after(async () => {
    for (const c of clients) c.close()
    for (const fn of cleanups.reverse()) await fn()
  })
  return {
    /** @param {() => Promise<unknown>} fn */
    defer: (fn) => { cleanups.push(fn) },
    /**
     * @template {{close: () => void}} C
     * @param {C} client closed after the file's tests
     * @returns {C}
     */
    track: (client) => {
      clients.push(client)
      return client
    }
  }
}

/**
 * A Redis Cluster of 3 primaries with a replica each, two gateways (the
 * first with ioredis auto-pipelining, whose raw MOVED handling a failover
 * exercises, ioredis #2075; the second without) and a fetcher, all in
 * cluster mode, started before the tests of the file that calls this at
 * its top and stopped after them with whatever clients it `track`s.
 *
 * @param {object} options
 * @param {number} options.nodeTimeoutMs cluster-node-timeout
 * @param {boolean} [options.fullCoverage] cluster-require-full-coverage
 * @param {Record<string, string | number>} [options.gatewayEnv] the second gateway's extra settings
 * @param {Record<string, string | number>} [options.fetcherEnv] the fetcher's extra settings
 */
export function useClusterStack ({ nodeTimeoutMs, fullCoverage = true, gatewayEnv = {}, fetcherEnv = {} }) {
  const env = { WSPS_REDIS_MODE: 'cluster' }
  const { defer, track } = fileTeardown()
  const on = setUp(async () => {
    const cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs, fullCoverage })
    defer(() => cluster.close())
    const procs = await Promise.all([
      startGateway(cluster.url, { ...env, WSPS_REDIS_AUTO_PIPELINE: 'true' }),
      startGateway(cluster.url, { ...env, ...gatewayEnv }),
      startFetcher(cluster.url, { ...env, WSPS_FETCH_INTERVAL_MS: 100, ...fetcherEnv })
    ])
    defer(() => Promise.all(procs.map((p) => p.kill())))
    return { cluster, gws: procs.slice(0, 2), fetcher: procs[2] }
  })
  return { on, track }
}

/**
 * A Redis primary with 2 replicas and 3 Sentinels (down-after 1 s,
 * failover timeout 3 s), a fetcher publishing every 50 ms and `gateways`
 * gateways, all in sentinel mode, started before the tests of the file that
 * calls this at its top and stopped after them with whatever clients it
 * `track`s. Of WSPS_REDIS_URL only the scheme counts in sentinel mode: its
 * host does not resolve, which proves the services never dial it.
 *
 * @param {object} options
 * @param {number} options.gateways
 * @param {Record<string, string | number>} [options.fetcherEnv] the fetcher's extra settings
 */
export function useSentinelStack ({ gateways, fetcherEnv = {} }) {
  const { defer, track } = fileTeardown()
  const on = setUp(async () => {
    const redis = await startRedisSentinel({ replicas: 2, sentinels: 3, downAfterMs: 1000, failoverTimeoutMs: 3000 })
    defer(() => redis.close())
    const url = 'redis://sentinel-mode.invalid:6379'
    const env = redis.serviceEnv()
    /** @type {ServiceHandle[]} */
    const services = []
    defer(() => Promise.all(services.map((s) => s.kill())))
    services.push(await startFetcher(url, { ...env, WSPS_FETCH_INTERVAL_MS: 50, ...fetcherEnv }))
    for (let i = 0; i < gateways; i++) services.push(await startGateway(url, env))
    return { redis, services, fetcher: services[0], gws: services.slice(1) }
  })
  return { on, track }
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
