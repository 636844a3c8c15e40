// Gateway settings: the single place their names, defaults and docs live.

import { loadConfig } from '@wsps/shared/config'
import { ConfigError } from '@wsps/shared/errors'
import { commonSettings, redisSettingsProblems } from '@wsps/shared/common-settings'
import { parseVenues } from './venues.js'

/** @type {readonly import('@wsps/shared/config').Setting[]} */
export const gatewaySettings = Object.freeze([
  ...commonSettings,
  { env: 'WSPS_HTTP_PORT', key: 'port', type: 'int', min: 0, max: 65535, default: 8080, doc: 'HTTP port: `/ws`, `/healthz`, `/readyz`, `/metrics` and the browser client.' },
  { env: 'WSPS_ADMIN_TOKEN', key: 'adminToken', type: 'string', default: '', secret: true, doc: 'Bearer token of the admin API, served beside `/metrics` (on WSPS_METRICS_PORT when that is set, so an ingress never routes it): `GET /admin/fleet` (the status record of every gateway and fetcher, from Redis: `wsps top`), the admin view at `/admin/`, and the actions on any gateway\'s connections (`/admin/connections`, `/admin/disconnect`, `/admin/drain`: `wsps conn`, `disconnect`, `drain`). Empty: the admin API is off (404).' },
  { env: 'WSPS_METRICS_PORT', key: 'metricsPort', type: 'int', min: 0, max: 65535, default: 0, doc: 'Serve `/metrics` on this port instead of WSPS_HTTP_PORT, keeping it off the port an ingress exposes (0: on WSPS_HTTP_PORT).' },
  { env: 'WSPS_HEARTBEAT_MS', key: 'heartbeatMs', type: 'int', min: 1000, max: 300000, default: 15000, doc: 'Server ping interval. A peer that misses a ping is dropped: idle timeout = 2 x this.' },
  { env: 'WSPS_BATCH_MS', key: 'batchMs', type: 'int', min: 0, max: 1000, default: 0, doc: 'Batching window for updates. 0 (adaptive): a pass per event-loop turn, so quotes are written at once when idle and batch up by themselves under load (a pass takes longer, more arrive meanwhile). A fixed window trades latency for fewer, larger frames.' },
  { env: 'WSPS_MAX_SUBSCRIPTIONS', key: 'maxSubscriptions', type: 'int', min: 1, max: 10000, default: 200, doc: 'Symbols one connection may hold.' },
  { env: 'WSPS_COMPRESSION', key: 'compression', type: 'bool', default: false, doc: 'Offer permessage-deflate (RFC 7692) on `/ws` to clients that ask for it; one that does not, or any client while this is off, gets an uncompressed connection (the standard negotiation, never an error). No context takeover either way and a 1 KiB window: a compressed connection keeps no history between messages; frames under 256 bytes go uncompressed. Costs gateway CPU per frame per compressed client (docs/benchmarks/compression.md).' },
  { env: 'WSPS_COMPRESSION_MAX_CONNECTIONS', key: 'compressionMaxConnections', type: 'int', min: 0, max: 1000000, default: 2000, doc: 'With WSPS_COMPRESSION on, compressed connections per process at most: each keeps its deflate state between messages. Past it, clients that ask get uncompressed connections. 0: no cap.' },
  { env: 'WSPS_MAX_PAYLOAD_BYTES', key: 'maxPayload', type: 'int', min: 128, max: 1048576, default: 4096, doc: 'Largest client frame; larger ones close the socket with 1009.' },
  { env: 'WSPS_RATE_PER_SEC', key: 'ratePerSec', type: 'number', min: 0.1, max: 100000, default: 20, doc: 'Client messages per second (token bucket refill rate).' },
  { env: 'WSPS_RATE_BURST', key: 'rateBurst', type: 'int', min: 1, max: 100000, default: 40, doc: 'Token bucket size: messages a client may send at once.' },
  { env: 'WSPS_MAX_CONNECTIONS', key: 'maxConnections', type: 'int', min: 1, max: 1000000, default: 18000, doc: 'Sockets per process; more are refused with HTTP 503. Keep below the open-files limit.' },
  { env: 'WSPS_MAX_CONNECTIONS_PER_IP', key: 'maxConnectionsPerIp', type: 'int', min: 0, max: 1000000, default: 0, doc: 'Sockets per client IP (0: no limit). Behind an ingress every client shares its IP unless WSPS_TRUST_PROXY is set.' },
  { env: 'WSPS_TRUST_PROXY', key: 'trustProxy', type: 'bool', default: false, doc: 'Take the client IP from X-Forwarded-For (only behind a trusted proxy).' },
  { env: 'WSPS_ALLOWED_ORIGINS', key: 'allowedOrigins', type: 'list', default: [], doc: 'Comma-separated Origin allowlist for upgrades (empty: any origin). `*` allows any.' },
  { env: 'WSPS_SEND_HIGH_WATER_BYTES', key: 'sendHighWater', type: 'int', min: 1024, max: 268435456, default: 262144, doc: 'Buffered bytes above which a client counts as slow: writes pause and updates are conflated.' },
  { env: 'WSPS_SEND_MAX_BYTES', key: 'sendMax', type: 'int', min: 1024, max: 1073741824, default: 4194304, doc: 'Buffered bytes at which a slow client is closed with 4008 at once.' },
  { env: 'WSPS_SLOW_CLOSE_MS', key: 'slowCloseMs', type: 'int', min: 100, max: 600000, default: 10000, doc: 'How long a client may stay slow before it is closed with 4008.' },
  { env: 'WSPS_RECOVERY_MAX', key: 'recoveryMax', type: 'int', min: 0, max: 100000, default: 1000, doc: 'Most ticks of one symbol replayed to a client resuming with `since`, or filled in by a gateway after losing its Redis pub/sub connection; a longer gap gets a fresh `snap` (`recovered: false`). Replays also count against WSPS_SEND_MAX_BYTES. 0: no recovery.' },
  { env: 'WSPS_RESTORE_DEADLINE_MS', key: 'restoreDeadlineMs', type: 'int', min: 0, max: 3600000, default: 30000, doc: 'A subscribed symbol whose Redis channel is not restored for this long while Redis answers (this gateway\'s own trouble: a shard it cannot reach, a subscribe that keeps failing) gets its clients closed with 1012, so they reconnect to another gateway and resume there. 0: never. Keep it above a Redis Cluster failover (cluster-node-timeout, 15 s by default, plus election: 16 to 22 s measured here).' },
  { env: 'WSPS_STALE_GRACE_MS', key: 'staleGraceMs', type: 'int', min: 0, max: 60000, default: 1000, doc: 'A symbol whose feed is interrupted (the Redis pub/sub link lost, its channel being restored after a reconnect or a shard\'s failover) for longer than this is told `stale` to its subscribers, and `fresh` when it is live again; a shorter blip is not told. A link found silent (WSPS_REDIS_PING_TIMEOUT_MS) is told at once.' },
  { env: 'WSPS_ISOLATION_CLOSE_MS', key: 'isolationCloseMs', type: 'int', min: 0, max: 3600000, default: 2000, doc: 'A gateway cut off from Redis for this long asks its peers (WSPS_PEER_URL); when one of them has reached Redis all along, this gateway alone is cut off: it closes its clients with 1012 (`cut off from the broker`, spread over a second) so they resume on another gateway, and refuses new ones (503) until Redis answers again. When Redis is gone for every gateway, clients stay, told `stale`. 0: never.' },
  { env: 'WSPS_PEER_URL', key: 'peerUrl', type: 'string', default: '', doc: 'The URL other gateways reach this one at (`http://<pod IP>:<port>`; the chart sets it), announced in Redis so that a gateway cut off from Redis can ask its peers whether they still reach it (WSPS_ISOLATION_CLOSE_MS). Empty: `http://127.0.0.1:<WSPS_HTTP_PORT>`, right for gateways on one host only.' },
  { env: 'WSPS_UNSUBSCRIBE_DELAY_MS', key: 'unsubscribeDelayMs', type: 'int', min: 0, max: 600000, default: 5000, doc: 'Delay before the pod drops a Redis channel nobody on it watches any more (absorbs churn).' },
  { env: 'WSPS_DEMAND_LEASE_MS', key: 'demandLeaseMs', type: 'int', min: 1000, max: 3600000, default: 15000, doc: 'Lease on each watched symbol pushed to the fetchers, renewed every third of it. Unwatched symbols stop being fetched within this.' },
  { env: 'WSPS_DRAIN_MS', key: 'drainMs', type: 'int', min: 0, max: 3600000, default: 10000, doc: 'On SIGTERM, client closes (1012) are spread over this window so they do not reconnect all at once.' },
  { env: 'WSPS_SHUTDOWN_DELAY_MS', key: 'shutdownDelayMs', type: 'int', min: 0, max: 600000, default: 0, doc: 'On SIGTERM, time between readiness going false and the drain starting (lets load balancers notice).' },
  { env: 'WSPS_AUTH_MODE', key: 'authMode', type: 'enum', values: ['none', 'hs256', 'jwks'], default: 'none', doc: 'JWT check (`Authorization` header, first frame `{"op":"auth"}`, or `?token=` on `/sse` only): none, a shared HS256 secret, or a JWKS URL.' },
  { env: 'WSPS_AUTH_TIMEOUT_MS', key: 'authTimeoutMs', type: 'int', min: 100, max: 120000, default: 5000, doc: 'With auth on, a WebSocket opened without an `Authorization` header must send `{"op":"auth","token":...}` within this, or it is closed with 4003. Until then it gets no `hello` and holds no subscriptions.' },
  { env: 'WSPS_AUTH_HS256_SECRET', key: 'authSecret', type: 'string', default: '', secret: true, doc: 'Shared secret for `hs256` (at least 32 bytes).' },
  { env: 'WSPS_AUTH_JWKS_URL', key: 'authJwksUrl', type: 'string', default: '', doc: 'JWKS URL for `jwks`.' },
  { env: 'WSPS_AUTH_ISSUER', key: 'authIssuer', type: 'string', default: '', doc: 'Required `iss` claim (empty: not checked).' },
  { env: 'WSPS_AUTH_AUDIENCE', key: 'authAudience', type: 'string', default: '', doc: 'Required `aud` claim (empty: not checked).' },
  { env: 'WSPS_AUTH_SYMBOLS_CLAIM', key: 'authSymbolsClaim', type: 'string', default: 'symbols', doc: 'Claim listing the symbols a token grants (array of symbols or prefixes ending in `*`; absent: all; any other shape rejects the token with BAD_GRANT).' },
  { env: 'WSPS_AUTH_DELAYED_CLAIM', key: 'authDelayedClaim', type: 'string', default: 'delayedSymbols', doc: 'Claim listing the symbols a token grants delayed only (same shape and prefix rules as WSPS_AUTH_SYMBOLS_CLAIM; a symbol in both is real-time). Served as they were WSPS_DELAY_MS ago, marked `"delayed":true`. With this claim present and the symbols claim absent, nothing is real-time. Any other shape rejects the token (BAD_GRANT), as for the symbols claim.' },
  { env: 'WSPS_AUTH_VENUES_CLAIM', key: 'authVenuesClaim', type: 'string', default: 'venues', doc: 'Claim granting whole venues (exchange MICs of WSPS_VENUES): `{"realtime":["XNAS"],"delayed":["XNYS"]}`, both lists optional. Adds to the symbol claims by the same rules (a symbol granted both ways is real-time); with it present, an absent WSPS_AUTH_SYMBOLS_CLAIM grants nothing of its own. Any other shape rejects the token (BAD_GRANT).' },
  { env: 'WSPS_AUTH_CLASS_CLAIM', key: 'authClassClaim', type: 'string', default: 'userClass', doc: 'Claim naming the user class exchanges bill by: `pro` or `nonpro`. Absent: `pro` (exchanges count a subscriber as professional unless qualified as non-professional); any other value rejects the token (BAD_IDENTITY).' },
  { env: 'WSPS_VENUES', key: 'venues', type: 'string', default: '', doc: 'Which venue lists which symbols, for venue grants (WSPS_AUTH_VENUES_CLAIM): `MIC=SYMBOL ...` entries apart by `;`, symbols exact or prefixes ending in `*` (`XNAS=AAPL MSFT NV*;XNYS=IBM`). An exact symbol wins over a prefix, a longer prefix over a shorter. A symbol no entry names has no venue: only symbol claims grant it. Checked at start.' },
  { env: 'WSPS_MAX_SESSIONS_PER_USER', key: 'maxSessionsPerUser', type: 'int', min: 0, max: 1000, default: 0, doc: 'Sessions (WebSocket and SSE alike) one user (the token\'s `sub`) may hold at once over the whole fleet, counted in Redis (0: no cap). Needs auth on; a token without `sub` is then rejected (BAD_IDENTITY). What happens past it: WSPS_SESSION_CAP_POLICY.' },
  { env: 'WSPS_SESSION_CAP_POLICY', key: 'sessionCapPolicy', type: 'enum', values: ['refuse', 'close-oldest'], default: 'refuse', doc: 'A session past WSPS_MAX_SESSIONS_PER_USER: `refuse` closes the new one (SESSION_LIMIT, 4011); `close-oldest` closes the user\'s oldest, on whichever gateway holds it (4012), and keeps the new one.' },
  { env: 'WSPS_SESSION_LEASE_MS', key: 'sessionLeaseMs', type: 'int', min: 1000, max: 600000, default: 30000, doc: 'With WSPS_MAX_SESSIONS_PER_USER on, each session\'s place in its user\'s count is a lease the gateway renews every third of this: the sessions of a gateway that died free their places within it. With WSPS_USAGE_RECORDS on, the open usage records of a gateway silent for this long are closed.' },
  { env: 'WSPS_USAGE_RECORDS', key: 'usageRecords', type: 'bool', default: false, doc: 'Keep usage records in Redis for the monthly usage report exchanges ask for (`GET /admin/usage?month=YYYY-MM`, `wsps usage`): per session, venue (WSPS_VENUES; `XXXX`: none) and service level (real-time or delayed), its user, class, gateway, and when it first subscribed a symbol there until it ended. Needs auth on; a token without `sub` is then rejected (BAD_IDENTITY). A gateway that dies has its open records closed at the last moment it said it was alive (within WSPS_SESSION_LEASE_MS).' },
  { env: 'WSPS_DELAY_MS', key: 'delayMs', type: 'int', min: 1000, max: 86400000, default: 900000, doc: 'How old quotes served to a delayed grant are (15 min by default): each is released once its `ts` is this old, read from the symbol\'s history in Redis, never from this process\'s memory. The gateway pins the history of each symbol it serves delayed so that the fetchers keep it this far back (up to 200000 entries); a symbol nobody read delayed within the last delay gets no quote until one is old enough (docs/protocol.md, Delayed grants).' },
  { env: 'WSPS_WORKERS', key: 'workers', type: 'string', default: '1', doc: 'Gateway processes in this pod sharing WSPS_HTTP_PORT (1-64, or `auto`: the CPUs this process may use, a cgroup CPU limit included). Each has its own Redis subscriptions and its own limits (WSPS_MAX_CONNECTIONS is per process); `/readyz` is ready only when every one is; `/metrics` labels series with `worker`; SIGTERM drains them together.' },
  { env: 'WSPS_STATIC_DIR', key: 'staticDir', type: 'string', default: '', doc: 'Directory of the browser client (empty: the bundled one; `-` to serve none).' },
  { env: 'WSPS_PAGE_TOKEN_URL', key: 'pageTokenUrl', type: 'string', default: '', doc: 'With auth on, where the served page gets its tokens: a same-origin path (`/path`, the page\'s CSP allows no other origin) answering GET with the token as text or `{"token":"..."}`, cookies sent; written into `index.html` as `<meta name="wsps-token-url">`. Empty: the page connects without a token unless its host page defines `window.wspsGetToken`.' }
])

