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
  /** A NATS writer lost the race for a symbol's next seq too many times in a row: that publish failed. */
  NATS_CONTENDED: 'WSPS_ERR_NATS_CONTENDED',
  /** A NATS broker call or publish was made while its connection is down: refused at once, not queued. */
  NATS_DOWN: 'WSPS_ERR_NATS_DOWN',
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

/**
 * A quote a NATS writer could not publish: each of its attempts found that
 * another writer had published the symbol's next seq first
 * (nats-publish.js). Nothing of it was stored.
 */
export class NatsContendedError extends Error {
  /** @param {string} symbol @param {number} attempts */
  constructor (symbol, attempts) {
    super(`${symbol}: another writer published first ${attempts} times in a row`)
    this.name = 'NatsContendedError'
    this.code = Code.NATS_CONTENDED
  }
}

/** A NATS broker call (broker-nats.js) or publish (nats-publish.js) made while its connection is down: refused, not queued. */
export class NatsDownError extends Error {
  /** @param {string} what */
  constructor (what) {
    super(`NATS connection down: ${what} refused`)
    this.name = 'NatsDownError'
    this.code = Code.NATS_DOWN
  }
}
