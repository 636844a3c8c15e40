// Wires one gateway process: HTTP (fastify) and WebSocket (ws) on one
// server, the Redis broker, the hub, fan-out and graceful shutdown. Each
// part is built after what it uses: the hub (and all the broker's handlers
// call) before the broker starts.

import cluster from 'node:cluster'
import { createServer } from 'node:http'
import client from 'prom-client'
import { Disconnect } from '@wsps/protocol'
import { reportStatus } from '@wsps/shared/fleet-status'
import { createHttpApp, registerMetrics } from '@wsps/shared/http-app'
import { AdminActions } from './admin-actions.js'
import { registerAdminRoutes } from './admin-routes.js'
import { Admission } from './admission.js'
import { BarHub } from './bars/bar-hub.js'
import { BookHub } from './books/book-hub.js'
import { createAuthenticator } from './auth.js'
import { createRedisBroker } from './broker-redis.js'
import { Recovery } from './recovery.js'
import { Fanout } from './fanout.js'
import { Connections } from './connections.js'
import { createDelayedTimeline } from './delayed/delayed-timeline.js'
import { gatewayStatus } from './gateway-status.js'
import { registerHttpRoutes } from './http-routes.js'
import { Hub } from './hub.js'
import { Isolation } from './isolation.js'
import { RateLimit } from '@wsps/shared/rate-limit'
import { createGatewayMetrics } from './metrics.js'
import { Sessions } from './session.js'
import { SessionCap } from './session-cap.js'
import { SseServer } from './sse-server.js'
import { UsageRecorder } from './usage.js'
import { venueTable } from './venues.js'
import { WsServer } from './ws-server.js'
import { workerCount, workerId, workerPeer } from './workers.js'
import { Timelines } from './timelines.js'
import { QuoteTracer } from './quote-trace.js'
import { startTracing } from '@wsps/shared/tracing'

/** An isolated gateway's clients are closed over this window, so they do not reconnect at one instant. */
const ISOLATED_DRAIN_MS = 1000
/** Upgrade and request headers must arrive within this (slowloris). */
const HEADERS_TIMEOUT_MS = 10_000
/** Larger header sections are refused with 431 by Node's parser. */
const MAX_HEADER_BYTES = 8192

/**
 * @param {import('./config.js').GatewayConfig} config
 * @param {import('pino').Logger} logger
 * @param {object} [options]
 * @param {() => void} [options.onDrain] an operator asked this process to drain
 *   (the admin API): by default it signals itself SIGTERM, so it stops as
 *   any drained pod does and its orchestrator (or worker supervisor) starts another
 */