/**
 * @typedef {object} GatewayConfig
 * @property {string} host
 * @property {number} port
 * @property {number} metricsPort
 * @property {string} nodeName
 * @property {number} statusIntervalMs
 * @property {string} otlpTracesUrl
 * @property {string} adminToken
 * @property {string} logLevel
 * @property {string} redisUrl
 * @property {'standalone' | 'cluster' | 'sentinel'} redisMode
 * @property {string[]} redisSentinels
 * @property {string} redisMasterName
 * @property {string} redisSentinelPassword
 * @property {string} redisUsername
 * @property {string} redisPassword
 * @property {string} redisTlsCaFile
 * @property {string} redisKeyPrefix
 * @property {boolean} redisAutoPipeline
 * @property {number} heartbeatMs
 * @property {number} recoveryMax
 * @property {number} restoreDeadlineMs
 * @property {number} staleGraceMs
 * @property {number} isolationCloseMs
 * @property {string} peerUrl
 * @property {number} redisPingIntervalMs
 * @property {number} redisPingTimeoutMs
 * @property {number} redisCommandTimeoutMs
 * @property {number} batchMs
 * @property {number} maxSubscriptions
 * @property {number} maxPayload
 * @property {boolean} compression
 * @property {number} compressionMaxConnections
 * @property {number} ratePerSec
 * @property {number} rateBurst
 * @property {number} maxConnections
 * @property {number} maxConnectionsPerIp
 * @property {boolean} trustProxy
 * @property {string[]} allowedOrigins
 * @property {number} sendHighWater
 * @property {number} sendMax
 * @property {number} slowCloseMs
 * @property {number} unsubscribeDelayMs
 * @property {number} demandLeaseMs
 * @property {number} drainMs
 * @property {number} shutdownDelayMs
 * @property {'none' | 'hs256' | 'jwks'} authMode
 * @property {number} authTimeoutMs
 * @property {string} authSecret
 * @property {string} authJwksUrl
 * @property {string} authIssuer
 * @property {string} authAudience
 * @property {string} authSymbolsClaim
 * @property {string} authDelayedClaim
 * @property {string} authVenuesClaim
 * @property {string} authClassClaim
 * @property {string} venues WSPS_VENUES, as given (venues.js reads it)
 * @property {number} maxSessionsPerUser
 * @property {'refuse' | 'close-oldest'} sessionCapPolicy
 * @property {number} sessionLeaseMs
 * @property {boolean} usageRecords
 * @property {number} delayMs
 * @property {string} staticDir
 * @property {string} pageTokenUrl
 * @property {string} workers a count or `auto` (workers.js)
 */

