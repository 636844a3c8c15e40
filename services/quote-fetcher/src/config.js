// Quote-fetcher settings: the single place their names, defaults and docs live.

import { loadConfig } from '@wsps/shared/config'
import { ConfigError } from '@wsps/shared/errors'
import { brokerSettingsProblems, commonSettings, redisSettingsProblems } from '@wsps/shared/common-settings'
import { compileMapping, DEFAULT_MAPPING } from './providers/stream-mapping.js'
import { checkTemplate } from './providers/stream-templates.js'
import { streamAuthProblems } from './providers/stream-auth.js'
import { BOOK_TEMPLATES, streamBookProblems } from './providers/book-templates.js'

/** @type {readonly import('@wsps/shared/config').Setting[]} */
export const fetcherSettings = Object.freeze([
  ...commonSettings,
  { env: 'WSPS_HTTP_PORT', key: 'port', type: 'int', min: 0, max: 65535, default: 9090, doc: 'HTTP port: `/healthz`, `/readyz`, `/metrics`, and the publish API `POST /v1/quotes` when WSPS_PUBLISH_TOKEN is set.' },
  { env: 'WSPS_PROVIDER', key: 'provider', type: 'enum', values: ['sim', 'http', 'ws-stream', 'push'], default: 'sim', doc: 'Quote source: `sim` (simulated market), `http` (polls WSPS_UPSTREAM_URL), `ws-stream` (one WebSocket to WSPS_STREAM_URL, subscribed to the demanded symbols) or `push` (never fetches: quotes arrive only through the publish API). See docs/feeding.md.' },
  { env: 'WSPS_FETCH_INTERVAL_MS', key: 'fetchIntervalMs', type: 'int', min: 50, max: 3600000, default: 1000, doc: 'How often each watched symbol is fetched (once per interval across all replicas).' },
  { env: 'WSPS_SCHEDULE_TICK_MS', key: 'scheduleTickMs', type: 'int', min: 10, max: 10000, default: 100, doc: 'How often each replica runs the scheduler that turns due symbols into jobs.' },
  { env: 'WSPS_JOB_BATCH_SIZE', key: 'jobBatchSize', type: 'int', min: 1, max: 1000, default: 50, doc: 'Symbols per job (one upstream request for `http`).' },
  { env: 'WSPS_WORKER_CONCURRENCY', key: 'concurrency', type: 'int', min: 1, max: 256, default: 4, doc: 'Jobs one replica works on at once.' },
  { env: 'WSPS_QUOTE_TTL_MS', key: 'quoteTtlMs', type: 'int', min: 1000, max: 604800000, default: 86400000, doc: 'How long the latest quote of a symbol is kept for snapshots after its last update.' },
  { env: 'WSPS_HISTORY_SIZE', key: 'historySize', type: 'int', min: 0, max: 100000, default: 100, doc: 'Ticks of each symbol kept at least in Redis (a stream beside its seq, written by the same publish script; trimmed by whole stream nodes every 16th quote, so up to about 115 more; a symbol a gateway serves delayed keeps what its pin asks for, up to 200000) for clients that reconnect with `since` and for gateways filling a gap after losing their pub/sub connection. 0: no history, no epochs, no recovery (clients get a fresh `snap`). See docs/protocol.md, Recovery.' },
  { env: 'WSPS_HISTORY_TTL_MS', key: 'historyTtlMs', type: 'int', min: 1000, max: 86400000, default: 120000, doc: 'How long a symbol\'s history is kept after its last quote; then the fetcher that published it cuts it to that quote, which stays the snapshot for WSPS_QUOTE_TTL_MS. A client away longer than this cannot recover it.' },
  { env: 'WSPS_PUBLISH_WAIT_REPLICAS', key: 'waitReplicas', type: 'int', min: 0, max: 16, default: 0, doc: 'Replicas that must hold a quote before it is fanned out (every quote: polled, streamed or pushed). > 0: each publish writes seq, history and latest quote, waits (Redis `WAIT`) until this many replicas acknowledged the writes, then publishes; a failover to such a replica then loses no tick a subscriber saw. Costs ingest rate and adds a replication round trip to every quote\'s latency; while fewer replicas are connected every publish waits the full WSPS_PUBLISH_WAIT_TIMEOUT_MS. 0: no waiting (asynchronous replication: the last ticks before a failover may be lost). See docs/operations.md.' },
  { env: 'WSPS_PUBLISH_WAIT_TIMEOUT_MS', key: 'waitTimeoutMs', type: 'int', min: 1, max: 60000, default: 500, doc: 'With WSPS_PUBLISH_WAIT_REPLICAS > 0: the longest a publish waits for the replicas. When fewer acknowledged in time the quotes are published all the same (they are already in the primary\'s history) and counted in `wsps_fetcher_replica_waits_total{result="short"}`.' },
  { env: 'WSPS_SIM_SEED', key: 'simSeed', type: 'int', min: 0, max: 4294967295, default: 42, doc: '`sim`: seed of the simulated market (same seed, same prices).' },
  { env: 'WSPS_BOOK_TTL_MS', key: 'bookTtlMs', type: 'int', min: 1000, max: 604800000, default: 3600000, doc: 'How long a symbol\'s order book is kept in Redis after its last update; then it is gone and its subscribers hold an empty book out of sync until a new one (with a new epoch) is written. See docs/protocol.md, Order books.' },
  { env: 'WSPS_SIM_VOLATILITY', key: 'simVolatility', type: 'number', min: 0, max: 1, default: 0.0008, doc: '`sim`: standard deviation of the relative price move per tick.' },
  { env: 'WSPS_UPSTREAM_URL', key: 'upstreamUrl', type: 'string', default: '', doc: '`http`: URL polled for quotes; `{symbols}` is replaced by the comma-separated symbols. Must answer a JSON array of quotes (or `{"quotes":[...]}`).' },
  { env: 'WSPS_UPSTREAM_TIMEOUT_MS', key: 'upstreamTimeoutMs', type: 'int', min: 10, max: 60000, default: 2000, doc: '`http`: timeout of one request.' },
  { env: 'WSPS_UPSTREAM_RETRIES', key: 'upstreamRetries', type: 'int', min: 0, max: 10, default: 2, doc: '`http`: retries of a failed request, with exponential backoff and jitter, within one fetch interval.' },
  { env: 'WSPS_UPSTREAM_BACKOFF_MS', key: 'upstreamBackoffMs', type: 'int', min: 1, max: 60000, default: 100, doc: '`http`: first retry delay (doubles per retry).' },
  { env: 'WSPS_UPSTREAM_BREAKER_THRESHOLD', key: 'breakerThreshold', type: 'int', min: 1, max: 1000, default: 5, doc: '`http`: consecutive failed requests that open the circuit breaker.' },
  { env: 'WSPS_UPSTREAM_BREAKER_COOLDOWN_MS', key: 'breakerCooldownMs', type: 'int', min: 100, max: 600000, default: 10000, doc: '`http`: how long an open breaker rejects requests before one trial request.' },
  { env: 'WSPS_UPSTREAM_MAX_INFLIGHT', key: 'upstreamMaxInflight', type: 'int', min: 1, max: 1000, default: 8, doc: '`http`: requests in flight at once per replica; jobs beyond wait, never pile up.' },
  { env: 'WSPS_UPSTREAM_TOKEN', key: 'upstreamToken', type: 'string', default: '', secret: true, doc: '`http`: bearer token sent to the upstream.' },
  { env: 'WSPS_PUBLISH_TOKEN', key: 'publishToken', type: 'string', default: '', secret: true, doc: 'Bearer token of the publish API `POST /v1/quotes` (at least 16 characters). Empty: the API is off (404).' },
  { env: 'WSPS_PUBLISH_MAX_BYTES', key: 'publishMaxBytes', type: 'int', min: 1024, max: 67108864, default: 1048576, doc: 'Largest publish request body; larger ones are refused whole (413).' },
  { env: 'WSPS_PUBLISH_RATE', key: 'publishRate', type: 'int', min: 0, max: 10000000, default: 0, doc: 'Quotes per second one publish token may send, per fetcher replica (a request is admitted while the token is within one second of burst, then owes its quotes; over it: 429). 0: unlimited.' },
  { env: 'WSPS_PUBLISH_DEADLINE_MS', key: 'publishDeadlineMs', type: 'int', min: 0, max: 600000, default: 3000, doc: 'A publish that reaches Redis later than this after the fetcher sent it (held in a silent link, or queued through an outage or a failover) is refused as a whole, counted in `wsps_fetcher_quotes_refused_total{reason="late"}`: an old quote is never published as the newest. Measured on Redis\' clock (the fetcher keeps its offset to it), so a fetcher whose clock is off neither refuses its own writes nor lets late ones through. 0: no deadline.' },
  { env: 'WSPS_PUBLISH_IDEMPOTENCY_TTL_MS', key: 'publishIdempotencyTtlMs', type: 'int', min: 1000, max: 86400000, default: 300000, doc: 'How long the publish API remembers a request sent with an `Idempotency-Key` header: a retry with the same key within this window publishes nothing and gets the first answer again, from any fetcher replica. See docs/feeding.md.' },
  { env: 'WSPS_TRACE_SAMPLE', key: 'traceSample', type: 'number', min: 0, max: 1, default: 0.001, doc: 'With WSPS_OTLP_TRACES_URL set: the share of quotes traced from where they enter (each fetched, streamed or pushed quote drawn alone); a publish request whose `traceparent` header is sampled has all its quotes traced, one with an unsampled one none. 0: only such requests.' },
  { env: 'WSPS_PUSH_LEASE_MS', key: 'pushLeaseMs', type: 'int', min: 100, max: 3600000, default: 5000, doc: 'After a quote of a symbol is published through the API, the provider neither fetches nor publishes that symbol for this long (push wins over polling).' },
  { env: 'WSPS_STREAM_URL', key: 'streamUrl', type: 'string', default: '', doc: '`ws-stream`: `ws://` or `wss://` URL of the vendor\'s streaming API. `{key}`, `{secret}`, `{token}` in it become the URL-encoded credential (for vendors that take it in the query); only scheme, host and path are logged.' },
  { env: 'WSPS_STREAM_TOKEN', key: 'streamToken', type: 'string', default: '', secret: true, doc: '`ws-stream`: vendor credential, substituted for `{token}` like WSPS_STREAM_KEY (for vendors with one credential). Never logged.' },
  { env: 'WSPS_STREAM_AUTH', key: 'streamAuth', type: 'string', default: '', doc: '`ws-stream`: message sent first on every connection, e.g. `{"action":"auth","key":{key},"secret":{secret}}`: `{key}`, `{secret}`, `{token}` become the JSON strings of WSPS_STREAM_KEY, WSPS_STREAM_SECRET, WSPS_STREAM_TOKEN (keep credentials out of the template: it is logged). Empty: none.' },
  { env: 'WSPS_STREAM_SUBSCRIBE', key: 'streamSubscribe', type: 'string', default: '{"action":"subscribe","symbols":{symbols}}', doc: '`ws-stream`: subscribe message, a JSON template. `{symbols}` becomes a JSON array of symbols, `{symbols:ITEM}` (inside a JSON string) ITEM once per symbol with its `{symbol}` filled in, joined by commas (`"{symbols:Q.{symbol},T.{symbol}}"`): one message per batch of WSPS_STREAM_SUBSCRIBE_BATCH symbols. `{symbol}` becomes a JSON string: one message per symbol. Checked at start-up. See docs/feeding.md.' },
  { env: 'WSPS_STREAM_UNSUBSCRIBE', key: 'streamUnsubscribe', type: 'string', default: '{"action":"unsubscribe","symbols":{symbols}}', doc: '`ws-stream`: unsubscribe message, placeholders as in WSPS_STREAM_SUBSCRIBE.' },
  { env: 'WSPS_STREAM_SUBSCRIBE_BATCH', key: 'streamSubscribeBatch', type: 'int', min: 0, max: 100000, default: 0, doc: '`ws-stream`: most symbols in one subscribe or unsubscribe message (`{symbols}` forms; vendors cap the size of a message); more symbols are sent as several messages. 0: all in one.' },
  { env: 'WSPS_STREAM_MAPPING', key: 'streamMapping', type: 'string', default: DEFAULT_MAPPING, doc: '`ws-stream`: JSON mapping of vendor messages to quote fields: `records` (dot path to the record array, empty: the message), `match` (field values a message must have), `rules` (list of `{"match":{...},"fields":{...}}` or `{"match":{...},"ignore":true}`, first match wins; a match value may be a list: one of), or for one kind of record `recordMatch` and `fields` (quote field -> dot path in a record). Examples in docs/feeding.md.' },
  { env: 'WSPS_STREAM_BOOKS', key: 'streamBooks', type: 'enum', values: ['none', ...Object.keys(BOOK_TEMPLATES)], default: 'none', doc: '`ws-stream`: how the venue streams order books: `binance-depth` (diff depth events `U`/`u`/`pu` on `<symbol>@depth@100ms`, from a REST snapshot, WSPS_STREAM_BOOK_SNAPSHOT_URL), `kraken-book` (WebSocket v2 `book` channel, snapshot then updates with a CRC32 checksum) or `coinbase-level2` (Advanced Trade `level2`, snapshot then updates; the connection\'s `sequence_num` shows a lost message). The book of a held symbol some gateway holds a book of is subscribed on the stream\'s connection, kept consistent (a gap or a bad checksum: published out of sync, then got again) and written to Redis. `none`: no books. See docs/feeding.md.' },
  { env: 'WSPS_STREAM_BOOK_DEPTH', key: 'streamBookDepth', type: 'int', min: 1, max: 1000, default: 100, doc: '`ws-stream` with WSPS_STREAM_BOOKS: levels per side kept and published: the REST snapshot\'s `limit` (binance-depth: 5, 10, 20, 50, 100, 500 or 1000), the subscribed depth (kraken-book: 10, 25, 100, 500 or 1000), or the top kept of the whole book (coinbase-level2: any). Clients may ask for any depth up to it.' },
  { env: 'WSPS_STREAM_BOOK_SNAPSHOT_URL', key: 'streamBookSnapshotUrl', type: 'string', default: '', doc: '`ws-stream` with WSPS_STREAM_BOOKS=binance-depth: the REST depth snapshot, `{symbol}` and `{depth}` filled in, e.g. `https://api.binance.com/api/v3/depth?symbol={symbol}&limit={depth}`; must answer `{lastUpdateId, bids, asks}`.' },
  { env: 'WSPS_STREAM_OWNER_LEASE_MS', key: 'streamLeaseMs', type: 'int', min: 500, max: 60000, default: 3000, doc: '`ws-stream`: how long a replica\'s claim on a symbol\'s upstream subscription lasts unless renewed; another replica takes the symbol over within this plus WSPS_STREAM_TICK_MS of the holder dying.' },
  { env: 'WSPS_STREAM_TICK_MS', key: 'streamTickMs', type: 'int', min: 50, max: 30000, default: 1000, doc: '`ws-stream`: how often a replica renews its claims and follows demand (subscribes and unsubscribes upstream).' },
  { env: 'WSPS_STREAM_MAX_SYMBOLS', key: 'streamMaxSymbols', type: 'int', min: 1, max: 1000000, default: 10000, doc: '`ws-stream`: most symbols one replica subscribes upstream (vendors cap subscriptions per connection); the rest go to other replicas.' },
  { env: 'WSPS_STREAM_BACKOFF_MS', key: 'streamBackoffMs', type: 'int', min: 10, max: 60000, default: 250, doc: '`ws-stream`: first reconnect delay after the connection drops; doubles per failed attempt up to 30 s, with jitter.' },
  { env: 'WSPS_STREAM_PING_MS', key: 'streamPingMs', type: 'int', min: 100, max: 300000, default: 15000, doc: '`ws-stream`: WebSocket ping interval; a connection without a pong for two intervals is dropped and reconnected.' },
  { env: 'WSPS_STREAM_KEY', key: 'streamKey', type: 'string', default: '', secret: true, doc: '`ws-stream`: vendor key id, substituted for `{key}` in WSPS_STREAM_AUTH, WSPS_STREAM_HEADERS and WSPS_STREAM_URL. Never logged.' },
  { env: 'WSPS_STREAM_SECRET', key: 'streamSecret', type: 'string', default: '', secret: true, doc: '`ws-stream`: vendor secret key, substituted for `{secret}` like WSPS_STREAM_KEY. Never logged.' },
  { env: 'WSPS_STREAM_HEADERS', key: 'streamHeaders', type: 'string', default: '', doc: '`ws-stream`: JSON object of extra headers of the WebSocket upgrade request; `{key}`, `{secret}`, `{token}` in a value become the credential as is, e.g. `{"APCA-API-KEY-ID":"{key}","APCA-API-SECRET-KEY":"{secret}"}`. Empty: none.' },
  { env: 'WSPS_STREAM_AUTH_REPLIES', key: 'streamAuthReplies', type: 'string', default: '', doc: '`ws-stream`: JSON of the vendor\'s answers to authentication: `ok` (required), `refused`, `limited` (each `{path: value}` a record of the answer must have; a list of values means one of them), `code` and `message` (dot paths of the vendor\'s code and message, for the log). Set: the session subscribes only after `ok`, and a `refused` or `limited` answer stops it for WSPS_STREAM_AUTH_BACKOFF_MS. Empty: ready as soon as the connection is open and WSPS_STREAM_AUTH sent. Examples in docs/feeding.md.' },
  { env: 'WSPS_STREAM_AUTH_TIMEOUT_MS', key: 'streamAuthTimeoutMs', type: 'int', min: 100, max: 120000, default: 10000, doc: '`ws-stream` with WSPS_STREAM_AUTH_REPLIES: how long the vendor may take to answer the authentication; then the connection is dropped and retried with the reconnect backoff.' },
  { env: 'WSPS_STREAM_AUTH_BACKOFF_MS', key: 'streamAuthBackoffMs', type: 'int', min: 1000, max: 3600000, default: 60000, doc: '`ws-stream`: how long a replica stays away from the vendor after it refused the credentials or the connection (WSPS_STREAM_AUTH_REPLIES `refused`/`limited`), plus up to 20 % jitter; it gives up its symbols and connection slot meanwhile.' },
  { env: 'WSPS_STREAM_MAX_CONNECTIONS', key: 'streamMaxConnections', type: 'int', min: 0, max: 1000, default: 0, doc: '`ws-stream`: vendor connections the whole fleet may hold at once (vendor plans allow few per key, often one). The replicas elect holders through Redis; the others stand by and one takes over within WSPS_STREAM_OWNER_LEASE_MS plus WSPS_STREAM_TICK_MS of a holder dying. 0: every replica connects.' }
])

