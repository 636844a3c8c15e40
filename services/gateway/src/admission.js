// Who may open a connection, on any transport (WebSocket, SSE): one path,
// open(), through the gate (drain, capacity, Origin, connections per IP)
// and the token check, to a lease or a coded refusal. Holds the per-IP
// places and the count of connections still being opened; knows nothing of
// sockets or responses: each server words its own refusals.

import { ErrorCode } from '@wsps/protocol'
import { OPEN_ACCESS, notEntitled, ungranted } from './auth.js'

/**
 * @typedef {{ok: true, ip: string}} Admitted ip: the client's place in the
 *   per-IP count (NO_IP_LIMIT when there is no limit)
 * @typedef {{ok: false, status: number, code: string, message: string, result: string, retryAfter?: string, symbols?: string[]}} Refused
 *   status: the HTTP status; code: the protocol ErrorCode; result: the metrics label;
 *   symbols: those the token does not grant (NOT_ENTITLED)
 * @typedef {{ok: true, ip: string, authed: boolean, access: import('./auth.js').Access, symbols: string[]}} Lease
 *   a connection that may open: its place in the per-IP count (held until
 *   settle(), then until release()); authed: false when auth is on and the
 *   token is to come in the first frame; access: the token's (OPEN_ACCESS without one);
 *   symbols: what it subscribes at once (granted)
 */

/**
 * The place of every connection while connections per IP are not limited:
 * nothing is counted, and the peer address is never read (reading it keeps
 * a {address, family, port} record and its string on every socket).
 */
export const NO_IP_LIMIT = ''

/**
 * @typedef {{ok: true, symbols: string[]} | {ok: false, error: import('./protocol.js').ProtocolError}} Symbols
 *   the symbols a request subscribes at once, as parsed
 */

/** @type {Symbols} */
const NO_SYMBOLS = Object.freeze({ ok: true, symbols: [] })

export class Admission {
  #maxConnections
  #maxConnectionsPerIp
  #trustProxy
  /** @type {(origin: string | undefined) => boolean} */
  #originAllowed
  #authenticate
  #connected
  /** @type {Map<string, number>} open or opening connections per client IP */
  #perIp = new Map()
  /** Admitted by the gate but still waiting for the token check. */
  #opening = 0
  #draining = false
  #isolated = false

  /**
   * @param {object} options
   * @param {number} options.maxConnections open (and opening) connections per process
   * @param {number} options.maxConnectionsPerIp 0: no limit
   * @param {readonly string[]} options.allowedOrigins empty or `*`: any
   * @param {boolean} options.trustProxy take the client IP from X-Forwarded-For
   * @param {import('./auth.js').Authenticator | null} options.authenticate null: auth is off
   * @param {() => number} options.connected connections open now
   */
  constructor ({ maxConnections, maxConnectionsPerIp, allowedOrigins, trustProxy, authenticate, connected }) {
    this.#maxConnections = maxConnections
    this.#maxConnectionsPerIp = maxConnectionsPerIp
    this.#trustProxy = trustProxy
    this.#originAllowed = allowedOrigins.length === 0 || allowedOrigins.includes('*')
      ? () => true
      : (o) => o !== undefined && allowedOrigins.includes(o)
    this.#authenticate = authenticate
    this.#connected = connected
  }

  /** Whether connections must present a token. */
  get authRequired () {
    return this.#authenticate !== null
  }

  /** True once drain() was called: nothing is admitted any more. */
  get draining () {
    return this.#draining
  }

  /** New connections are refused from now on (503, DRAINING). */
  drain () {
    this.#draining = true
  }

  /**
   * While isolated (cut off from a Redis other gateways reach: isolation.js)
   * new connections are refused (503, BROKER_UNREACHABLE): an ingress
   * retries another pod, a client another gateway.
   *
   * @param {boolean} on
   */
  isolate (on) {
    this.#isolated = on
  }

