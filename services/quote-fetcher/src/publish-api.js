// The publish API: `POST /v1/quotes` on the fetcher's HTTP port, for teams
// that have their own feed. A request is checked whole before anything is
// published (all-or-nothing), then published in one pipelined round trip
// through the same Lua script as fetched quotes, so seq, snapshots and
// fan-out work exactly as for them. Errors are a documented contract
// (docs/feeding.md): clients match on `code`, never on `message`.
// A request with an `Idempotency-Key` is published at most once per key
// within WSPS_PUBLISH_IDEMPOTENCY_TTL_MS, across replicas (idempotency.js);
// a retry gets the first answer again.

import { bearerCheck } from '@wsps/shared/bearer'
import { applyBook, canonicalBook } from '@wsps/shared/books'
import { SYMBOL_PATTERN } from '@wsps/protocol'
import { RateLimit } from '@wsps/shared/rate-limit'
import { remoteParent } from '@wsps/shared/tracing'
import { IDEMPOTENCY_KEY_PATTERN } from './idempotency.js'
import { NUMERIC_FIELDS } from './providers/stream-mapping.js'

export const PUBLISH_PATH = '/v1/quotes'
/** Order books: snapshots and level updates (docs/feeding.md, Order books). */
export const BOOKS_PATH = '/v1/books'

/** Every error the API answers, with its HTTP status. */
export const PublishError = Object.freeze({
  /** The API is off: WSPS_PUBLISH_TOKEN is not set on this fetcher. */
  PUBLISH_DISABLED: 404,
  /** No `Authorization: Bearer` header, or the wrong token. */
  UNAUTHORIZED: 401,
  /** The body is not JSON / NDJSON, or not `{"quotes":[...]}` (`{"books":[...]}`). */
  BAD_BODY: 400,
  /** The Idempotency-Key header is not 1-128 printable ASCII characters. */
  BAD_IDEMPOTENCY_KEY: 400,
  /** A quote breaks the rules; `index` says which (0-based). */
  BAD_QUOTE: 400,
  /** A book update breaks the rules (a level not `[price, size]` of decimal strings, a price twice, a crossed snapshot, ...); `index` says which. */
  BAD_BOOK: 400,
  /** The body is larger than WSPS_PUBLISH_MAX_BYTES. */
  BODY_TOO_LARGE: 413,
  /** Content-Type is neither application/json nor application/x-ndjson. */
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** A request with the same Idempotency-Key is being published; retry after `Retry-After` seconds. */
  IDEMPOTENCY_IN_PROGRESS: 409,
  /** The Idempotency-Key was used, within the window, for a request with another body. */
  IDEMPOTENCY_KEY_REUSED: 422,
  /** The token is over WSPS_PUBLISH_RATE; retry after `Retry-After` seconds. */
  RATE_LIMITED: 429,
  /** Redis failed; some quotes of the request may have been published. */
  UNAVAILABLE: 503
})

/** @typedef {keyof typeof PublishError} PublishErrorCode */

class RequestError extends Error {
  /**
   * @param {PublishErrorCode} code
   * @param {string} message
   * @param {Record<string, unknown>} [extra] more fields of the answer
   */
  constructor (code, message, extra = {}) {
    super(message)
    this.code = code
    this.extra = extra
  }
}

const QUOTE_KEYS = new Set(['symbol', 'ts', ...NUMERIC_FIELDS])

/**
 * Checks one quote of a request; throws a BAD_QUOTE RequestError.
 * @param {unknown} raw
 * @param {number} index
 * @param {number} now
 * @returns {import('./providers/provider.js').QuoteFields}
 */
