// wsps wire protocol v1: the constants every party shares.
//
// This module is plain ESM with no Node-only or browser-only APIs, so the
// gateway, the browser client, tests and k6 scripts all import the same
// codes and apply quotes by the same rules. docs/protocol.md is the prose
// version of this file; keep them equal.

export const PROTOCOL_VERSION = 1

/**
 * The WebSocket subprotocols of v1 (`Sec-WebSocket-Protocol`), one per
 * encoding of the same frames: JSON text, the default (also when a client
 * asks for none, or for none of these), and Protobuf binary messages of
 * wsps.v1.proto (docs/protocol.md, Binary encoding). SSE is JSON only.
 */
export const Subprotocol = Object.freeze({
  JSON: 'wsps.v1.json',
  PROTO: 'wsps.v1.proto'
})

/** Client -> server operations. */
export const ClientOp = Object.freeze({
  SUB: 'sub',
  UNSUB: 'unsub',
  PING: 'ping',
  /** `{"op":"auth","token":"<jwt>"}`: the first frame when auth is on, or a token refresh later. */
  AUTH: 'auth'
})

/**
 * Delivery modes of a subscription (`"mode"` of a `sub`). `merge` (the
 * default) may merge several ticks of a symbol into one delta naming its
 * `base`, and honours `maxRate`; `distinct` delivers every tick, in seq
 * order, never merged.
 */
export const DeliveryMode = Object.freeze({
  MERGE: 'merge',
  DISTINCT: 'distinct'
})

/** Server -> client operations. */
export const ServerOp = Object.freeze({
  HELLO: 'hello',
  ACK: 'ack',
  ERROR: 'error',
  SNAP: 'snap',
  QUOTES: 'q',
  PONG: 'pong',
  /** Backfill of a bar series: closed bars, oldest first, and the open one (docs/protocol.md, Bars). */
  BARS: 'bars',
  /** A live bar: an update of the open bar, or (`"closed":true`) its final value, once. */
  BAR: 'bar',
  /** An order book's snapshot at a depth (docs/protocol.md, Order books): replaces what the client holds of it. */
  BOOK: 'book',
  /** The levels of a book's window that changed, applying on top of seq `prev` or later. */
  LEVELS: 'levels',
  /**
   * The gateway's feed of these symbols is interrupted (its Redis link lost
   * or silent, a shard failing over): what the client holds is from
   * `since` (ms since the epoch) or before, and must not be shown as live.
   */
  STALE: 'stale',
  /** The symbols are live again (what was missed follows or came before, as gap fill). */
  FRESH: 'fresh'
})

/** @typedef {typeof ServerOp[keyof typeof ServerOp]} ServerOpName the `op` of a server frame */

/**
 * Error codes carried by `{"op":"error","code":...}`. Stable: clients match
 * on these, never on the message text.
 */