  /**
   * The checks every transport shares: drain, capacity, Origin and
   * connections per IP. When it admits, it holds a place for the IP and
   * counts the connection as opening until settle().
   *
   * @param {import('node:http').IncomingMessage} req
   * @returns {Admitted | Refused}
   */
  admit (req) {
    if (this.#draining) return { ok: false, status: 503, code: ErrorCode.DRAINING, message: 'draining', result: 'draining', retryAfter: '1' }
    if (this.#isolated) return { ok: false, status: 503, code: ErrorCode.BROKER_UNREACHABLE, message: 'cut off from the broker', result: 'isolated', retryAfter: '1' }
    // Connections waiting for the token check count too, or a burst that
    // waits for the JWKS would all be admitted at once.
    if (this.#connected() + this.#opening >= this.#maxConnections) {
      return { ok: false, status: 503, code: ErrorCode.GATEWAY_FULL, message: 'gateway full', result: 'full', retryAfter: '5' }
    }
    if (!this.#originAllowed(req.headers.origin)) {
      return { ok: false, status: 403, code: ErrorCode.BAD_ORIGIN, message: 'origin not allowed', result: 'bad_origin' }
    }
    let ip = NO_IP_LIMIT
    if (this.#maxConnectionsPerIp > 0) {
      ip = this.#clientIp(req)
      const held = this.#perIp.get(ip) ?? 0
      if (held >= this.#maxConnectionsPerIp) {
        return { ok: false, status: 429, code: ErrorCode.TOO_MANY_CONNECTIONS, message: 'too many connections from this address', result: 'ip_limit', retryAfter: '5' }
      }
      this.#perIp.set(ip, held + 1)
    }
    this.#opening++
    return { ok: true, ip }
  }

  /**
   * The token check of open(); only when authRequired.
   *
   * @param {string | null} token
   * @returns {Promise<import('./auth.js').AuthResult>}
   */
  verify (token) {
    if (this.#authenticate === null) throw new Error('verify() with auth off')
    return this.#authenticate(token)
  }

  /**
   * The one admission path of every transport: the gate (admit()), the
   * token check when auth is on (and the entitlement check of the symbols
   * the request names), then the gate's drain check again (the token check
   * may have waited). A lease holds the connection's places until settle().
   * With auth off nothing is awaited: a connection opens in the turn it was
   * admitted.
   *
   * @param {import('node:http').IncomingMessage} req
   * @param {string | null} token what the request carries (null: none)
   * @param {{authFrame?: boolean, symbols?: Symbols}} [options]
   *   authFrame: without a token the connection may open unauthenticated,
   *   its token to follow in the first frame (WebSocket); symbols: what the
   *   request subscribes at once (SSE), as parsed: malformed, the request is
   *   refused (400) once the gate let it through; else the token must grant
   *   them
   * @returns {Promise<Lease | Refused>}
   */
  async open (req, token, { authFrame = false, symbols = NO_SYMBOLS } = {}) {
    const gate = this.admit(req)
    if (!gate.ok) return gate
    let leased = false
    try {
      if (!symbols.ok) {
        const { code, message, symbols: bad } = symbols.error
        return { ok: false, status: 400, code, message, result: 'bad_request', symbols: bad }
      }
      /** @type {import('./auth.js').Access} */
      let access = OPEN_ACCESS
      const authed = this.#authenticate === null || token !== null || !authFrame
      if (this.#authenticate !== null && authed) {
        const auth = await this.verify(token)
        if (!auth.ok) return { ok: false, status: 401, code: auth.code ?? ErrorCode.UNAUTHORIZED, message: `unauthorized: ${auth.reason}`, result: 'unauthorized' }
        access = { grants: auth.grants, delayed: auth.delayed, expiresAt: auth.expiresAt, user: auth.user, userClass: auth.userClass }
        const denied = ungranted(access.grants, symbols.symbols)
        if (denied.length) {
          const { code, message } = notEntitled(denied)
          return { ok: false, status: 403, code, message, result: 'not_entitled', symbols: denied }
        }
      }
      if (this.#draining || req.socket.destroyed) {
        return { ok: false, status: 503, code: ErrorCode.DRAINING, message: 'draining', result: this.#draining ? 'draining' : 'aborted' }
      }
      leased = true
      return { ok: true, ip: gate.ip, authed, access, symbols: symbols.symbols }
    } finally {
      if (!leased) this.settle(gate.ip, false)
    }
  }

  /**
   * Ends what admit() (or a lease) started: the connection opened (its IP
   * place is kept until release()) or not.
   *
   * @param {string} ip
   * @param {boolean} opened
   */
  settle (ip, opened) {
    this.#opening--
    if (!opened) this.release(ip)
  }

  /**
   * A connection of `ip` closed: its place is free again.
   *
   * @param {string} ip
   */
  release (ip) {
    if (ip === NO_IP_LIMIT) return
    const n = (this.#perIp.get(ip) ?? 1) - 1
    if (n <= 0) this.#perIp.delete(ip)
    else this.#perIp.set(ip, n)
  }

  /** @param {import('node:http').IncomingMessage} req */
  #clientIp (req) {
    if (this.#trustProxy) {
      const fwd = req.headers['x-forwarded-for']
      const first = (Array.isArray(fwd) ? fwd[0] : fwd)?.split(',')[0]?.trim()
      if (first) return first
    }
    return req.socket.remoteAddress ?? 'unknown'
  }
}