export function validQuote (raw, index, now) {
  const bad = (/** @type {string} */ why) => new RequestError('BAD_QUOTE', `quote ${index}: ${why}`, { index })
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw bad('not an object')
  const r = /** @type {Record<string, unknown>} */ (raw)
  if (typeof r.symbol !== 'string' || !SYMBOL_PATTERN.test(r.symbol)) throw bad(`symbol must match ${SYMBOL_PATTERN}`)
  /** @type {import('./providers/provider.js').QuoteFields} */
  const q = { symbol: r.symbol, ts: now }
  for (const [k, v] of Object.entries(r)) {
    if (k === 'symbol') continue
    if (!QUOTE_KEYS.has(k)) throw bad(`unknown field "${k}"`)
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`${k} must be a finite number`)
    if (k === 'ts' && v <= 0) throw bad('ts must be a positive epoch in ms')
    q[/** @type {'bid'} */ (k)] = v
  }
  return q
}

/**
 * The quotes of a body: `{"quotes":[...]}` as JSON, or one quote per line
 * as NDJSON (blank lines skipped).
 * @param {string} text
 * @param {boolean} ndjson
 * @returns {unknown[]}
 */
export function parseBody (text, ndjson) {
  if (ndjson) {
    const out = []
    const lines = text.split('\n')
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].trim()
      if (line === '') continue
      try { out.push(JSON.parse(line)) } catch { throw new RequestError('BAD_BODY', `line ${i + 1} is not JSON`, { line: i + 1 }) }
    }
    return out
  }
  let body
  try { body = JSON.parse(text) } catch { throw new RequestError('BAD_BODY', 'body is not JSON') }
  if (!body || !Array.isArray(body.quotes)) throw new RequestError('BAD_BODY', 'body must be {"quotes":[...]}')
  return body.quotes
}

const BOOK_KEYS = new Set(['symbol', 'ts', 'snapshot', 'sync', 'bids', 'asks', 'sourceSeq', 'sourcePrev'])

/**
 * Checks one book update of a request and puts it in canonical form;
 * throws a BAD_BOOK RequestError. `snapshot: true`: the whole book;
 * `sync: false`: the source lost its sequence (no levels); else a delta.
 *
 * @param {unknown} raw
 * @param {number} index
 * @param {number} now the ts of an update sent without one
 * @returns {import('@wsps/shared/books').BookUpdate}
 */
export function validBook (raw, index, now) {
  const bad = (/** @type {string} */ why) => new RequestError('BAD_BOOK', `book ${index}: ${why}`, { index })
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw bad('not an object')
  const r = /** @type {Record<string, unknown>} */ (raw)
  for (const k of Object.keys(r)) if (!BOOK_KEYS.has(k)) throw bad(`unknown field "${k}"`)
  if (typeof r.symbol !== 'string' || !SYMBOL_PATTERN.test(r.symbol)) throw bad(`symbol must match ${SYMBOL_PATTERN}`)
  if (r.ts !== undefined && (typeof r.ts !== 'number' || !(r.ts > 0))) throw bad('ts must be a positive epoch in ms')
  if (r.snapshot !== undefined && r.snapshot !== true) throw bad('snapshot must be true when given')
  if (r.sync !== undefined && r.sync !== false) throw bad('sync must be false when given')
  if (r.snapshot && r.sync === false) throw bad('snapshot and sync:false together')
  if (r.sync === false && (r.bids !== undefined || r.asks !== undefined)) throw bad('sync:false carries no levels')
  const kind = r.snapshot ? 'snapshot' : r.sync === false ? 'unsync' : 'delta'
  const seqOf = (/** @type {unknown} */ v) => Number.isSafeInteger(v) && /** @type {number} */ (v) >= 0
  if (r.sourceSeq !== undefined && !seqOf(r.sourceSeq)) throw bad('sourceSeq must be an integer ≥ 0')
  if (r.sourceSeq !== undefined && kind === 'unsync') throw bad('sync:false carries no sourceSeq')
  if (r.sourcePrev !== undefined) {
    if (kind !== 'delta') throw bad('sourcePrev is a delta\'s')
    if (!seqOf(r.sourcePrev) || r.sourceSeq === undefined || /** @type {number} */ (r.sourcePrev) >= /** @type {number} */ (r.sourceSeq)) throw bad('sourcePrev must be an integer ≥ 0 below sourceSeq')
  }
  const update = canonicalBook({
    symbol: r.symbol,
    kind,
    bids: r.bids,
    asks: r.asks,
    ts: typeof r.ts === 'number' ? r.ts : now,
    ...(r.sourceSeq === undefined ? {} : { sourceSeq: /** @type {number} */ (r.sourceSeq) }),
    ...(r.sourcePrev === undefined ? {} : { sourcePrev: /** @type {number} */ (r.sourcePrev) })
  })
  if (typeof update === 'string') throw bad(update)
  return update
}

