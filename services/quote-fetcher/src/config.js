// Quote-fetcher settings: the single place their names, defaults and docs live.

import { ConfigError, loadConfig } from '@wsps/shared/config'
import { commonSettings } from '@wsps/shared/common-settings'

/** @type {readonly import('@wsps/shared/config').Setting[]} */
export const fetcherSettings = Object.freeze([
  ...commonSettings,
  { env: 'WSPS_HTTP_PORT', key: 'port', type: 'int', min: 0, max: 65535, default: 9090, doc: 'HTTP port: `/healthz`, `/readyz`, `/metrics`.' },
  { env: 'WSPS_PROVIDER', key: 'provider', type: 'enum', values: ['sim', 'http'], default: 'sim', doc: 'Quote source: `sim` (simulated market) or `http` (polls WSPS_UPSTREAM_URL).' },
  { env: 'WSPS_FETCH_INTERVAL_MS', key: 'fetchIntervalMs', type: 'int', min: 50, max: 3600000, default: 1000, doc: 'How often each watched symbol is fetched (once per interval across all replicas).' },
  { env: 'WSPS_SCHEDULE_TICK_MS', key: 'scheduleTickMs', type: 'int', min: 10, max: 10000, default: 100, doc: 'How often each replica runs the scheduler that turns due symbols into jobs.' },
  { env: 'WSPS_JOB_BATCH_SIZE', key: 'jobBatchSize', type: 'int', min: 1, max: 1000, default: 50, doc: 'Symbols per job (one upstream request for `http`).' },
  { env: 'WSPS_WORKER_CONCURRENCY', key: 'concurrency', type: 'int', min: 1, max: 256, default: 4, doc: 'Jobs one replica works on at once.' },
  { env: 'WSPS_QUOTE_TTL_MS', key: 'quoteTtlMs', type: 'int', min: 1000, max: 604800000, default: 86400000, doc: 'How long the latest quote of a symbol is kept for snapshots after its last update.' },
  { env: 'WSPS_SIM_SEED', key: 'simSeed', type: 'int', min: 0, max: 4294967295, default: 42, doc: '`sim`: seed of the simulated market (same seed, same prices).' },
  { env: 'WSPS_SIM_VOLATILITY', key: 'simVolatility', type: 'number', min: 0, max: 1, default: 0.0008, doc: '`sim`: standard deviation of the relative price move per tick.' },
  { env: 'WSPS_UPSTREAM_URL', key: 'upstreamUrl', type: 'string', default: '', doc: '`http`: URL polled for quotes; `{symbols}` is replaced by the comma-separated symbols. Must answer a JSON array of quotes (or `{"quotes":[...]}`).' },
  { env: 'WSPS_UPSTREAM_TIMEOUT_MS', key: 'upstreamTimeoutMs', type: 'int', min: 10, max: 60000, default: 2000, doc: '`http`: timeout of one request.' },
  { env: 'WSPS_UPSTREAM_RETRIES', key: 'upstreamRetries', type: 'int', min: 0, max: 10, default: 2, doc: '`http`: retries of a failed request, with exponential backoff and jitter, within one fetch interval.' },
  { env: 'WSPS_UPSTREAM_BACKOFF_MS', key: 'upstreamBackoffMs', type: 'int', min: 1, max: 60000, default: 100, doc: '`http`: first retry delay (doubles per retry).' },
  { env: 'WSPS_UPSTREAM_BREAKER_THRESHOLD', key: 'breakerThreshold', type: 'int', min: 1, max: 1000, default: 5, doc: '`http`: consecutive failed requests that open the circuit breaker.' },
  { env: 'WSPS_UPSTREAM_BREAKER_COOLDOWN_MS', key: 'breakerCooldownMs', type: 'int', min: 100, max: 600000, default: 10000, doc: '`http`: how long an open breaker rejects requests before one trial request.' },
  { env: 'WSPS_UPSTREAM_MAX_INFLIGHT', key: 'upstreamMaxInflight', type: 'int', min: 1, max: 1000, default: 8, doc: '`http`: requests in flight at once per replica; jobs beyond wait, never pile up.' },
  { env: 'WSPS_UPSTREAM_TOKEN', key: 'upstreamToken', type: 'string', default: '', secret: true, doc: '`http`: bearer token sent to the upstream.' }
])

/**
 * @typedef {object} FetcherConfig
 * @property {string} host
 * @property {number} port
 * @property {string} nodeName
 * @property {string} logLevel
 * @property {string} redisUrl
 * @property {'standalone' | 'cluster'} redisMode
 * @property {string} redisUsername
 * @property {string} redisPassword
 * @property {string} redisTlsCaFile
 * @property {string} redisKeyPrefix
 * @property {'sim' | 'http'} provider
 * @property {number} fetchIntervalMs
 * @property {number} scheduleTickMs
 * @property {number} jobBatchSize
 * @property {number} concurrency
 * @property {number} quoteTtlMs
 * @property {number} simSeed
 * @property {number} simVolatility
 * @property {string} upstreamUrl
 * @property {number} upstreamTimeoutMs
 * @property {number} upstreamRetries
 * @property {number} upstreamBackoffMs
 * @property {number} breakerThreshold
 * @property {number} breakerCooldownMs
 * @property {number} upstreamMaxInflight
 * @property {string} upstreamToken
 */

/**
 * @param {Record<string, string | undefined>} env
 * @param {Partial<FetcherConfig>} [overrides] for tests and embedding
 * @returns {Readonly<FetcherConfig>}
 */
export function loadFetcherConfig (env, overrides = {}) {
  const base = /** @type {FetcherConfig} */ (loadConfig(fetcherSettings, env))
  const config = { ...base, ...overrides }
  const problems = []
  if (config.provider === 'http' && !/^https?:\/\//.test(config.upstreamUrl)) problems.push('WSPS_UPSTREAM_URL must be an http(s) URL when WSPS_PROVIDER=http')
  if (config.scheduleTickMs > config.fetchIntervalMs) problems.push('WSPS_SCHEDULE_TICK_MS must not exceed WSPS_FETCH_INTERVAL_MS')
  if (problems.length) throw new ConfigError(problems)
  return Object.freeze(config)
}
