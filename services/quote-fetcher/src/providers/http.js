// Polls a JSON HTTP endpoint for many symbols per request. Each request has
// a timeout; failures are retried with exponential backoff and jitter but
// never past the job's deadline; a circuit breaker stops hammering a failing
// upstream; at most `maxInflight` requests run at once, so slow upstreams
// make jobs wait (and go stale) instead of piling up sockets.

import { BreakerOpenError, UpstreamError, UpstreamFailure } from '../errors.js'
import { CircuitBreaker } from './breaker.js'

const NUMERIC = /** @type {const} */ (['bid', 'ask', 'last', 'bidSize', 'askSize', 'volume', 'open', 'high', 'low', 'prevClose'])

/**
 * Maps one upstream record to quote fields; null when it has no usable symbol.
 * @param {unknown} rec
 * @param {number} now
 * @returns {import('./provider.js').QuoteFields | null}
 */
export function normalize (rec, now) {
  if (!rec || typeof rec !== 'object') return null
  const r = /** @type {Record<string, unknown>} */ (rec)
  if (typeof r.symbol !== 'string') return null
  /** @type {import('./provider.js').QuoteFields} */
  const q = { symbol: r.symbol.toUpperCase(), ts: typeof r.ts === 'number' && r.ts > 0 ? r.ts : now }
  for (const f of NUMERIC) {
    const v = typeof r[f] === 'string' ? Number(r[f]) : r[f]
    if (typeof v === 'number' && Number.isFinite(v)) q[f] = v
  }
  return q
}

/**
 * @param {object} options
 * @param {string} options.url with `{symbols}`
 * @param {number} options.timeoutMs
 * @param {number} options.retries
 * @param {number} options.backoffMs
 * @param {number} options.breakerThreshold
 * @param {number} options.breakerCooldownMs
 * @param {number} options.maxInflight
 * @param {string} [options.token]
 * @param {import('pino').Logger} options.logger
 * @param {{requests: import('prom-client').Counter<'result'>, breaker: import('prom-client').Gauge}} options.metrics
 * @param {() => number} [options.now] Redis' clock (RedisClock.now): the ts of a record that has none
 * @returns {import('./provider.js').Provider}
 */
export function createHttpProvider ({ url, timeoutMs, retries, backoffMs, breakerThreshold, breakerCooldownMs, maxInflight, token, logger, metrics, now: clock = Date.now }) {
  const log = logger.child({ component: 'http-provider' })
  const breaker = new CircuitBreaker({
    threshold: breakerThreshold,
    cooldownMs: breakerCooldownMs,
    onState: (state, lastError) => {
      metrics.breaker.set(state)
      // Say why: with several jobs in flight the breaker often opens before
      // any one job gives up and logs its own error.
      const err = lastError ? { lastError: lastError.message, code: /** @type {UpstreamError} */ (lastError).code } : {}
      log.warn({ state: ['closed', 'half-open', 'open'][state], failures: breaker.failures, ...err }, 'upstream circuit breaker changed state')
    }
  })
  let inflight = 0
  /** @type {(() => void)[]} */
  const waiting = []
  const headers = { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }

  async function slot () {
    if (inflight < maxInflight) {
      inflight++
      return
    }
    await new Promise((resolve) => waiting.push(() => resolve(undefined)))
  }
  function release () {
    const next = waiting.shift()
    if (next) next()
    else inflight--
  }

  /** @param {string[]} symbols */
  async function request (symbols) {
    const target = url.replace('{symbols}', encodeURIComponent(symbols.join(',')))
    let res
    try {
      res = await fetch(target, { headers, signal: AbortSignal.timeout(timeoutMs) })
    } catch (err) {
      const e = /** @type {Error} */ (err)
      const timeout = e.name === 'TimeoutError' || e.name === 'AbortError'
      throw new UpstreamError(timeout ? `upstream timed out after ${timeoutMs} ms` : `upstream unreachable: ${e.message}`, timeout ? UpstreamFailure.TIMEOUT : UpstreamFailure.NETWORK)
    }
    if (!res.ok) {
      await res.body?.cancel()
      throw new UpstreamError(`upstream answered HTTP ${res.status}`, res.status >= 500 ? UpstreamFailure.HTTP_5XX : UpstreamFailure.HTTP_4XX)
    }
    let body
    try {
      body = await res.json()
    } catch {
      throw new UpstreamError('upstream answered invalid JSON', UpstreamFailure.BAD_JSON)
    }
    const list = Array.isArray(body) ? body : body?.quotes
    if (!Array.isArray(list)) throw new UpstreamError('upstream JSON is neither an array nor {"quotes":[...]}', UpstreamFailure.BAD_SHAPE)
    const now = clock()
    const wanted = new Set(symbols)
    return list.map((r) => normalize(r, now)).filter((q) => q !== null && wanted.has(q.symbol))
  }

  return {
    name: 'http',
    needsPrevious: false,
    async fetch (symbols, _previous, deadline) {
      await slot()
      try {
        // A job that waited for a request slot past its deadline is stale:
        // a fresher job for these symbols exists, do not call the upstream.
        if (Date.now() + timeoutMs > deadline) {
          metrics.requests.inc({ result: 'stale' })
          throw new UpstreamError('job went stale waiting for a request slot', UpstreamFailure.STALE)
        }
        for (let attempt = 0; ; attempt++) {
          try {
            const quotes = await breaker.run(() => request(symbols))
            metrics.requests.inc({ result: 'ok' })
            return /** @type {import('./provider.js').QuoteFields[]} */ (quotes)
          } catch (err) {
            const code = err instanceof BreakerOpenError ? 'breaker_open' : (/** @type {UpstreamError} */ (err).code ?? 'error')
            metrics.requests.inc({ result: code })
            const delay = backoffMs * 2 ** attempt * (0.5 + Math.random())
            if (err instanceof BreakerOpenError || attempt >= retries || Date.now() + delay + timeoutMs > deadline) throw err
            log.info({ attempt, code, err: /** @type {Error} */ (err).message, delay: Math.round(delay) }, 'upstream request failed; retrying')
            await new Promise((resolve) => setTimeout(resolve, delay))
          }
        }
      } finally {
        release()
      }
    }
  }
}