export const ErrorCode = Object.freeze({
  /** The text frame is not valid JSON. */
  BAD_JSON: 'BAD_JSON',
  /**
   * A frame not in the connection's encoding: a binary frame on a JSON
   * connection, a text frame on a `wsps.v1.proto` one, or bytes that are
   * not a ClientFrame of wsps.v1.proto.
   */
  BAD_FRAME: 'BAD_FRAME',
  /** `op` is missing or unknown. */
  BAD_OP: 'BAD_OP',
  /** A field has the wrong type or shape (e.g. `symbols` not an array). */
  BAD_REQUEST: 'BAD_REQUEST',
  /** A symbol does not match SYMBOL_PATTERN; `symbols` lists the bad ones. */
  BAD_SYMBOL: 'BAD_SYMBOL',
  /** `mode` is not one of DeliveryMode. */
  BAD_MODE: 'BAD_MODE',
  /** `maxRate` is not a number within Limits.MIN_RATE..MAX_RATE, or was given with `distinct`. */
  BAD_RATE: 'BAD_RATE',
  /** A `sub` or `unsub`'s `bars` is not one of BAR_INTERVALS. Nothing changed; the connection stays. */
  BAD_INTERVAL: 'BAD_INTERVAL',
  /**
   * A bars `sub` also names `mode`, `maxRate` or `since` (quote delivery,
   * not bars'), or its `backfill` is not an integer from 0 to
   * Limits.MAX_BACKFILL. SSE: `bars` without `barSymbols`, or
   * `barSymbols`, `backfill` or `barDelayed` without `bars`.
   * Nothing changed; the connection stays.
   */
  BAD_BARS: 'BAD_BARS',
  /**
   * A book `sub` or `unsub`'s `book` is not one of BOOK_DEPTHS, or comes
   * with `mode`, `maxRate`, `since`, `bars` or `delayed`. Nothing changed;
   * the connection stays.
   */
  BAD_BOOK: 'BAD_BOOK',
  /** A book `sub` names symbols that have no book; `symbols` lists them, the others were subscribed. */
  NO_BOOK: 'NO_BOOK',
  /**
   * A `sub`'s `since` is malformed: not an object of `{seq, epoch}` per
   * symbol, a symbol not in the same `sub`, a seq that is not a
   * non-negative integer, or an epoch that is not 1-32 letters and digits.
   * Nothing was subscribed; the connection stays.
   */
  BAD_SINCE: 'BAD_SINCE',
  /** The subscription would exceed `limits.maxSubscriptions`. */
  TOO_MANY_SUBSCRIPTIONS: 'TOO_MANY_SUBSCRIPTIONS',
  /** More messages than `limits.ratePerSec` (burst `limits.rateBurst`). */
  RATE_LIMITED: 'RATE_LIMITED',
  /** The token does not grant these symbols. */
  NOT_ENTITLED: 'NOT_ENTITLED',
  /**
   * A `sub` with `"delayed": false` (real-time required) names symbols the
   * token grants delayed only (`symbols` lists them); nothing was
   * subscribed. Without `delayed` the gateway serves them delayed.
   */
  DELAYED_ONLY: 'DELAYED_ONLY',
  /**
   * A grant claim of the token (WSPS_AUTH_SYMBOLS_CLAIM or
   * WSPS_AUTH_DELAYED_CLAIM) is there but not an array of symbols and
   * prefixes: the token is rejected as a whole (a 4001 close follows on
   * WebSocket; HTTP 401 on SSE).
   */
  BAD_GRANT: 'BAD_GRANT',
  /** The gateway is draining; reconnect (the close follows). */
  DRAINING: 'DRAINING',
  /**
   * SSE (HTTP 503) and refused upgrades: this gateway is cut off from Redis
   * while other gateways reach it; try another.
   */
  BROKER_UNREACHABLE: 'BROKER_UNREACHABLE',
  /** The token is missing, malformed, expired or not signed by a trusted key (a 4001 close follows on WebSocket; HTTP 401 on SSE). */
  UNAUTHORIZED: 'UNAUTHORIZED',
  /** A request before the connection authenticated with `{"op":"auth"}`; nothing was done. */
  AUTH_REQUIRED: 'AUTH_REQUIRED',
  /** A refreshed token no longer grants these symbols (`symbols`); they were unsubscribed. */
  GRANT_REVOKED: 'GRANT_REVOKED',
  /**
   * The token names no user (`sub`) while sessions per user are capped
   * (WSPS_MAX_SESSIONS_PER_USER) or usage recorded (WSPS_USAGE_RECORDS), its user class claim is not `pro` or
   * `nonpro`, or a refresh names another user than the connection's: the
   * token is rejected (a 4001 close follows on WebSocket; HTTP 401 on SSE).
   */
  BAD_IDENTITY: 'BAD_IDENTITY',
  /**
   * The token's user holds WSPS_MAX_SESSIONS_PER_USER sessions already,
   * over every gateway and transport, and the policy is `refuse`: a 4011
   * close follows.
   */
  SESSION_LIMIT: 'SESSION_LIMIT',
  /** SSE: the client IP holds its connection limit already (HTTP 429). */
  TOO_MANY_CONNECTIONS: 'TOO_MANY_CONNECTIONS',
  /** SSE: the gateway holds its connection limit (HTTP 503); try again later or elsewhere. */
  GATEWAY_FULL: 'GATEWAY_FULL',
  /** SSE: the request is not allowed from this Origin (HTTP 403). */
  BAD_ORIGIN: 'BAD_ORIGIN',
  /** Something failed on the server side; safe to retry. */
  INTERNAL: 'INTERNAL'
})

/**
 * WebSocket close codes the gateway uses. `reconnect` says whether a client
 * should reconnect on its own (with backoff).
 */
