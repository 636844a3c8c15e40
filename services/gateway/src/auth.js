// Optional JWT check, and per-symbol entitlements from a claim.
// Market-data permissions are per user: a token lists the symbols (or
// prefixes ending in `*`) it grants; without the claim it grants all.
// A second claim (WSPS_AUTH_DELAYED_CLAIM) lists symbols granted delayed
// only, by the same rules: served as they were WSPS_DELAY_MS ago
// (delayed-broker.js). A symbol in both claims is real-time; a token with
// the delayed claim but without the symbols claim grants nothing real-time.
// A claim of any other shape than an array of strings rejects the token
// (BAD_GRANT): an issuer's mistake is told, not taken as "nothing".
//
// Where a token comes from (docs/protocol.md, "Authentication"): the
// `Authorization` header at the upgrade or on GET /sse, the first frame
// `{"op":"auth"}` on a WebSocket (browsers cannot set headers there), and
// `?token=` on GET /sse only (EventSource can send nothing else). Query
// strings end up in access logs, so the logger and nginx mask it.

import { createRemoteJWKSet, jwtVerify } from 'jose'
import { ErrorCode } from '@wsps/protocol'

/**
 * @typedef {(symbol: string) => boolean} Grants
 * @typedef {{grants: Grants | null, delayed: Grants | null, expiresAt: number | null, user: string | null}} Access
 *   what a token lets a connection do and who holds it: grants: every
 *   symbol the token grants, real-time or delayed (null: all); delayed:
 *   those it grants delayed only (null: none); expiresAt: its `exp` in ms;
 *   user: its `sub` (null: none, or auth off), for an operator's view and
 *   disconnect, never for a decision on symbols
 * @typedef {({ok: true} & Access) | {ok: false, reason: string, code?: string}} AuthResult
 *   code: the ErrorCode of a refusal when it is not UNAUTHORIZED
 * @typedef {(token: string | null) => Promise<AuthResult>} Authenticator
 */

/**
 * @param {Pick<import('./config.js').GatewayConfig,
 *   'authMode' | 'authSecret' | 'authJwksUrl' | 'authIssuer' | 'authAudience' | 'authSymbolsClaim' | 'authDelayedClaim'>} config
 * @returns {Authenticator | null} null when auth is off
 */
export function createAuthenticator (config) {
  if (config.authMode === 'none') return null
  const key = config.authMode === 'hs256'
    ? new TextEncoder().encode(config.authSecret)
    : createRemoteJWKSet(new URL(config.authJwksUrl), { timeoutDuration: 5000, cooldownDuration: 30000 })
  /** @type {import('jose').JWTVerifyOptions} */
  const options = { algorithms: config.authMode === 'hs256' ? ['HS256'] : ['RS256', 'ES256', 'EdDSA', 'PS256'] }
  if (config.authIssuer) options.issuer = config.authIssuer
  if (config.authAudience) options.audience = config.authAudience

  return async (token) => {
    if (!token) return { ok: false, reason: 'missing token' }
    try {
      const { payload } = await jwtVerify(token, /** @type {any} */ (key), options)
      const entitled = entitlementsFrom(payload[config.authSymbolsClaim], payload[config.authDelayedClaim])
      if (entitled === null) return { ok: false, reason: `claims ${config.authSymbolsClaim} and ${config.authDelayedClaim} must be arrays of symbols and prefixes`, code: ErrorCode.BAD_GRANT }
      return { ok: true, ...entitled, expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : null, user: typeof payload.sub === 'string' ? payload.sub : null }
    } catch (err) {
      return { ok: false, reason: /** @type {{code?: string}} */ (err).code ?? 'invalid token' }
    }
  }
}

/** What a connection may do with auth off (or before its token): every symbol, no expiry, nobody named. */
export const OPEN_ACCESS = Object.freeze({ grants: null, delayed: null, expiresAt: null, user: null })

/**
 * @param {unknown} claim
 * @returns {Grants | null}
 */
export function grantsFrom (claim) {
  if (claim === undefined) return null
  if (!Array.isArray(claim)) return () => false
  const exact = new Set()
  /** @type {string[]} */
  const prefixes = []
  for (const g of claim) {
    if (typeof g !== 'string') continue
    if (g === '*') return null
    if (g.endsWith('*')) prefixes.push(g.slice(0, -1))
    else exact.add(g)
  }
  return (symbol) => exact.has(symbol) || prefixes.some((p) => symbol.startsWith(p))
}

/**
 * The real-time and delayed grants of a token's two claims.
 *
 * @param {unknown} symbolsClaim
 * @param {unknown} delayedClaim
 * @returns {{grants: Grants | null, delayed: Grants | null} | null} grants:
 *   every symbol granted either way (null: all); delayed: those granted
 *   delayed only (null: none); null when a claim that is there has the
 *   wrong shape (not an array of strings)
 */
export function entitlementsFrom (symbolsClaim, delayedClaim) {
  if (!claimShape(symbolsClaim) || !claimShape(delayedClaim)) return null
  if (delayedClaim === undefined) return { grants: grantsFrom(symbolsClaim), delayed: null }
  // The delayed claim present, the symbols claim absent: a delayed-only
  // token, not one that grants everything real-time.
  const realtime = grantsFrom(symbolsClaim ?? [])
  const later = /** @type {Grants} */ (grantsFrom(delayedClaim) ?? (() => true))
  if (realtime === null) return { grants: null, delayed: null }
  return { grants: (s) => realtime(s) || later(s), delayed: (s) => !realtime(s) && later(s) }
}

/**
 * @param {unknown} claim
 * @returns {boolean} whether it is absent or an array of strings
 */
function claimShape (claim) {
  return claim === undefined || (Array.isArray(claim) && claim.every((g) => typeof g === 'string'))
}

/**
 * The entitlement check, the one every request for symbols goes through
 * (a `sub`, a token refresh, GET /sse).
 *
 * @param {Grants | null} grants a token's grants; null: every symbol
 * @param {readonly string[]} symbols
 * @returns {string[]} those the grants do not cover ([] when all are)
 */
export function ungranted (grants, symbols) {
  return grants === null ? [] : symbols.filter((s) => !grants(s))
}

/**
 * The error that refuses symbols the token does not grant.
 *
 * @param {string[]} symbols the ungranted ones
 * @param {number | string} [id] the request's id
 * @returns {import('./protocol.js').ProtocolError}
 */
export function notEntitled (symbols, id) {
  return { code: ErrorCode.NOT_ENTITLED, message: 'token does not grant these symbols', id, symbols }
}

/**
 * The `Authorization: Bearer` token of a request.
 *
 * @param {import('node:http').IncomingMessage} req
 * @returns {string | null}
 */
export function bearerOf (req) {
  const header = req.headers.authorization
  return header?.startsWith('Bearer ') ? header.slice(7).trim() : null
}

/**
 * @param {string | undefined} url a request URL (path and query)
 * @returns {boolean} whether it carries a `token` query parameter
 */
export function hasQueryToken (url = '') {
  const q = url.indexOf('?')
  return q !== -1 && new URLSearchParams(url.slice(q + 1)).has('token')
}