export async function createGateway (config, logger, { onDrain = () => process.kill(process.pid, 'SIGTERM') } = {}) {
  // A worker of several (WSPS_WORKERS) labels its series with its number.
  const metrics = createGatewayMetrics(config.nodeName, cluster.isWorker ? { worker: String(workerId()) } : {})
  let draining = false

  const broker = createRedisBroker(config, logger)
  const fanout = new Fanout({ batchMs: config.batchMs, metrics })
  const tracing = await startTracing({ url: config.otlpTracesUrl, service: 'wsps-gateway', node: config.nodeName, logger })
  const hub = new Hub({
    broker, fanout, metrics, logger, unsubscribeDelayMs: config.unsubscribeDelayMs, demandLeaseMs: config.demandLeaseMs, recoveryMax: config.recoveryMax, restoreDeadlineMs: config.restoreDeadlineMs, staleGraceMs: config.staleGraceMs,
    tracer: tracing && new QuoteTracer(tracing.tracer, config.nodeName)
  })
  const recovery = new Recovery({ hub, broker, max: config.recoveryMax, logger })
  const delayed = createDelayedTimeline({ config, broker, fanout, metrics, logger })
  const bars = new BarHub({
    hub,
    reader: broker,
    broker,
    batchMs: config.batchMs,
    gauges: { series: metrics.barSeries.labels({ timeline: 'realtime' }), subscriptions: metrics.barSubscriptions.labels({ timeline: 'realtime' }) },
    logger
  })
  const books = new BookHub({ source: broker.books, demandLeaseMs: config.demandLeaseMs, staleGraceMs: config.staleGraceMs, batchMs: config.batchMs, metrics: { held: metrics.books, reads: metrics.bookReads, unsynced: metrics.booksUnsynced, rewound: metrics.booksRewound }, logger })
  broker.start({
    onQuote: (symbol, raw, traceparent) => hub.onQuote(symbol, raw, traceparent),
    onReconnect: (symbols) => hub.resync(symbols),
    onBook: (symbol, raw) => books.onMessage(symbol, raw),
    onBooksLost: (symbols) => books.resync(symbols),
    onStatus: (up, conn) => metrics.redisUp.set({ conn }, up ? 1 : 0),
    onFailover: (conn) => metrics.redisFailovers.inc({ conn }),
    onOutage: (seconds, conn) => metrics.redisOutage.observe({ conn }, seconds),
    onSilent: (conn) => metrics.redisSilent.inc({ conn }),
    onInterrupted: (symbols, since, now) => {
      hub.interrupted(symbols, since, now)
      books.interrupted(symbols, now)
    }
  })

  const venueOf = venueTable(config.venues)
  const authenticate = createAuthenticator(config, venueOf)
  // Each worker of several is a process of its own in the fleet.
  const node = cluster.isWorker ? `${config.nodeName}/${workerId()}` : config.nodeName
  const cap = config.maxSessionsPerUser === 0
    ? null
    : new SessionCap({
      slots: broker.sessionSlots({ leaseMs: config.sessionLeaseMs, max: config.maxSessionsPerUser, policy: config.sessionCapPolicy }),
      channel: broker.admin,
      node,
      leaseMs: config.sessionLeaseMs,
      metrics,
      logger
    })
  const usage = config.usageRecords ? new UsageRecorder({ records: broker.usage, venueOf, node, leaseMs: config.sessionLeaseMs, logger }) : null
  const timelines = new Timelines({
    realtime: { hub, recovery, bars },
    delayed: { hub: delayed.hub, recovery: delayed.recovery, bars: delayed.bars },
    delayMs: delayed.delayMs
  })
  const sessions = new Sessions({
    timelines,
    books,
    metrics,
    maxSubscriptions: config.maxSubscriptions,
    draining: () => draining,
    authenticate,
    cap,
    usage,
    hello: {
      node: config.nodeName,
      heartbeatMs: config.heartbeatMs,
      limits: {
        maxSubscriptions: config.maxSubscriptions,
        maxPayload: config.maxPayload,
        ratePerSec: config.ratePerSec,
        rateBurst: config.rateBurst,
        batchMs: config.batchMs
      }
    },
    logger
  })
  /** @type {import('./connection.js').ConnectionContext} */
  const ctx = {
    metrics,
    sendMax: config.sendMax,
    messageRate: new RateLimit(config.ratePerSec, config.rateBurst),
    outbox: {
      metrics,
      sendHighWater: config.sendHighWater,
      slowCloseMs: config.slowCloseMs,
      latest: (symbol, delivery, isDelayed) => timelines.of(isDelayed).hub.latest(symbol, delivery),
      bookSnapshot: (symbol, depth, delivery) => books.snapshotOf(symbol, depth, delivery)
    },
    retry: (c) => fanout.retry(c)
  }
  const admission = new Admission({
    maxConnections: config.maxConnections,
    maxConnectionsPerIp: config.maxConnectionsPerIp,
    allowedOrigins: config.allowedOrigins,
    trustProxy: config.trustProxy,
    authenticate,
    connected: () => connections.size
  })
  const connections = new Connections({ ctx, admission, sessions, metrics, heartbeatMs: config.heartbeatMs, logger })
  const isolation = new Isolation({
    broker,
    peerUrl: config.peerUrl,
    closeAfterMs: config.isolationCloseMs,
    logger,
    onIsolated: (isolated) => {
      admission.isolate(isolated)
      if (!isolated) return
      metrics.isolations.inc()
      connections.drain(ISOLATED_DRAIN_MS, Disconnect.ISOLATED)
    }
  })
  const ws = new WsServer({ admission, connections, sessions, metrics, maxPayload: config.maxPayload, compression: config.compression, compressionMaxConnections: config.compressionMaxConnections, authTimeoutMs: config.authTimeoutMs, logger })
  const sse = new SseServer({ admission, connections, sessions, metrics, maxSubscriptions: config.maxSubscriptions })

  const app = createHttpApp(logger, (handler) => {
    // Node checks the headers/request timeouts only every
    // connectionsCheckingInterval (30 s by default): check every second.
    const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, connectionsCheckingInterval: 1000 }, handler)
    server.headersTimeout = HEADERS_TIMEOUT_MS
    server.requestTimeout = 30_000
    return server
  })

  // Ready while Redis answers, whether or not every channel is restored
  // yet: after a Redis reconnect or a shard failing over every gateway
  // restores its channels at the same time (gap fill keeps the ticks), and
  // taking them all out of the Service would only refuse new clients.
  const readiness = () => ({ redis: broker.ready(), notDraining: !draining })
  // Probes and scrapes of one worker speak for all of them.
  const peer = cluster.isWorker ? workerPeer({ ready: () => Object.values(readiness()).every(Boolean), metrics: () => metrics.registry.getMetricsAsJSON() }) : null
  const podReadiness = peer === null ? readiness : podReadinessOf(peer, readiness, workerCount(config.workers))
  const registry = peer === null ? metrics.registry : podRegistryOf(peer, metrics.registry)
  const separateMetrics = config.metricsPort !== 0
  await registerHttpRoutes(app, { broker: () => ({ alive: broker.ready(), aliveForMs: broker.aliveForMs() }), readiness: podReadiness, registry: separateMetrics ? null : registry, staticDir: config.staticDir, pageTokenUrl: config.pageTokenUrl })
  const metricsApp = separateMetrics ? createHttpApp(logger) : null
  if (metricsApp) registerMetrics(metricsApp, registry)
  registerAdminRoutes(metricsApp ?? app, { token: config.adminToken, fleet: () => broker.readFleet(), channel: broker.admin, usage: broker.usage, usageLeaseMs: config.sessionLeaseMs })
  const admin = new AdminActions({ channel: broker.admin, node, connections, cap, onDrain, logger })
  sse.register(app)
  ws.attach(app.server)
  connections.start()
  hub.start()
  isolation.start()
  delayed.start()
  admin.start()
  cap?.start()
  usage?.start()
  const status = reportStatus({
    intervalMs: config.statusIntervalMs,
    snapshot: gatewayStatus({ node, metrics, hub, connections: () => connections.size, readiness }),
    write: (record, intervalMs) => broker.writeStatus(record, intervalMs),
    remove: (record) => broker.removeStatus(record)
  })

  let stopping = null
  return {
    app,
    hub,
    metrics,
    readiness,
    /** @returns {Promise<string>} the address it listens on */
    async listen () {
      if (metricsApp) await metricsApp.listen({ host: config.host, port: config.metricsPort })
      return app.listen({ host: config.host, port: config.port })
    },
    /**
     * Graceful stop: readiness false, wait for load balancers, close clients
     * with 1012 over the drain window, then release everything.
     *
     * @param {{drainMs?: number, shutdownDelayMs?: number}} [options]
     */
    stop ({ drainMs = config.drainMs, shutdownDelayMs = config.shutdownDelayMs } = {}) {
      stopping ??= (async () => {
        draining = true
        admin.stop()
        // New upgrades get 503 at once (an ingress retries another pod);
        // the sockets already open wait for the drain window.
        admission.drain()
        logger.info({ shutdownDelayMs, drainMs }, 'shutting down: readiness is false')
        if (shutdownDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, shutdownDelayMs))
        await connections.drain(drainMs)
        connections.close()
        cap?.stop()
        usage?.stop()
        ws.close()
        bars.stop()
        isolation.stop()
        hub.stop()
        books.close()
        await delayed.stop()
        await status.stop()
        fanout.stop()
        await app.close()
        await metricsApp?.close()
        await broker.close()
        await tracing?.close()
        logger.info('stopped')
      })()
      return stopping
    }
  }
}

/**
 * Readiness of the whole pod, asked of every worker: ready only when all of
 * them answer that they are.
 *
 * @param {import('./workers.js').WorkerPeer} peer
 * @param {() => Record<string, boolean>} local this worker's checks
 * @param {number} count workers there should be
 */
function podReadinessOf (peer, local, count) {
  return async () => {
    const all = await peer.ask('ready')
    return { ...local(), everyWorker: all.length === count && all.every(Boolean) }
  }
}

/**
 * `/metrics` of the whole pod: every worker's series, each labelled with its
 * `worker`, in one exposition.
 *
 * @param {import('./workers.js').WorkerPeer} peer
 * @param {import('prom-client').Registry} own
 * @returns {import('@wsps/shared/http-app').MetricsSource}
 */
function podRegistryOf (peer, own) {
  return {
    contentType: own.contentType,
    metrics: async () => {
      const all = /** @type {import('prom-client').MetricObjectWithValues<import('prom-client').MetricValue<string>>[][]} */ (await peer.ask('metrics'))
      return client.AggregatorRegistry.aggregate(all).metrics()
    }
  }
}