export const CloseCode = Object.freeze({
  /** Normal closure requested by the client. */
  NORMAL: 1000,
  /** The gateway is shutting down (pod drain); reconnect elsewhere at once. */
  SERVICE_RESTART: 1012,
  /** The gateway is at its connection limit; reconnect with backoff. */
  TRY_AGAIN_LATER: 1013,
  /** A frame that breaks RFC 6455 (sent by the ws library). */
  PROTOCOL_ERROR: 1002,
  /** A text frame that is not valid UTF-8 (sent by the ws library). */
  INVALID_PAYLOAD: 1007,
  /** Frame larger than `limits.maxPayload` (sent by the ws library). */
  MESSAGE_TOO_BIG: 1009,
  /** Unexpected server error (the gateway sends it when a user's sessions could not be counted); reconnect with backoff. */
  INTERNAL_ERROR: 1011,
  /** The token was rejected (missing, invalid, expired when presented); reconnect only with a new token. */
  UNAUTHORIZED: 4001,
  /** The token's `exp` passed without a refresh (`{"op":"auth"}`); reconnect only with a new token. */
  TOKEN_EXPIRED: 4002,
  /** No `{"op":"auth"}` frame within WSPS_AUTH_TIMEOUT_MS of the upgrade; reconnect with a token. */
  AUTH_TIMEOUT: 4003,
  /** The client did not read fast enough and fell behind; reconnect with backoff. */
  SLOW_CONSUMER: 4008,
  /** Too many protocol violations (errors) in a short time; reconnect with backoff. */
  POLICY_VIOLATION: 4009,
  /** The client kept sending after being rate limited; reconnect with backoff. */
  RATE_LIMIT_EXCEEDED: 4029,
  /** An operator closed the connection (the admin API, `wsps disconnect`); do not reconnect on your own. */
  OPERATOR_DISCONNECT: 4010,
  /** The user holds WSPS_MAX_SESSIONS_PER_USER sessions already (policy `refuse`); do not reconnect on your own. */
  SESSION_LIMIT: 4011,
  /** A newer session of the same user took this one's place (policy `close-oldest`); do not reconnect on your own. */
  SESSION_EVICTED: 4012
})

/**
 * Every way the gateway ends a connection: a close code (CloseCode) and the
 * reason sent with it, named once. The gateway never spells a close reason
 * at a call site; clients match on the code, never on the reason text.
 *
 * @typedef {{readonly code: number, readonly reason: string}} Disconnect
 */
export const Disconnect = Object.freeze({
  /** Over the send high-water mark for longer than WSPS_SLOW_CLOSE_MS. */
  SLOW_CONSUMER: Object.freeze({ code: CloseCode.SLOW_CONSUMER, reason: 'too slow for too long' }),
  /** WSPS_SEND_MAX_BYTES buffered: the reader stopped reading. */
  SEND_BUFFER_FULL: Object.freeze({ code: CloseCode.SLOW_CONSUMER, reason: 'send buffer full' }),
  /** Kept sending far past the message rate limit. */
  RATE_LIMIT_EXCEEDED: Object.freeze({ code: CloseCode.RATE_LIMIT_EXCEEDED, reason: 'rate limit exceeded' }),
  /** Too many protocol errors in a short time. */
  POLICY_VIOLATION: Object.freeze({ code: CloseCode.POLICY_VIOLATION, reason: 'too many invalid messages' }),
  /** A token presented with `{"op":"auth"}` was rejected. */
  UNAUTHORIZED: Object.freeze({ code: CloseCode.UNAUTHORIZED, reason: 'token rejected' }),
  /** The token's `exp` passed without a refresh. */
  TOKEN_EXPIRED: Object.freeze({ code: CloseCode.TOKEN_EXPIRED, reason: 'token expired' }),
  /** No `{"op":"auth"}` frame within WSPS_AUTH_TIMEOUT_MS of the upgrade. */
  AUTH_TIMEOUT: Object.freeze({ code: CloseCode.AUTH_TIMEOUT, reason: 'no auth frame in time' }),
  /** The gateway is draining (shutdown): reconnect elsewhere. */
  SERVICE_RESTART: Object.freeze({ code: CloseCode.SERVICE_RESTART, reason: 'server restart' }),
  /**
   * Redis answers, but this gateway could not restore a subscribed symbol's
   * channel within WSPS_RESTORE_DEADLINE_MS: reconnect elsewhere (and
   * resume with `since`) rather than wait without quotes.
   */
  NOT_RESTORED: Object.freeze({ code: CloseCode.SERVICE_RESTART, reason: 'subscriptions not restored' }),
  /**
   * This gateway has been cut off from Redis for longer than
   * WSPS_ISOLATION_CLOSE_MS while another gateway reached it all along:
   * reconnect elsewhere and resume with `since`.
   */
  ISOLATED: Object.freeze({ code: CloseCode.SERVICE_RESTART, reason: 'cut off from the broker' }),
  /** An operator disconnected this connection or its user (the admin API). */
  OPERATOR_DISCONNECT: Object.freeze({ code: CloseCode.OPERATOR_DISCONNECT, reason: 'disconnected by an operator' }),
  /** The user holds WSPS_MAX_SESSIONS_PER_USER sessions on the fleet already (policy `refuse`). */
  SESSION_LIMIT: Object.freeze({ code: CloseCode.SESSION_LIMIT, reason: 'too many sessions of this user' }),
  /**
   * A newer session of the user took this one's place (policy
   * `close-oldest`), or its lease was lost to one while its gateway could
   * not renew it.
   */
  SESSION_EVICTED: Object.freeze({ code: CloseCode.SESSION_EVICTED, reason: 'replaced by a newer session of this user' }),
  /** The user's sessions could not be counted (Redis did not answer): reconnect with backoff. */
  SESSION_UNCOUNTED: Object.freeze({ code: CloseCode.INTERNAL_ERROR, reason: 'sessions not counted' })
})

