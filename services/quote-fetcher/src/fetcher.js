// Wires one quote-fetcher process: Redis connections, publisher, the HTTP
// server (health, metrics, publish API), and the quote source: scheduler and
// worker around a polled provider (`sim`, `http`), the stream feed
// (`ws-stream`), or nothing (`push`: the publish API only).

import { removeStatus, reportStatus, writeStatus } from '@wsps/shared/fleet-status'
import { startTracing } from '@wsps/shared/tracing'
import { createHttpApp, registerProbes } from '@wsps/shared/http-app'
import { closeRedis, connectRedis, watchPrimary } from '@wsps/shared/redis'
import { watchLiveness } from '@wsps/shared/redis-liveness'
import { RedisClock } from './redis-clock.js'
import { redisKeys } from '@wsps/shared/keys'
import { registerScripts } from '@wsps/shared/scripts'
import { IdempotencyRecords } from './idempotency.js'
import { fetcherStatus } from './fetcher-status.js'
import { createFetcherMetrics } from './metrics.js'
import { createHttpProvider } from './providers/http.js'
import { createSimProvider } from './providers/sim.js'
import { SimBooks } from './sim-books.js'
import { WsStreamFeed } from './providers/ws-stream.js'
import { registerPublishApi } from './publish-api.js'
import { IngestTraces } from './ingest-traces.js'
import { Publisher } from './publisher.js'
import { Scheduler } from './scheduler.js'
import { Worker } from './worker.js'

/**
 * @param {import('./config.js').FetcherConfig & {provider: 'sim' | 'http'}} config
 * @param {import('pino').Logger} logger
 * @param {import('./metrics.js').FetcherMetrics} metrics
 * @param {() => number} now Redis' clock (RedisClock.now): the quotes' ts
 * @returns {import('./providers/provider.js').Provider}
 */