/**
 * @typedef {object} FetcherConfig
 * @property {string} host
 * @property {number} port
 * @property {string} nodeName
 * @property {number} statusIntervalMs
 * @property {string} otlpTracesUrl
 * @property {number} traceSample
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
 * @property {'redis' | 'nats'} broker
 * @property {string[]} natsUrls
 * @property {number} publishDeadlineMs
 * @property {number} redisPingIntervalMs
 * @property {number} redisPingTimeoutMs
 * @property {number} redisCommandTimeoutMs
 * @property {'sim' | 'http' | 'ws-stream' | 'push'} provider
 * @property {number} fetchIntervalMs
 * @property {number} scheduleTickMs
 * @property {number} jobBatchSize
 * @property {number} concurrency
 * @property {number} quoteTtlMs
 * @property {number} historySize
 * @property {number} historyTtlMs
 * @property {number} waitReplicas
 * @property {number} waitTimeoutMs
 * @property {number} simSeed
 * @property {number} bookTtlMs
 * @property {number} simVolatility
 * @property {string} upstreamUrl
 * @property {number} upstreamTimeoutMs
 * @property {number} upstreamRetries
 * @property {number} upstreamBackoffMs
 * @property {number} breakerThreshold
 * @property {number} breakerCooldownMs
 * @property {number} upstreamMaxInflight
 * @property {string} upstreamToken
 * @property {string} publishToken
 * @property {number} publishMaxBytes
 * @property {number} publishRate
 * @property {number} publishIdempotencyTtlMs
 * @property {number} pushLeaseMs
 * @property {string} streamUrl
 * @property {string} streamToken
 * @property {string} streamAuth
 * @property {string} streamSubscribe
 * @property {string} streamUnsubscribe
 * @property {number} streamSubscribeBatch
 * @property {string} streamMapping
 * @property {number} streamLeaseMs
 * @property {number} streamTickMs
 * @property {number} streamMaxSymbols
 * @property {number} streamBackoffMs
 * @property {number} streamPingMs
 * @property {string} streamKey
 * @property {string} streamSecret
 * @property {string} streamHeaders
 * @property {string} streamAuthReplies
 * @property {number} streamAuthTimeoutMs
 * @property {number} streamAuthBackoffMs
 * @property {number} streamMaxConnections
 * @property {'none' | import('./providers/book-templates.js').BookTemplateName} streamBooks
 * @property {number} streamBookDepth
 * @property {string} streamBookSnapshotUrl
 */