/**
 * The `readyState` values of a WebSocket (and of the client's SSE socket,
 * which mimics one).
 */
export const ReadyState = Object.freeze({ CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 })

/** Close codes that mean "get a (new) token first": a client with a token source reconnects with a fresh token, any other stops. */
export const AUTH_CLOSE_CODES = Object.freeze([CloseCode.UNAUTHORIZED, CloseCode.TOKEN_EXPIRED, CloseCode.AUTH_TIMEOUT])

/**
 * Close codes of the client's side, never sent by the gateway: what a
 * client reports for a connection that ended without a close frame, and
 * what it closes with when it gives up on a silent one.
 */
export const ClientCloseCode = Object.freeze({
  /** No close frame came: network loss, a terminated socket (RFC 6455 1006, never on the wire). */
  ABNORMAL: 1006,
  /** The client abandons a connection that stopped answering (a browser cannot terminate a socket, so it closes with this code). */
  ABANDONED: 4000
})

/** Close codes after which a client should NOT reconnect automatically (without a new token). */
export const NO_RECONNECT_CODES = Object.freeze([CloseCode.NORMAL, CloseCode.OPERATOR_DISCONNECT, CloseCode.SESSION_LIMIT, CloseCode.SESSION_EVICTED, ...AUTH_CLOSE_CODES])

/** Limits every party must agree on; the gateway enforces them. */
export const Limits = Object.freeze({
  /** Symbols in one `sub`/`unsub` request; clients split larger sets. */
  MAX_SYMBOLS_PER_REQUEST: 100,
  /** Lowest `maxRate` (updates per second per symbol) a `sub` may ask for. */
  MIN_RATE: 0.1,
  /** Highest `maxRate` a `sub` may ask for. */
  MAX_RATE: 1000,
  /** Most closed bars a bars `sub` may ask for as its `backfill`. */
  MAX_BACKFILL: 500,
  /** Closed bars sent first when a bars `sub` names no `backfill`. */
  DEFAULT_BACKFILL: 50
})

/**
 * The bar intervals a `sub` may name as `bars`, and their length in ms.
 * A bar's `t` is floor(ts / length) * length (ts: the quote's, the
 * fetcher's clock), so every party cuts the same bars from the same ticks.
 */
export const BAR_INTERVALS = Object.freeze({ '1s': 1000, '1m': 60_000, '5m': 300_000 })

/**
 * Every field of a bar, in wire order: `t` its start (ms since the epoch),
 * `o` `h` `l` `c` open, high, low and close of the ticks' `last`, `v` the
 * volume traded in it (the rises of the quotes' cumulative `volume`), `n`
 * its ticks.
 */
export const BAR_FIELDS = Object.freeze(['t', 'o', 'h', 'l', 'c', 'v', 'n'])

/** A valid epoch in a `sub`'s `since` (the server draws them; clients only echo them). */
export const EPOCH_PATTERN = /^[0-9A-Za-z]{1,32}$/

/** A valid ticker: upper-case letters, digits and `. ^ = -`, 1-16 chars. */
export const SYMBOL_PATTERN = /^[A-Z0-9.^=-]{1,16}$/

/**
 * Every field of a full quote, in wire order. `epoch` is there when the
 * fetchers keep history (WSPS_HISTORY_SIZE > 0): it names the unbroken
 * history `seq` counts in, and a client resuming with `since` sends it back.
 * A quote served delayed carries one more field, DELAYED_FIELD.
 */
export const QUOTE_FIELDS = Object.freeze([
  'symbol', 'seq', 'ts', 'bid', 'ask', 'last', 'bidSize', 'askSize',
  'volume', 'open', 'high', 'low', 'prevClose', 'epoch'
])

/**
 * `"delayed": true` is on every quote and delta (in `snap` and `q` frames,
 * replays included) of a symbol served delayed (a delayed grant): the quote
 * is as it was the gateway's delay (WSPS_DELAY_MS) ago, never newer. Quotes
 * served real-time do not have it. Not a quote field of its own: the
 * publisher never sets it, the gateway adds it.
 */
export const DELAYED_FIELD = 'delayed'

// The receiver rules (continues(), QuoteReceiver) live in receiver.js, which
// imports nothing, so a browser can load it beside this file.
export { Outcome, QuoteReceiver, continues } from './receiver.js'