/**
 * The request's Idempotency-Key, or null without one; throws BAD_IDEMPOTENCY_KEY.
 * @param {string | string[] | undefined} header
 * @returns {string | null}
 */
export function idempotencyKey (header) {
  if (header === undefined) return null
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(header)) {
    throw new RequestError('BAD_IDEMPOTENCY_KEY', 'Idempotency-Key must be 1-128 printable ASCII characters')
  }
  return header
}

/**
 * @param {import('fastify').FastifyInstance<any, any, any, any>} app
 * @param {object} options
 * @param {string} options.token WSPS_PUBLISH_TOKEN; empty: every request gets PUBLISH_DISABLED
 * @param {number} options.maxBytes
 * @param {number} options.rate quotes/s per token, 0: unlimited
 * @param {number} options.pushLeaseMs
 * @param {import('./publisher.js').Publisher} options.publisher
 * @param {import('./idempotency.js').IdempotencyRecords} options.idempotency
 * @param {import('./metrics.js').FetcherMetrics} options.metrics
 * @param {() => number} [options.now] Redis' clock (RedisClock.now): the ts of a quote sent without one,
 *   on the clock the providers' quotes are stamped on, so the publish script orders them right
 * @param {import('@wsps/shared/books').BookStore} options.books where order books are written
 */
