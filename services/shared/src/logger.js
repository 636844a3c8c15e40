// One pino logger per process; children per connection/job. Redaction is
// declared here so no secret reaches a log line by accident.

import pino from 'pino'

/** Paths pino replaces with [redacted] wherever they appear. */
export const REDACT_PATHS = Object.freeze([
  'redisPassword', 'authSecret', 'upstreamToken', 'password', 'token',
  'config.redisPassword', 'config.authSecret', 'config.upstreamToken',
  'req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie'
])

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
    timestamp: pino.stdTimeFunctions.isoTime
  }, destination)
}
