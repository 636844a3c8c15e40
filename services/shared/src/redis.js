// ioredis connections built the same way by every service, for a single
// Redis, a Redis Cluster, or a primary found through Sentinel
// (WSPS_REDIS_MODE).

import { readFileSync } from 'node:fs'
import { connect as tlsConnect } from 'node:tls'
import { Cluster, Redis } from 'ioredis'
import { parseHostPort } from './common-settings.js'
import { RedisTlsError } from './errors.js'

/**
 * @typedef {object} RedisSettings
 * @property {string} redisUrl
 * @property {'standalone' | 'cluster' | 'sentinel'} redisMode
 * @property {string[]} [redisSentinels] `host:port` of each Sentinel (sentinel mode)
 * @property {string} [redisMasterName] the primary's name at the Sentinels (sentinel mode)
 * @property {string} [redisSentinelPassword] the Sentinels' own AUTH password (sentinel mode)
 * @property {string} redisUsername
 * @property {string} redisPassword
 * @property {string} redisTlsCaFile
 * @property {boolean} [redisAutoPipeline] cluster: ioredis auto-pipelining (WSPS_REDIS_AUTO_PIPELINE)
 * @property {number} [redisCommandTimeoutMs] a command's longest wait for its reply (WSPS_REDIS_COMMAND_TIMEOUT_MS; unset: none)
 *
 * @typedef {Redis | Cluster} RedisClient
 */

/**
 * Node's codes for a server certificate the client does not trust (OpenSSL's
 * verify results, and the host name check of tls.checkServerIdentity).
 */
const UNTRUSTED_CERT_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_SIGNATURE_FAILURE', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_UNTRUSTED',
  'CERT_REJECTED', 'INVALID_CA', 'INVALID_PURPOSE', 'HOSTNAME_MISMATCH', 'ERR_TLS_CERT_ALTNAME_INVALID'
])
// In sentinel mode ioredis passes on only the text of a Sentinel's error
// ("All sentinels are unreachable ... Last error: <message>"): Node's
// messages for the same failures.
const UNTRUSTED_CERT_TEXT = /self[- ]signed certificate|unable to (verify the first|get (local )?issuer) certificate|does not match certificate's altnames|certificate (has expired|is not yet valid|signature failure)/i
const HANDSHAKE_TEXT = /wrong version number|tlsv1 alert|ssl3_|unsupported protocol|packet length too long|handshake failure/i

/**
 * The RedisTlsError an ioredis error stands for, or null when it is no TLS failure.
 *
 * @param {Error & {code?: string}} err
 * @param {Pick<RedisSettings, 'redisTlsCaFile'>} settings
 * @returns {RedisTlsError | null}
 */
export function redisTlsError (err, settings) {
  if (err instanceof RedisTlsError) return err
  const ca = settings.redisTlsCaFile ? `WSPS_REDIS_TLS_CA_FILE=${settings.redisTlsCaFile}` : 'the system CAs (WSPS_REDIS_TLS_CA_FILE is empty)'
  if ((err.code && UNTRUSTED_CERT_CODES.has(err.code)) || UNTRUSTED_CERT_TEXT.test(err.message)) {
    return new RedisTlsError(`Redis TLS: the server's certificate is not trusted by ${ca}: ${err.message}`, err)
  }
  if (err.code?.startsWith('ERR_SSL_') || HANDSHAKE_TEXT.test(err.message)) {
    return new RedisTlsError(`Redis TLS: the handshake failed (a plain-text server, or no TLS version in common?): ${err.message}`, err)
  }
  return null
}

/**
 * The TLS error a handshake with host:port ends in, null when it succeeds.
 *
 * Why: ioredis asks each Sentinel through a client whose errors it drops;
 * a certificate the client does not trust reaches the caller only as "All
 * sentinels are unreachable ... Last error: Connection is closed." This one
 * handshake, with the same TLS options, finds out the reason.
 *
 * @param {{host: string, port: number}} at
 * @param {import('node:tls').ConnectionOptions} tls
 * @returns {Promise<Error | null>}
 */
function tlsHandshakeError ({ host, port }, tls) {
  return new Promise((resolve) => {
    const s = tlsConnect({ ...tls, host, port }, () => { s.destroy(); resolve(null) })
    s.setTimeout(3000, () => { s.destroy(); resolve(null) })
    s.on('error', (err) => { s.destroy(); resolve(err) })
  })
}

/** Capped exponential backoff with jitter; never gives up. @param {number} times */
const retry = (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000) + Math.floor(Math.random() * 100)