function createProvider (config, logger, metrics, now) {
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
        metrics: { requests: metrics.upstreamRequests, breaker: metrics.breaker },
        now
      })
    case 'sim':
      return createSimProvider({ seed: config.simSeed, volatility: config.simVolatility, now })
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
    onError: (/** @type {Error} */ err) => log.warn({ conn, err: err.message, code: /** @type {{code?: string}} */ (err).code }, 'redis connection error')
  })
  const redis = registerScripts(connectRedis(config, watch('cmd')))
  // Every time written into Redis or onto a quote is on Redis' clock.
  const clock = new RedisClock(redis)
  /** @type {Map<string, import('@wsps/shared/redis').RedisClient>} */
  const conns = new Map([['cmd', redis]])
  // WAIT blocks the connection it is sent on until the replicas answer: a
  // waiting publisher gets a connection of its own, so scheduling and the
  // job queue do not queue behind it.
  const pub = config.waitReplicas > 0 ? registerScripts(connectRedis(config, watch('pub'))) : redis
  if (pub !== redis) conns.set('pub', pub)
  const pubLog = logger.child({ component: 'publisher' })
  const tracing = await startTracing({ url: config.otlpTracesUrl, service: 'wsps-quote-fetcher', node: config.nodeName, logger })
  const publisher = new Publisher({
    traces: tracing && new IngestTraces({ tracer: tracing.tracer, sample: config.traceSample, node: config.nodeName }),
    clock, deadlineMs: config.publishDeadlineMs,
    redis: pub, keys, ttlMs: config.quoteTtlMs, sharded: config.redisMode === 'cluster', historySize: config.historySize, historyTtlMs: config.historyTtlMs,
    waitReplicas: config.waitReplicas, waitTimeoutMs: config.waitTimeoutMs, onWait: (result) => metrics.replicaWaits.inc({ result }),
    onRefused: (refused, symbols) => {
      for (const [reason, n] of Object.entries(refused)) if (n) metrics.refused.inc({ reason }, n)
      // Pushed refusals are push winning over polling, as designed; the
      // others mean this replica was held up (paused, or its Redis link
      // silent) while its claims passed on, or its source sent old quotes.
      if (refused.fenced || refused.old) {
        pubLog.warn({ fenced: refused.fenced, old: refused.old, symbols }, 'quotes refused: a newer claim or a newer quote of their symbols was published')
      }
    }
  })
  /** Where books are written: the sim's, a venue stream's and the publish API's. @type {import('@wsps/shared/books').BookStore} */
  const bookStore = { redis, keys, ttlMs: config.bookTtlMs, sharded: config.redisMode === 'cluster' }
  /** @type {{start(): void, stop(): Promise<void>}[]} */
  const sources = []
  if (config.provider === 'sim' || config.provider === 'http') {
    // BLPOP holds its connection: the worker gets one of its own.
    const blocking = /** @type {import('ioredis').Redis} */ (connectRedis(config, { ...watch('pop'), blocking: true }))
    conns.set('pop', blocking)
    const provider = createProvider({ ...config, provider: config.provider }, logger, metrics, clock.now)
    const scheduler = new Scheduler({
      redis, keys, intervalMs: config.fetchIntervalMs, tickMs: config.scheduleTickMs, batchSize: config.jobBatchSize, metrics, logger, now: clock.now
    })
    const books = config.provider === 'sim' ? new SimBooks({ store: bookStore, seed: config.simSeed, metrics, now: clock.now }) : null
    const worker = new Worker({
      blocking, redis, keys, provider, publisher, intervalMs: config.fetchIntervalMs, concurrency: config.concurrency, metrics, logger, now: clock.now, books
    })
    sources.push(
      { start: () => scheduler.start(), stop: async () => scheduler.stop() },
      {
        start: () => worker.start(),
        async stop () {
          // Jobs in hand finish and publish; the queue keeps the rest for
          // the other replicas.
          blocking.disconnect()
          await worker.stop()
          await provider.close?.()
        }
      })
  } else if (config.provider === 'ws-stream') {
    sources.push(new WsStreamFeed({ config, redis, keys, publisher, metrics, logger, now: clock.now, bookStore }))
  }
  /** @type {import('@wsps/shared/redis-liveness').Liveness[]} */
  const liveness = []
  for (const [conn, c] of conns) {
    c.on('ready', () => metrics.redisUp.set({ conn }, 1))
    c.on('close', () => metrics.redisUp.set({ conn }, 0))
    // A silent link is torn down, so what it held (a publish, a claim)
    // fails or goes out again on a new connection, where the publish
    // script's fence refuses what lost its claim meanwhile.
    liveness.push(watchLiveness(c, config, {
      onSilent: ({ node, silentMs }) => {
        log.warn({ conn, node, silentMs }, 'redis link silent: torn down to reconnect')
        metrics.redisSilent.inc({ conn })
      },
      onAlive: (node) => log.info({ conn, node }, 'redis link answers again')
    }))
    watchPrimary(c, {
      onFailover: () => {
        log.warn({ conn }, 'redis primary changed (failover)')
        metrics.redisFailovers.inc({ conn })
      },
      onOutage: (seconds) => metrics.redisOutage.observe({ conn }, seconds)
    })
  }

  let stopping = false
  const app = createHttpApp(logger)
  const readiness = () => ({ redis: [...conns.values()].every((c) => c.status === 'ready') && liveness.every((l) => l.alive()), notStopping: !stopping })
  registerProbes(app, readiness, metrics.registry)
  const status = reportStatus({
    intervalMs: config.statusIntervalMs,
    snapshot: fetcherStatus({ node: config.nodeName, provider: config.provider, metrics, readiness }),
    write: (record, intervalMs) => writeStatus(redis, keys, record, intervalMs),
    remove: (record) => removeStatus(redis, keys, record)
  })
  registerPublishApi(app, {
    token: config.publishToken,
    maxBytes: config.publishMaxBytes,
    rate: config.publishRate,
    pushLeaseMs: config.pushLeaseMs,
    publisher,
    idempotency: new IdempotencyRecords({ redis, keys, ttlMs: config.publishIdempotencyTtlMs }),
    metrics,
    now: clock.now,
    books: bookStore
  })

  return {
    app,
    metrics,
    async listen () {
      const address = await app.listen({ host: config.host, port: config.port })
      // Nothing is scheduled, stamped or leased on a host clock that may be
      // off: the sources start once Redis' clock is known (or Redis is away).
      if (!await clock.start()) logger.warn('Redis did not answer TIME: starting on this host\'s clock until it does')
      for (const s of sources) s.start()
      return address
    },
    async stop () {
      stopping = true
      const stopped = Promise.all(sources.map((s) => s.stop()))
      // Jobs in hand finish by publishing; with Redis gone they would wait
      // for it for ever, so its connections are closed now (the jobs fail).
      const all = [...conns.values()]
      if (!all.every((c) => c.status === 'ready')) await Promise.all(all.map((c) => closeRedis(c)))
      await stopped
      await status.stop()
      await app.close()
      publisher.stop()
      clock.stop()
      for (const l of liveness) l.stop()
      await Promise.all(all.map((c) => closeRedis(c)))
      await tracing?.close()
    }
  }
}
