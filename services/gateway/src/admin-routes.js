// The admin API, beside /metrics and like it never routed by an ingress
// (WSPS_METRICS_PORT): the fleet as every process last wrote itself into
// Redis (@wsps/shared/fleet-status), for `wsps top` and the admin view at
// /admin/ (services/gateway/admin); and an operator's actions on any
// gateway's connections (@wsps/shared/admin-commands, admin-actions.js),
// answered once every live gateway concerned has answered.
// Off without WSPS_ADMIN_TOKEN. Errors are `{code, message}` with these codes.

import { readFileSync } from 'node:fs'
import { bearerCheck } from '@wsps/shared/bearer'
import { MONTH_PATTERN, aggregate } from '@wsps/shared/usage-records'
import { POLL_MS } from './admin-actions.js'

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
  /** Redis did not answer. */
  UNAVAILABLE: 503,
  /** An action's body is not what it takes (a target, of the right types). */
  BAD_REQUEST: 400,
  /** The node named is not in the fleet view (or its record expired). */
  NO_SUCH_NODE: 404
})

/** An action waits this long at most for the gateways' answers (they read commands every POLL_MS). */
const ANSWER_WAIT_MS = 4 * POLL_MS + 1000
/** How often the answers are looked at while waiting. */
const ANSWER_POLL_MS = 100

/**
 * @param {import('fastify').FastifyInstance<any, any, any, any>} app
 * @param {object} options
 * @param {string} options.token WSPS_ADMIN_TOKEN ('' : off)
 * @param {() => Promise<import('@wsps/shared/fleet-status').FleetEntry[]>} options.fleet
 * @param {import('@wsps/shared/admin-commands').AdminChannel} options.channel
 * @param {import('@wsps/shared/usage-records').UsageRecords} [options.usage] the usage records (none: no report)
 * @param {number} [options.usageLeaseMs] how long a silent gateway's usage records stay open
 */