/** Like `retry`, capped at 500 ms: for reconnects that wait for a Sentinel failover. @param {number} times */
const retryFailover = (times) => Math.min(50 * 2 ** Math.min(times, 4), 500) + Math.floor(Math.random() * 50)

/** Set on a SentinelRedis that its owner closed (quit, disconnect). */
const kClosed = Symbol('wsps.redis.closed')

/**
 * A Sentinel-mode client that never stays ended unless its owner ended it.
 *
 * Why: in ioredis 5.11 the failover detector calls the connector's
 * disconnect() when a Sentinel announces +switch-master. If that lands
 * while the client is reconnecting (the primary died and its replacement
 * is being asked for), the connector's connect() rejects with "Connection
 * is closed." and the client goes to `end` without ever retrying: a
 * gateway or fetcher stays without Redis for good (3 of the first 5 runs
 * of harness/testkit/test/redis-sentinel.test.js, whose last test
 * reproduces it on purpose). Such an `end` is turned back into a
 * reconnect here.
 */
class SentinelRedis extends Redis {
  /** @param {import('ioredis').RedisOptions} options */
  constructor (options) {
    super(options)
    /** @type {boolean} */
    this[kClosed] = false
    this.on('end', () => {
      if (this[kClosed]) return
      this.emit('error', new Error('the connection ended without being closed (ioredis failover detector race); reconnecting'))
      setTimeout(() => {
        if (!this[kClosed] && this.status === 'end') this.connect().catch(() => {})
      }, retryFailover(1))
    })
  }

  /** @type {Redis['quit']} */
  quit (...args) {
    this[kClosed] = true
    return /** @type {any} */ (super.quit)(...args)
  }

  /** @param {boolean} [reconnect] */
  disconnect (reconnect = false) {
    if (!reconnect) this[kClosed] = true
    super.disconnect(reconnect)
  }
}

/**
 * Opens a connection that retries for ever: a gateway must outlive a Redis
 * restart, not exit on it.
 *
 * Commands time out after WSPS_REDIS_COMMAND_TIMEOUT_MS; a connection for
 * blocking pops (`blocking`) bounds each pop by its own timeout instead.
 *
 * @param {RedisSettings} settings
 * @param {{name: string, onError?: (err: Error) => void, shardedSubscribers?: boolean, blocking?: boolean} & import('ioredis').RedisOptions} options
 * @returns {RedisClient}
 */
