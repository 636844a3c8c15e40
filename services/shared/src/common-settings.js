// Settings every wsps service has, declared once.

import { hostname } from 'node:os'

/** @type {readonly import('./config.js').Setting[]} */
export const commonSettings = Object.freeze([
  { env: 'WSPS_HOST', key: 'host', type: 'string', default: '0.0.0.0', doc: 'Address the HTTP/WebSocket server binds to.' },
  { env: 'WSPS_NODE_NAME', key: 'nodeName', type: 'string', default: hostname(), doc: 'Name of this process in logs, metrics and `hello.node` (the chart sets the pod name). Default: the host name.' },
  { env: 'WSPS_LOG_LEVEL', key: 'logLevel', type: 'enum', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info', doc: 'pino log level.' },
  { env: 'WSPS_REDIS_URL', key: 'redisUrl', type: 'url', protocols: ['redis', 'rediss'], default: 'redis://127.0.0.1:6379', doc: '`redis://` or `rediss://` (TLS) URL of Redis. A password in the URL works but prefer WSPS_REDIS_PASSWORD.' },
  { env: 'WSPS_REDIS_MODE', key: 'redisMode', type: 'enum', values: ['standalone', 'cluster', 'sentinel'], default: 'standalone', doc: '`standalone`: one Redis (or a primary behind a Service). `cluster`: WSPS_REDIS_URL is a seed node of a Redis Cluster; quotes travel by sharded pub/sub (SPUBLISH/SSUBSCRIBE), each channel on the shard that owns its symbol. `sentinel`: the primary is asked of the Sentinels in WSPS_REDIS_SENTINELS (master WSPS_REDIS_MASTER_NAME) and followed through failovers; of WSPS_REDIS_URL only the scheme counts (`rediss://`: TLS to Redis and the Sentinels).' },
  { env: 'WSPS_REDIS_SENTINELS', key: 'redisSentinels', type: 'list', default: [], doc: 'With WSPS_REDIS_MODE=sentinel: comma-separated `host:port` of the Sentinels (all of them, or at least two: any one that answers names the primary).' },
  { env: 'WSPS_REDIS_MASTER_NAME', key: 'redisMasterName', type: 'string', default: '', doc: 'With WSPS_REDIS_MODE=sentinel: the name the Sentinels monitor the primary under (`sentinel monitor <name> ...`).' },
  { env: 'WSPS_REDIS_SENTINEL_PASSWORD', key: 'redisSentinelPassword', type: 'string', default: '', secret: true, doc: 'AUTH password of the Sentinels themselves (their `requirepass`), when they have one; WSPS_REDIS_PASSWORD is the one of the Redis nodes.' },
  { env: 'WSPS_REDIS_USERNAME', key: 'redisUsername', type: 'string', default: '', doc: 'Redis ACL user name (empty: the default user).' },
  { env: 'WSPS_REDIS_PASSWORD', key: 'redisPassword', type: 'string', default: '', secret: true, doc: 'Redis AUTH password (overrides one in the URL).' },
  { env: 'WSPS_REDIS_TLS_CA_FILE', key: 'redisTlsCaFile', type: 'string', default: '', doc: 'PEM file of the CA that signed the Redis server certificate (with `rediss://`; in sentinel mode also the Sentinels\' certificate). Empty: the system CAs. A server whose certificate it does not trust is never used: the service stays unready and logs `redis connection error` with code `WSPS_ERR_REDIS_TLS`.' },
  { env: 'WSPS_REDIS_AUTO_PIPELINE', key: 'redisAutoPipeline', type: 'bool', default: false, doc: '`cluster` only: let ioredis batch commands per node (auto-pipelining). Off by default: during a failover or resharding ioredis may then answer commands with a raw MOVED and keep routing them to the old node (ioredis #2075); the services retry either way, but recover faster without it.' },
  { env: 'WSPS_REDIS_PING_INTERVAL_MS', key: 'redisPingIntervalMs', type: 'int', min: 100, max: 60000, default: 1000, doc: 'Every Redis link (commands, pub/sub, each Cluster node and shard subscriber) is sent a PING this often, so a link that went silent with its socket open (a partition, a dropped NAT entry, a hung node) is found.' },
  { env: 'WSPS_REDIS_PING_TIMEOUT_MS', key: 'redisPingTimeoutMs', type: 'int', min: 100, max: 60000, default: 2000, doc: 'A link whose PING (or handshake) is not answered within this is torn down and reconnected, and the service is not ready meanwhile: a silent link is found within WSPS_REDIS_PING_INTERVAL_MS plus this (3 s by default). Keep it above the slowest command the service sends (a job pop blocks for 1 s).' },
  { env: 'WSPS_REDIS_COMMAND_TIMEOUT_MS', key: 'redisCommandTimeoutMs', type: 'int', min: 100, max: 600000, default: 10000, doc: 'A Redis command (not a blocking pop) not answered within this fails with a timeout, so nothing waits on a silent link for ever; the caller retries as after any Redis error.' },
  { env: 'WSPS_STATUS_INTERVAL_MS', key: 'statusIntervalMs', type: 'int', min: 0, max: 60000, default: 2000, doc: 'This process writes its status record (ready, connections, slow clients, rates, event-loop delay, stale and most watched symbols) into Redis this often, for the fleet view (`wsps top`, a gateway\'s `GET /admin/fleet`); a record not rewritten for three intervals is shown late, one gone for fifteen is dropped. 0: never.' },
  { env: 'WSPS_OTLP_TRACES_URL', key: 'otlpTracesUrl', type: 'url', protocols: ['http', 'https'], default: '', doc: 'OTLP/HTTP endpoint (JSON) this process sends its spans of traced quotes to, e.g. `http://otel-collector:4318/v1/traces`. Empty: tracing off, at no cost. Which quotes are traced is decided where they enter (the fetcher\'s WSPS_TRACE_SAMPLE, or a publish request\'s sampled `traceparent`); a gateway traces every quote that arrives traced. See docs/operations.md, Traces of a quote\'s path.' },
  { env: 'WSPS_REDIS_KEY_PREFIX', key: 'redisKeyPrefix', type: 'string', default: 'wsps', doc: 'Prefix of every Redis key and channel, so several installs can share one Redis.' },
  { env: 'WSPS_BROKER', key: 'broker', type: 'enum', values: ['redis', 'nats'], default: 'redis', doc: 'The engine quotes travel through: `redis` (every feature), or `nats` (NATS JetStream, docs/architecture.md, A second engine: NATS JetStream), which both services still refuse at start-up, saying why: the gateway\'s NATS broker passes the broker conformance suite, but no fetcher publishes on NATS yet.' },
  { env: 'WSPS_NATS_URL', key: 'natsUrls', type: 'list', default: [], doc: 'With WSPS_BROKER=nats: comma-separated `nats://host:port` of the NATS servers (several of a cluster: the client reconnects to another when one goes).' }
])

/** A NATS server: `nats://host:port`. */
const NATS_URL = /^nats:\/\/(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/

/**
 * Problems of WSPS_BROKER and WSPS_NATS_URL, as redisSettingsProblems for
 * Redis: the NATS servers named when, and only when, NATS is the engine.
 *
 * @param {{broker: 'redis' | 'nats', natsUrls: string[]}} config
 * @returns {string[]}
 */
export function brokerSettingsProblems (config) {
  const problems = []
  if (config.broker === 'nats' && config.natsUrls.length === 0) problems.push('WSPS_NATS_URL must list the NATS servers (nats://host:port,...) when WSPS_BROKER=nats')
  if (config.broker !== 'nats' && config.natsUrls.length > 0) problems.push(`WSPS_NATS_URL is set but WSPS_BROKER is ${config.broker}: it is used only with WSPS_BROKER=nats`)
  const bad = config.natsUrls.filter((u) => !NATS_URL.test(u))
  if (bad.length) problems.push(`WSPS_NATS_URL: not nats://host:port: ${bad.map((u) => JSON.stringify(u)).join(', ')}`)
  return problems
}

/** `host:port`, the host a name, an IPv4 or a bracketed IPv6 address. */
const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/

/**
 * Parses one `host:port` of WSPS_REDIS_SENTINELS.
 *
 * @param {string} entry
 * @returns {{host: string, port: number} | null} null when it is not one
 */
export function parseHostPort (entry) {
  const m = HOST_PORT.exec(entry)
  if (!m) return null
  const port = Number(m[2])
  if (port < 1 || port > 65535) return null
  return { host: m[1].replace(/^\[|\]$/g, ''), port }
}

/**
 * Cross-field checks of the Redis settings, shared by every service's loader.
 *
 * @param {{redisMode: string, redisSentinels: string[], redisMasterName: string, redisSentinelPassword: string}} config
 * @returns {string[]} problems, empty when the settings fit together
 */
export function redisSettingsProblems (config) {
  const problems = []
  if (config.redisMode === 'sentinel') {
    if (config.redisSentinels.length === 0) problems.push('WSPS_REDIS_SENTINELS must list the Sentinels (host:port,host:port,...) when WSPS_REDIS_MODE=sentinel')
    const bad = config.redisSentinels.filter((s) => !parseHostPort(s))
    if (bad.length) problems.push(`WSPS_REDIS_SENTINELS: not host:port: ${bad.map((s) => JSON.stringify(s)).join(', ')}`)
    if (!config.redisMasterName) problems.push('WSPS_REDIS_MASTER_NAME must name the monitored primary when WSPS_REDIS_MODE=sentinel')
  } else {
    for (const [env, set] of /** @type {const} */ ([['WSPS_REDIS_SENTINELS', config.redisSentinels.length > 0], ['WSPS_REDIS_MASTER_NAME', config.redisMasterName !== ''], ['WSPS_REDIS_SENTINEL_PASSWORD', config.redisSentinelPassword !== '']])) {
      if (set) problems.push(`${env} is set but WSPS_REDIS_MODE is ${config.redisMode}: it is used only with WSPS_REDIS_MODE=sentinel`)
    }
  }
  return problems
}