/**
 * @param {Record<string, string | undefined>} env
 * @param {Partial<GatewayConfig>} [overrides] for tests and embedding
 * @returns {Readonly<GatewayConfig>}
 */
export function loadGatewayConfig (env, overrides = {}) {
  const base = /** @type {GatewayConfig} */ (loadConfig(gatewaySettings, env))
  const config = { ...base, ...overrides }
  const problems = redisSettingsProblems(config)
  if (config.adminToken && Buffer.byteLength(config.adminToken) < 16) problems.push('WSPS_ADMIN_TOKEN must be at least 16 bytes (or empty: no admin API)')
  if (config.metricsPort !== 0 && config.metricsPort === config.port) problems.push('WSPS_METRICS_PORT must differ from WSPS_HTTP_PORT (0 serves metrics on the HTTP port)')
  if (!/^(auto|[1-9]|[1-5][0-9]|6[0-4])$/.test(config.workers)) problems.push('WSPS_WORKERS must be a number from 1 to 64 or auto')
  if (config.sendMax <= config.sendHighWater) problems.push('WSPS_SEND_MAX_BYTES must be larger than WSPS_SEND_HIGH_WATER_BYTES')
  if (config.authMode === 'hs256' && Buffer.byteLength(config.authSecret) < 32) problems.push('WSPS_AUTH_HS256_SECRET must be at least 32 bytes when WSPS_AUTH_MODE=hs256')
  if (config.authMode === 'jwks' && !/^https?:\/\//.test(config.authJwksUrl)) problems.push('WSPS_AUTH_JWKS_URL must be an http(s) URL when WSPS_AUTH_MODE=jwks')
  if (config.authDelayedClaim === '' || config.authDelayedClaim === config.authSymbolsClaim) problems.push('WSPS_AUTH_DELAYED_CLAIM must be a claim name other than WSPS_AUTH_SYMBOLS_CLAIM')
  const symbolClaims = [config.authSymbolsClaim, config.authDelayedClaim]
  for (const [env, claim] of [['WSPS_AUTH_VENUES_CLAIM', config.authVenuesClaim], ['WSPS_AUTH_CLASS_CLAIM', config.authClassClaim]]) {
    if (claim === '' || symbolClaims.includes(claim)) problems.push(`${env} must be a claim name other than the symbol claims`)
    symbolClaims.push(claim)
  }
  const venues = parseVenues(config.venues)
  if (!venues.ok) problems.push(...venues.problems)
  if (config.maxSessionsPerUser > 0 && config.authMode === 'none') problems.push('WSPS_MAX_SESSIONS_PER_USER counts sessions per user (the token\'s sub), but WSPS_AUTH_MODE=none checks no token')
  if (config.usageRecords && config.authMode === 'none') problems.push('WSPS_USAGE_RECORDS records each user\'s usage (the token\'s sub), but WSPS_AUTH_MODE=none checks no token')
  if (config.pageTokenUrl && !/^\/(?!\/)[^"<>\s\\]*$/.test(config.pageTokenUrl)) problems.push('WSPS_PAGE_TOKEN_URL must be a same-origin path: starting with one /, without quotes, angle brackets, backslashes or spaces')
  if (config.pageTokenUrl && config.authMode === 'none') problems.push('WSPS_PAGE_TOKEN_URL gives the page tokens, but WSPS_AUTH_MODE=none checks none')
  if (config.peerUrl && !/^https?:\/\/[^/\s]+\/?$/.test(config.peerUrl)) problems.push('WSPS_PEER_URL must be an http(s) URL with no path: http://<host>:<port>')
  if (config.pageTokenUrl && config.staticDir === '-') problems.push('WSPS_PAGE_TOKEN_URL is for the served page, but WSPS_STATIC_DIR=- serves none')
  if (problems.length) throw new ConfigError(problems)
  if (!config.peerUrl) config.peerUrl = `http://127.0.0.1:${config.port}`
  return Object.freeze(config)
}
