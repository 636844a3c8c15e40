// The fastify instance both services build on: our logger, no per-request
// info logs (probes and scrapes would drown everything else).

import Fastify, { LogController } from 'fastify'

/**
 * @param {import('pino').Logger} logger
 * @param {import('fastify').FastifyServerOptions['serverFactory']} [serverFactory]
 */
export function createHttpApp (logger, serverFactory) {
  return Fastify({
    loggerInstance: logger.child({ component: 'http' }),
    logController: new LogController({ disableRequestLogging: true }),
    ...(serverFactory ? { serverFactory } : {})
  })
}

/**
 * What `/metrics` serves: a prom-client Registry, or anything else that
 * answers with an exposition (a gateway worker's view of every worker).
 *
 * @typedef {Pick<import('prom-client').Registry, 'contentType' | 'metrics'>} MetricsSource
 */

/**
 * Adds `/healthz`, `/readyz` and, when a registry is given, `/metrics`.
 *
 * @param {import('fastify').FastifyInstance<any, any, any, any>} app
 * @param {() => Record<string, boolean> | Promise<Record<string, boolean>>} checks readiness checks; ready when all are true
 * @param {MetricsSource | null} registry
 */
export function registerProbes (app, checks, registry) {
  // Liveness says only that the event loop serves requests: a Redis outage
  // must not get every pod restarted.
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.get('/readyz', async (_req, reply) => {
    const c = await checks()
    const ready = Object.values(c).every(Boolean)
    reply.code(ready ? 200 : 503)
    return { status: ready ? 'ready' : 'not ready', checks: c }
  })
  if (registry) registerMetrics(app, registry)
}

/**
 * @param {import('fastify').FastifyInstance<any, any, any, any>} app
 * @param {MetricsSource} registry
 */
export function registerMetrics (app, registry) {
  app.get('/metrics', async (_req, reply) => {
    reply.type(registry.contentType)
    return registry.metrics()
  })
}
