// One pino logger per process; children per connection/job. Redaction is
// declared here so no secret reaches a log line by accident.

import pino from 'pino'

/** Paths pino replaces with [redacted] wherever they appear. */
export const REDACT_PATHS = Object.freeze([
  'redisPassword', 'authSecret', 'upstreamToken', 'password', 'token',
  'config.redisPassword', 'config.authSecret', 'config.upstreamToken',
  'req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie'
])

/** Query parameters whose values never reach a log line (`?token=` on GET /sse). */
const SECRET_QUERY = /([?&](?:token|access_token)=)[^&#]*/gi

/**
 * @param {string | undefined} url a request URL
 * @returns {string | undefined} the same with secret query values masked
 */
export function redactUrl (url) {
  return url?.replace(SECRET_QUERY, '$1[redacted]')
}

/**
 * How a request appears in a log line (fastify's fields), with its URL
 * masked: redact paths cannot mask part of a string. Declared on the logger,
 * so fastify's own request logging uses it too.
 *
 * @param {any} req a fastify Request or a Node IncomingMessage
 */
function reqSerializer (req) {
  return {
    method: req.method,
    url: redactUrl(req.url),
    host: req.host ?? req.headers?.host,
    remoteAddress: req.ip ?? req.socket?.remoteAddress,
    remotePort: req.socket?.remotePort
  }
}

/**
 * @param {{level: string, name: string, node: string}} opts
 * @param {import('pino').DestinationStream} [destination]
 */
export function createLogger ({ level, name, node }, destination) {
  return pino({
    level,
    name,
    base: { node },
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    serializers: { req: reqSerializer },
    timestamp: pino.stdTimeFunctions.isoTime
  }, destination)
}