export function registerAdminRoutes (app, { token, fleet, channel, usage, usageLeaseMs = 30_000 }) {
  const authorized = token ? bearerCheck(token) : null
  /**
   * @param {import('fastify').FastifyReply} reply
   * @param {keyof typeof AdminError} code
   * @param {string} message
   */
  const refuse = (reply, code, message) => reply.code(AdminError[code]).header('Cache-Control', 'no-store').send({ code, message })
  /**
   * @param {import('fastify').FastifyRequest} req
   * @param {import('fastify').FastifyReply} reply
   * @returns {boolean} whether the request may go on (else it is answered)
   */
  const allowed = (req, reply) => {
    if (!authorized) refuse(reply, 'ADMIN_DISABLED', 'the admin API is off (WSPS_ADMIN_TOKEN is not set)')
    else if (!authorized(req.headers.authorization)) refuse(reply, 'UNAUTHORIZED', 'missing or wrong bearer token')
    else return true
    return false
  }
  /**
   * @param {import('fastify').FastifyReply} reply
   * @param {unknown} err
   */
  const unavailable = (reply, err) => refuse(reply, 'UNAVAILABLE', `Redis did not answer: ${/** @type {Error} */ (err).message}`)

  app.get('/admin/fleet', async (req, reply) => {
    if (!allowed(req, reply)) return reply
    let processes
    try {
      processes = await fleet()
    } catch (err) {
      return unavailable(reply, err)
    }
    return reply.header('Cache-Control', 'no-store').send({ at: Date.now(), processes })
  })

  /**
   * Sends a command and waits for the answers of the live gateways it
   * concerns (the one named, else all); those that do not answer in time
   * are listed as `missing` (late in the fleet view, or gone).
   *
   * @param {import('fastify').FastifyReply} reply
   * @param {import('@wsps/shared/admin-commands').AdminCommand} command
   */
  const ask = async (reply, command) => {
    try {
      const gateways = (await fleet()).filter((p) => p.role === 'gateway')
      if (command.node !== undefined && !gateways.some((p) => p.node === command.node)) {
        return refuse(reply, 'NO_SUCH_NODE', `no gateway ${JSON.stringify(command.node)} in the fleet view`)
      }
      const expected = gateways.filter((p) => !p.late && (command.node === undefined || p.node === command.node)).map((p) => p.node)
      const id = await channel.send(command)
      const deadline = Date.now() + ANSWER_WAIT_MS
      let answers = await channel.answers(id)
      while (!expected.every((n) => answers.some((a) => a.node === n)) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, ANSWER_POLL_MS))
        answers = await channel.answers(id)
      }
      const missing = expected.filter((n) => !answers.some((a) => a.node === n))
      return reply.header('Cache-Control', 'no-store').send({ id, matched: answers.reduce((sum, a) => sum + a.matched, 0), answers, missing })
    } catch (err) {
      return unavailable(reply, err)
    }
  }

  app.post('/admin/disconnect', async (req, reply) => {
    if (!allowed(req, reply)) return reply
    const target = targetOf(req.body)
    if (typeof target === 'string') return refuse(reply, 'BAD_REQUEST', target)
    return ask(reply, { action: 'disconnect', ...target })
  })
  app.get('/admin/connections', async (req, reply) => {
    if (!allowed(req, reply)) return reply
    const { connection, ...query } = /** @type {Record<string, string>} */ (req.query)
    const target = targetOf(connection === undefined ? query : { ...query, connection: /^[0-9]{1,15}$/.test(connection) ? Number(connection) : connection })
    if (typeof target === 'string') return refuse(reply, 'BAD_REQUEST', target)
    return ask(reply, { action: 'inspect', ...target })
  })
  app.post('/admin/drain', async (req, reply) => {
    if (!allowed(req, reply)) return reply
    const node = /** @type {{node?: unknown}} */ (req.body ?? {}).node
    if (typeof node !== 'string' || node === '') return refuse(reply, 'BAD_REQUEST', 'a drain names its gateway: {"node":"<node>"}')
    return ask(reply, { action: 'drain', node })
  })
  // The monthly usage report (usage-records.js): the gateways of silent
  // processes closed first, so what they held ends when they died.
  app.get('/admin/usage', async (req, reply) => {
    if (!allowed(req, reply)) return reply
    const { month } = /** @type {Record<string, unknown>} */ (req.query)
    if (typeof month !== 'string' || !MONTH_PATTERN.test(month)) return refuse(reply, 'BAD_REQUEST', 'month is a UTC month: ?month=YYYY-MM')
    if (usage === undefined) return refuse(reply, 'ADMIN_DISABLED', 'no usage records here')
    try {
      const now = Date.now()
      await usage.sweep(now, usageLeaseMs)
      return reply.header('Cache-Control', 'no-store').send({ at: now, ...aggregate(month, await usage.read(month), now) })
    } catch (err) {
      return unavailable(reply, err)
    }
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

/**
 * The connections an action is for: one connection (its id, with the node
 * that holds it: ids are per process), or every connection of a user (the
 * token's `sub`), on one node or all.
 *
 * @param {unknown} body
 * @returns {{node?: string, connection?: number, user?: string} | string} the target, or what is wrong
 */
export function targetOf (body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'the body is a JSON object: {"node":"<node>","connection":<id>} or {"user":"<sub>"}'
  const { node, connection, user, ...rest } = /** @type {Record<string, unknown>} */ (body)
  const unknown = Object.keys(rest)
  if (unknown.length) return `unknown field ${JSON.stringify(unknown[0])}: a target is node, connection and user`
  if (node !== undefined && (typeof node !== 'string' || node === '')) return 'node is a gateway\'s name, as the fleet view shows it'
  if (connection !== undefined && !(Number.isSafeInteger(connection) && /** @type {number} */ (connection) > 0)) return 'connection is a positive integer (a connection id)'
  if (user !== undefined && (typeof user !== 'string' || user === '')) return 'user is a token\'s sub: a non-empty string'
  if (connection === undefined && user === undefined) return 'name a connection (with its node) or a user'
  if (connection !== undefined && node === undefined) return 'a connection id is per gateway: name its node too'
  return {
    ...(node === undefined ? {} : { node: /** @type {string} */ (node) }),
    ...(connection === undefined ? {} : { connection: /** @type {number} */ (connection) }),
    ...(user === undefined ? {} : { user: /** @type {string} */ (user) })
  }
}
