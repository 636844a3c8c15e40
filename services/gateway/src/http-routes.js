// HTTP endpoints beside the WebSocket: health, readiness, metrics and the
// browser client.

import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import { registerProbes } from '@wsps/shared/http-app'

export const BUNDLED_STATIC_DIR = fileURLToPath(new URL('../public/', import.meta.url))

/**
 * @param {import('fastify').FastifyInstance<any, any, any, any>} app
 * @param {object} options
 * @param {() => Record<string, boolean> | Promise<Record<string, boolean>>} options.readiness checks; ready when all pass
 * @param {import('@wsps/shared/http-app').MetricsSource | null} options.registry null: /metrics is served elsewhere
 * @param {string} options.staticDir '' bundled client, '-' none
 */
export async function registerHttpRoutes (app, { readiness, registry, staticDir }) {
  registerProbes(app, readiness, registry)

  if (staticDir !== '-') {
    await app.register(fastifyStatic, {
      root: staticDir || BUNDLED_STATIC_DIR,
      // The client is small and changes with each release; let browsers
      // revalidate instead of pinning an old protocol module.
      cacheControl: true,
      maxAge: 0,
      setHeaders: (res) => {
        res.setHeader('X-Content-Type-Options', 'nosniff')
      }
    })
  }
}