/**
 * @param {Record<string, string | undefined>} env
 * @param {Partial<FetcherConfig>} [overrides] for tests and embedding
 * @returns {Readonly<FetcherConfig>}
 */
export function loadFetcherConfig (env, overrides = {}) {
  const base = /** @type {FetcherConfig} */ (loadConfig(fetcherSettings, env))
  const config = { ...base, ...overrides }
  const problems = [...redisSettingsProblems(config), ...brokerSettingsProblems(config)]
  if (config.broker === 'nats') problems.push('WSPS_BROKER=nats: the quote-fetcher cannot publish on NATS yet (issue #49): the NATS writer exists (services/shared/src/nats-publish.js), but scheduling, stream claims, demand and the publish API run on Redis only')
  if (config.provider === 'http' && !/^https?:\/\//.test(config.upstreamUrl)) problems.push('WSPS_UPSTREAM_URL must be an http(s) URL when WSPS_PROVIDER=http')
  // BLPOP blocks its connection for up to a second; its PING waits behind it.
  if ((config.provider === 'sim' || config.provider === 'http') && config.redisPingTimeoutMs <= 1000) problems.push('WSPS_REDIS_PING_TIMEOUT_MS must be above 1000 with WSPS_PROVIDER=sim or http: the job pop blocks its connection for up to a second')
  if (config.scheduleTickMs > config.fetchIntervalMs) problems.push('WSPS_SCHEDULE_TICK_MS must not exceed WSPS_FETCH_INTERVAL_MS')
  // A short token is guessable; an empty one means "API off".
  if (config.publishToken && config.publishToken.length < 16) problems.push('WSPS_PUBLISH_TOKEN must be at least 16 characters')
  if (config.provider === 'push' && !config.publishToken) problems.push('WSPS_PROVIDER=push needs WSPS_PUBLISH_TOKEN (the publish API is its only way in)')
  if (config.provider === 'ws-stream') {
    if (!/^wss?:\/\//.test(config.streamUrl)) problems.push('WSPS_STREAM_URL must be a ws(s) URL when WSPS_PROVIDER=ws-stream')
    if (config.streamTickMs >= config.streamLeaseMs) problems.push('WSPS_STREAM_TICK_MS must be below WSPS_STREAM_OWNER_LEASE_MS (claims must be renewed before they lapse)')
    problems.push(...streamAuthProblems(config))
    problems.push(...streamBookProblems(config))
    try { compileMapping(config.streamMapping) } catch (err) { problems.push(`WSPS_STREAM_MAPPING: ${/** @type {Error} */ (err).message}`) }
    for (const [env, template] of /** @type {const} */ ([['WSPS_STREAM_SUBSCRIBE', config.streamSubscribe], ['WSPS_STREAM_UNSUBSCRIBE', config.streamUnsubscribe]])) {
      try { checkTemplate(template, config.streamSubscribeBatch) } catch (err) { problems.push(`${env} ${/** @type {Error} */ (err).message}`) }
    }
  }
  if (problems.length) throw new ConfigError(problems)
  return Object.freeze(config)
}
