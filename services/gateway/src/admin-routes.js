// The admin API, beside /metrics and like it never routed by an ingress
// (WSPS_METRICS_PORT): the fleet as every process last wrote itself into
// Redis (@wsps/shared/fleet-status), for `wsps top` and the admin view at
// /admin/ (services/gateway/admin).
// Off without WSPS_ADMIN_TOKEN. Errors are `{code, message}` with these codes.

import { readFileSync } from 'node:fs'
import { bearerCheck } from '@wsps/shared/bearer'

/** The admin view (a page and its script, no build step), read once. */
const PAGE = Object.freeze({
  'index.html': { type: 'text/html; charset=utf-8', body: readFileSync(new URL('../admin/index.html', import.meta.url)) },
  'admin.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('../admin/admin.js', import.meta.url)) }
})

/** Every error the admin API answers, with its HTTP status. */
export const AdminError = Object.freeze({
  /** WSPS_ADMIN_TOKEN is not set on this gateway. */
  ADMIN_DISABLED: 404,
  /** No `Authorization: Bearer` header, or the wrong token. */
  UNAUTHORIZED: 401,
  /** Redis did not answer the read. */
  UNAVAILABLE: 503
})

/**
 * @param {import('fastify').FastifyInstance<any, any, any, any>} app
 * @param {object} options
 * @param {string} options.token WSPS_ADMIN_TOKEN ('' : off)
 * @param {() => Promise<import('@wsps/shared/fleet-status').FleetEntry[]>} options.fleet
 */
export function registerAdminRoutes (app, { token, fleet }) {
  const authorized = token ? bearerCheck(token) : null
  /**
   * @param {import('fastify').FastifyReply} reply
   * @param {keyof typeof AdminError} code
   * @param {string} message
   */
  const refuse = (reply, code, message) => reply.code(AdminError[code]).header('Cache-Control', 'no-store').send({ code, message })
  app.get('/admin/fleet', async (req, reply) => {
    if (!authorized) return refuse(reply, 'ADMIN_DISABLED', 'the admin API is off (WSPS_ADMIN_TOKEN is not set)')
    if (!authorized(req.headers.authorization)) return refuse(reply, 'UNAUTHORIZED', 'missing or wrong bearer token')
    let processes
    try {
      processes = await fleet()
    } catch (err) {
      return refuse(reply, 'UNAVAILABLE', `Redis did not answer: ${/** @type {Error} */ (err).message}`)
    }
    return reply.header('Cache-Control', 'no-store').send({ at: Date.now(), processes })
  })
  // The page needs no token to load (it holds no data); it asks for one.
  for (const [path, name] of /** @type {const} */ ([['/admin/', 'index.html'], ['/admin/admin.js', 'admin.js']])) {
    app.get(path, async (_req, reply) => {
      if (!authorized) return refuse(reply, 'ADMIN_DISABLED', 'the admin API is off (WSPS_ADMIN_TOKEN is not set)')
      return reply.type(PAGE[name].type).header('X-Content-Type-Options', 'nosniff').header('Cache-Control', 'no-cache').send(PAGE[name].body)
    })
  }
  app.get('/admin', async (_req, reply) => reply.redirect('/admin/'))
}
