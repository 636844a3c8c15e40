// The errors both services throw or log, each code defined once here (as
// fastify's lib/errors.js): a code names one failure, its class carries it,
// and logs, tests and docs spell the code from here. The quote-fetcher's own
// are in services/quote-fetcher/src/errors.js; the wire's (error frames,
// close codes) in services/protocol. docs/operations.md, "Error codes in
// the logs", lists them all (a test keeps the two equal).

/** Every code of this registry. */
export const Code = Object.freeze({
  /** A setting is missing, malformed or out of range: the service does not start. */
  CONFIG: 'WSPS_ERR_CONFIG',
  /** A Redis (or Sentinel) TLS handshake failed or its certificate is not trusted: the service stays unready. */
  REDIS_TLS: 'WSPS_ERR_REDIS_TLS',
  /** A Redis link did not answer its PING in time and was torn down to reconnect. */
  REDIS_SILENT: 'WSPS_ERR_REDIS_SILENT',
  /** A graceful stop took longer than its bound: the process exits 1 anyway. */
  SHUTDOWN_TIMEOUT: 'WSPS_ERR_SHUTDOWN_TIMEOUT'
})

export class ConfigError extends Error {
  /** @param {string[]} problems */
  constructor (problems) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`)
    this.name = 'ConfigError'
    this.code = Code.CONFIG
    this.problems = problems
  }
}

/**
 * A connection to Redis (or a Sentinel) that failed in TLS: the server's
 * certificate is not trusted by WSPS_REDIS_TLS_CA_FILE, or the handshake
 * itself failed (a plain-text server, no common TLS version). Retrying does
 * not fix it; the services stay up and unready and log it with its code.
 */
export class RedisTlsError extends Error {
  /**
   * @param {string} message
   * @param {Error} cause
   */
  constructor (message, cause) {
    super(message, { cause })
    this.name = 'RedisTlsError'
    this.code = Code.REDIS_TLS
  }
}

/** Error a silent link's socket is destroyed with (ioredis logs it as the connection's error). */
export class RedisSilentError extends Error {
  /** @param {string} node @param {number} ms */
  constructor (node, ms) {
    super(`Redis link to ${node} silent for ${ms} ms: torn down to reconnect`)
    this.name = 'RedisSilentError'
    this.code = Code.REDIS_SILENT
  }
}
