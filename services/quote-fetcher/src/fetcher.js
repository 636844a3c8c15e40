// Wires one quote-fetcher process: Redis connections, scheduler (push),
// worker (pull), provider, publisher, and the HTTP health/metrics server.

import { createHttpApp, registerProbes } from '@wsps/shared/http-app'
import { connectRedis } from '@wsps/shared/redis'
import { redisKeys } from '@wsps/shared/keys'
import { registerScripts } from '@wsps/shared/scripts'
import { createFetcherMetrics } from './metrics.js'
import { createHttpProvider } from './providers/http.js'
import { createSimProvider } from './providers/sim.js'
import { Publisher } from './publisher.js'
import { Scheduler } from './scheduler.js'
import { Worker } from './worker.js'

/**
 * @param {import('./config.js').FetcherConfig} config
 * @param {import('pino').Logger} logger
 * @param {import('./metrics.js').FetcherMetrics} metrics
 * @returns {import('./providers/provider.js').Provider}
 */
function createProvider (config, logger, metrics) {
  switch (config.provider) {
    case 'http':
      return createHttpProvider({
        url: config.upstreamUrl,
        timeoutMs: config.upstreamTimeoutMs,
        retries: config.upstreamRetries,
        backoffMs: config.upstreamBackoffMs,
        breakerThreshold: config.breakerThreshold,
        breakerCooldownMs: config.breakerCooldownMs,
        maxInflight: config.upstreamMaxInflight,
        token: config.upstreamToken,
        logger,
        metrics: { requests: metrics.upstreamRequests, breaker: metrics.breaker }
      })
    case 'sim':
      return createSimProvider({ seed: config.simSeed, volatility: config.simVolatility })
  }
}

/**
 * @param {import('./config.js').FetcherConfig} config
 * @param {import('pino').Logger} logger
 */
export async function createFetcher (config, logger) {
  const metrics = createFetcherMetrics(config.nodeName)
  const keys = redisKeys(config.redisKeyPrefix)
  const log = logger.child({ component: 'redis' })
  /** @param {string} conn */
  const watch = (conn) => ({
    name: `wsps-fetcher-${conn}-${config.nodeName}`,
    onError: (/** @type {Error} */ err) => log.warn({ conn, err: err.message }, 'redis connection error')
  })
  const redis = registerScripts(connectRedis(config, watch('cmd')))
  const blocking = /** @type {import('ioredis').Redis} */ (connectRedis(config, watch('pop')))
  for (const [conn, c] of /** @type {const} */ ([['cmd', redis], ['pop', blocking]])) {
    c.on('ready', () => metrics.redisUp.set({ conn }, 1))
    c.on('close', () => metrics.redisUp.set({ conn }, 0))
  }

  const provider = createProvider(config, logger, metrics)
  const publisher = new Publisher({ redis, keys, ttlMs: config.quoteTtlMs, sharded: config.redisMode === 'cluster' })
  const scheduler = new Scheduler({
    redis, keys, intervalMs: config.fetchIntervalMs, tickMs: config.scheduleTickMs, batchSize: config.jobBatchSize, metrics, logger
  })
  const worker = new Worker({
    blocking, redis, keys, provider, publisher, intervalMs: config.fetchIntervalMs, concurrency: config.concurrency, metrics, logger
  })

  let stopping = false
  const app = createHttpApp(logger)
  registerProbes(app, () => ({ redis: redis.status === 'ready' && blocking.status === 'ready', notStopping: !stopping }), metrics.registry)

  return {
    app,
    metrics,
    async listen () {
      const address = await app.listen({ host: config.host, port: config.port })
      scheduler.start()
      worker.start()
      return address
    },
    async stop () {
      stopping = true
      scheduler.stop()
      // Jobs in hand finish and publish; the queue keeps the rest for the
      // other replicas.
      blocking.disconnect()
      await worker.stop()
      await provider.close?.()
      await app.close()
      await redis.quit().catch(() => {})
    }
  }
}