export function registerPublishApi (app, { token, maxBytes, rate, pushLeaseMs, publisher, idempotency, metrics, now: clock = Date.now, books }) {
  const authorized = token ? bearerCheck(token) : null
  const limit = rate > 0 ? new RateLimit(rate, rate) : null
  /** Per token: the rate limiter's TAT (one token today, keyed for more). @type {Map<string, number>} */
  const tats = new Map()

  app.register(async (scope) => {
    // Own parsers in this scope only: raw text in, our error codes out.
    scope.removeAllContentTypeParsers()
    for (const type of ['application/json', 'application/x-ndjson']) {
      scope.addContentTypeParser(type, { parseAs: 'string', bodyLimit: maxBytes }, (_req, body, done) => done(null, body))
    }

    scope.setErrorHandler((/** @type {import('fastify').FastifyError} */ err, _req, reply) => {
      /** @type {RequestError} */
      let e
      if (err instanceof RequestError) e = err
      else if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') e = new RequestError('BODY_TOO_LARGE', `body over ${maxBytes} bytes`, { maxBytes })
      else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') e = new RequestError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json or application/x-ndjson')
      else if ((err.statusCode ?? 500) < 500) e = new RequestError('BAD_BODY', err.message)
      else {
        reply.log.warn({ err: err.message }, 'publish failed')
        e = new RequestError('UNAVAILABLE', 'publishing failed; some quotes may have been published')
      }
      metrics.publishRequests.inc({ outcome: e.code })
      reply.code(PublishError[e.code]).send({ code: e.code, message: e.message, ...e.extra })
    })

    /**
     * Within the rate, or throws RATE_LIMITED.
     *
     * @param {import('fastify').FastifyReply} reply
     * @param {number} n quotes or book updates
     * @param {number} now
     */
    const admit = (reply, n, now) => {
      if (!limit || n === 0) return
      const tat = limit.take(tats.get(token) ?? 0, now, n)
      if (tat < 0) {
        const wait = Math.max(1, Math.ceil(((tats.get(token) ?? now) - now - limit.tolerance) / 1000))
        reply.header('retry-after', String(wait))
        throw new RequestError('RATE_LIMITED', `over ${rate} quotes/s`, { retryAfterS: wait })
      }
      tats.set(token, tat)
    }
    const route = {
      bodyLimit: maxBytes,
      // Refuse before reading the body: an unauthenticated client must not
      // make us buffer megabytes.
      onRequest: async (/** @type {import('fastify').FastifyRequest} */ req) => {
        if (!authorized) throw new RequestError('PUBLISH_DISABLED', 'the publish API is off (WSPS_PUBLISH_TOKEN is not set)')
        if (!authorized(req.headers.authorization)) throw new RequestError('UNAUTHORIZED', 'missing or wrong bearer token')
      }
    }

    // Books: checked whole, then written in order, each through the book
    // script (a delta that does not apply is refused whole and named).
    scope.post(BOOKS_PATH, route, async (req, reply) => {
      let body
      try { body = JSON.parse(/** @type {string} */ (req.body)) } catch { throw new RequestError('BAD_BODY', 'body is not JSON') }
      if (!body || !Array.isArray(body.books)) throw new RequestError('BAD_BODY', 'body must be {"books":[...]}')
      const now = clock()
      const updates = body.books.map((/** @type {unknown} */ b, /** @type {number} */ i) => validBook(b, i, now))
      admit(reply, updates.length, now)
      /** @type {({symbol: string, seq?: number, epoch?: string, refused?: string})[]} */
      const results = []
      for (const u of updates) {
        const r = await applyBook(books.redis, books.keys, u, { ttlMs: books.ttlMs, pushLeaseMs, sharded: books.sharded })
        metrics.books.inc({ result: r.refused ?? 'written' })
        results.push({ symbol: u.symbol, ...r })
      }
      metrics.publishRequests.inc({ outcome: 'accepted' })
      return { accepted: results.filter((r) => r.refused === undefined).length, books: results }
    })

    scope.post(PUBLISH_PATH, route, async (req, reply) => {
      const startTime = Date.now()
      const key = idempotencyKey(req.headers['idempotency-key'])
      const ndjson = /^application\/x-ndjson/.test(req.headers['content-type'] ?? '')
      const text = /** @type {string} */ (req.body)
      const raw = parseBody(text, ndjson)
      const now = clock()
      const quotes = raw.map((q, i) => validQuote(q, i, now))
      // Checked whole first: a refused request takes no key.
      const taken = key === null ? null : await idempotency.take(key, `${ndjson ? 'ndjson' : 'json'}\n${text}`)
      if (taken && taken.state !== 'taken') {
        if (!taken.same) throw new RequestError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used for another request')
        if (taken.state === 'pending') {
          reply.header('retry-after', '1')
          throw new RequestError('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key is being published', { retryAfterS: 1 })
        }
        metrics.publishRequests.inc({ outcome: 'replayed' })
        reply.header('idempotent-replayed', 'true')
        return taken.answer
      }
      let answer
      try {
        admit(reply, quotes.length, now)
        const { published, refused } = await publisher.publish(quotes, { pushLeaseMs, trace: { parent: remoteParent(req.headers.traceparent), startTime } })
        // Pushed quotes hold no claim: only a ts older than the symbol's
        // newest can refuse one (scripts.js, PUBLISH).
        answer = refused.old ? { accepted: published, refused: { old: refused.old } } : { accepted: published }
        metrics.publishQuotes.inc(published)
        metrics.published.inc(published)
      } catch (err) {
        // Not published (or, after a Redis failure, maybe in part): the key
        // is free again for the retry, which publishes only what did not go
        // out (a pushed quote that is its symbol's newest, or older, is
        // refused as old: scripts.js). Failing that the key stays pending, and
        // a retry gets IDEMPOTENCY_IN_PROGRESS until the window ends.
        if (taken) await idempotency.forget(taken.record).catch(() => {})
        throw err
      }
      metrics.publishRequests.inc({ outcome: 'accepted' })
      if (taken) {
        await idempotency.settle(taken.record, taken.fingerprint, answer).catch((/** @type {Error} */ err) => {
          // Published: a retry must not publish it again. The record stays
          // pending, and retries get IDEMPOTENCY_IN_PROGRESS until the window ends.
          reply.log.warn({ err: err.message }, 'publish: could not store the answer of an idempotent request')
        })
      }
      return answer
    })
  })
}
