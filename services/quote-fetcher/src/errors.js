// The quote-fetcher's own errors, each code defined once here (beside the
// ones both services share, @wsps/shared/errors). docs/operations.md,
// "Error codes in the logs", lists them (a test keeps the two equal).

/** Every code of this registry. */
export const Code = Object.freeze({
  /** The http provider's circuit breaker is open: the upstream kept failing, requests wait out the cooldown. */
  BREAKER_OPEN: 'WSPS_ERR_BREAKER_OPEN',
  /** The vendor refused the stream's credentials (ws-stream): not retried until the backoff. */
  STREAM_AUTH_REFUSED: 'WSPS_ERR_STREAM_AUTH_REFUSED',
  /** The vendor refused a connection over its limit for the key (Alpaca: 406). */
  STREAM_CONNECTION_LIMIT: 'WSPS_ERR_STREAM_CONNECTION_LIMIT',
  /** The vendor did not answer the authentication within WSPS_STREAM_AUTH_TIMEOUT_MS. */
  STREAM_AUTH_TIMEOUT: 'WSPS_ERR_STREAM_AUTH_TIMEOUT',
  /** A venue book lost its sequence (a gap, a bad checksum, a stale snapshot): published out of sync until a new snapshot. */
  STREAM_BOOK_RESYNC: 'WSPS_ERR_STREAM_BOOK_RESYNC',
  /** A venue book's REST snapshot failed (no answer, an error, not a snapshot): fetched again after WSPS_STREAM_BACKOFF_MS. */
  STREAM_BOOK_SNAPSHOT: 'WSPS_ERR_STREAM_BOOK_SNAPSHOT'
})

export class BreakerOpenError extends Error {
  constructor () {
    super('circuit breaker open: upstream is failing')
    this.name = 'BreakerOpenError'
    this.code = Code.BREAKER_OPEN
  }
}

/**
 * Why an http provider request failed: the `result` label of
 * wsps_fetcher_upstream_requests_total and the `code` of its log line.
 */
export const UpstreamFailure = Object.freeze({
  TIMEOUT: 'timeout',
  NETWORK: 'network',
  HTTP_5XX: 'http_5xx',
  HTTP_4XX: 'http_4xx',
  BAD_JSON: 'bad_json',
  BAD_SHAPE: 'bad_shape',
  /** The job's deadline passed while it waited for a request slot. */
  STALE: 'stale'
})

export class UpstreamError extends Error {
  /** @param {string} message @param {(typeof UpstreamFailure)[keyof typeof UpstreamFailure]} code */
  constructor (message, code) {
    super(message)
    this.name = 'UpstreamError'
    this.code = code
  }
}