export function connectRedis (settings, { name, onError, shardedSubscribers, blocking = false, ...options }) {
  const url = new URL(settings.redisUrl)
  /** @type {import('ioredis').RedisOptions} */
  const auth = {}
  const timeout = settings.redisCommandTimeoutMs
  if (timeout !== undefined) {
    if (blocking) auth.blockingTimeout = timeout
    else auth.commandTimeout = timeout
  }
  if (settings.redisUsername) auth.username = settings.redisUsername
  if (settings.redisPassword) auth.password = settings.redisPassword
  else if (url.password) auth.password = decodeURIComponent(url.password)
  if (url.protocol === 'rediss:') {
    auth.tls = settings.redisTlsCaFile ? { ca: readFileSync(settings.redisTlsCaFile) } : {}
  }
  /** @type {RedisClient} */
  let client
  if (settings.redisMode === 'cluster') {
    client = new Cluster([{ host: url.hostname, port: Number(url.port || 6379) }], {
      redisOptions: { connectionName: name, maxRetriesPerRequest: null, ...auth, ...options },
      clusterRetryStrategy: retry,
      enableOfflineQueue: true,
      // Batching per node is faster, but ioredis handles a MOVED for an
      // auto-pipelined batch as a whole and may keep routing to the old
      // node through a failover (ioredis #2075): off unless asked for.
      enableAutoPipelining: settings.redisAutoPipeline ?? false,
      // A slot map that went stale in a failover is refreshed at least this often.
      slotsRefreshInterval: 2000,
      shardedSubscribers: shardedSubscribers ?? false,
      // Keep the seed's host name: TLS certificates name it, not the IPs.
      dnsLookup: (address, callback) => callback(null, address)
    })
  } else if (settings.redisMode === 'sentinel') {
    // ioredis asks the Sentinels for the primary on every (re)connect and
    // checks the role of what it reached (a demoted primary is left for the
    // next answer). failoverDetector: it also subscribes to +switch-master on
    // the Sentinels and drops its connection at once when they promote
    // another node, so a primary that is still up (a partition, a manual
    // failover) is not written to after it lost the role.
    const tls = auth.tls
    client = new SentinelRedis({
      sentinels: (settings.redisSentinels ?? []).map((s) => parseHostPort(s) ?? { host: s }),
      name: settings.redisMasterName,
      sentinelPassword: settings.redisSentinelPassword || undefined,
      sentinelRetryStrategy: retry,
      sentinelReconnectStrategy: retry,
      failoverDetector: true,
      // A failover takes seconds (down-after + election): ask again often so
      // the new primary is found soon after it is promoted.
      retryStrategy: retryFailover,
      ...(tls ? { enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
      connectionName: name,
      maxRetriesPerRequest: null,
      enableAutoPipelining: false,
      ...auth,
      ...options
    })
  } else {
    client = new Redis(settings.redisUrl, {
      connectionName: name,
      maxRetriesPerRequest: null,
      enableAutoPipelining: false,
      retryStrategy: retry,
      ...auth,
      ...options
    })
  }
  // Without a listener ioredis prints every reconnect error to stderr. A TLS
  // failure is handed on as the RedisTlsError (Code.REDIS_TLS) it is;
  // for the Sentinels it is first found out (tlsHandshakeError), one
  // handshake per failed round at most.
  const sentinelTls = settings.redisMode === 'sentinel' ? auth.tls : undefined
  let probing = false
  client.on('error', (/** @type {Error} */ err) => {
    const known = redisTlsError(err, settings)
    const first = (settings.redisSentinels ?? []).map((x) => parseHostPort(x))[0]
    if (known || !sentinelTls || !first || probing || !err.message.startsWith('All sentinels are unreachable')) return onError?.(known ?? err)
    probing = true
    tlsHandshakeError(first, sentinelTls).then((tlsErr) => {
      probing = false
      onError?.((tlsErr && redisTlsError(tlsErr, settings)) || err)
    })
  })
  return client
}

/**
 * Closes a connection for good, in bounded time. QUIT only when the
 * connection is up (its in-flight replies are read first); a connection
 * that is reconnecting is disconnected at once: ioredis would queue the QUIT
 * behind the commands waiting offline and, with maxRetriesPerRequest null,
 * wait for a Redis that may never come back (a pod told to stop while its
 * Redis is gone must still exit). Commands still queued are rejected with
 * "Connection is closed.".
 *
 * @param {RedisClient} client
 * @param {{timeoutMs?: number}} [options] longest wait for QUIT's reply
 */
export async function closeRedis (client, { timeoutMs = 2000 } = {}) {
  /** @param {Promise<unknown>} p */
  const bounded = async (p) => {
    /** @type {NodeJS.Timeout | undefined} */
    let timer
    await Promise.race([p.catch(() => {}), new Promise((resolve) => { timer = setTimeout(resolve, timeoutMs) })])
    clearTimeout(timer)
  }
  if (client.status === 'ready') await bounded(client.quit())
  client.disconnect()
  // ioredis 5.11: disconnect() while waiting to reconnect only cancels the
  // timer, and the commands queued offline are never rejected (what
  // redis/ioredis#2169, still open, fixes). One more connect attempt made
  // while closing manually ends the client either way (refused: `end` at
  // once; reached: sent, then disconnected) and settles them.
  if (!(client instanceof Cluster) && client.status === 'reconnecting') {
    await bounded(client.connect())
    client.disconnect()
  }
}

/**
 * @typedef {object} PrimaryWatch
 * @property {() => void} [onFailover] the connection is ready again on another primary than before
 * @property {(seconds: number) => void} [onOutage] it is ready again after this long without a primary
 */

/**
 * Follows which primary a single-node connection (standalone or Sentinel) is
 * on: a reconnect that lands on another address than the last one is a
 * failover seen, and the time from losing the connection to being ready
 * again is an outage. (A Cluster client has no one primary: not watched.)
 *
 * @param {RedisClient} client
 * @param {PrimaryWatch} watch
 */
export function watchPrimary (client, { onFailover, onOutage }) {
  if (client instanceof Cluster) return
  let address = ''
  let lostAt = 0
  client.on('close', () => {
    if (address && lostAt === 0) lostAt = performance.now()
  })
  client.on('ready', () => {
    const s = client.stream
    const now = `${s?.remoteAddress}:${s?.remotePort}`
    if (lostAt !== 0) {
      onOutage?.((performance.now() - lostAt) / 1000)
      lostAt = 0
    }
    if (address && now !== address) onFailover?.()
    address = now
  })
}
