// Optional JWT check, and per-symbol entitlements from a claim.
// Market-data permissions are per user: a token lists the symbols (or
// prefixes ending in `*`) it grants; without the claim it grants all.
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
 * @typedef {{ok: true, grants: Grants | null, expiresAt: number | null} | {ok: false, reason: string}} AuthResult
 * @typedef {(token: string | null) => Promise<AuthResult>} Authenticator
 */

/**
 * @param {Pick<import('./config.js').GatewayConfig,
 *   'authMode' | 'authSecret' | 'authJwksUrl' | 'authIssuer' | 'authAudience' | 'authSymbolsClaim'>} config
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
      return {
        ok: true,
        grants: grantsFrom(payload[config.authSymbolsClaim]),
        expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : null
      }
    } catch (err) {
      return { ok: false, reason: /** @type {{code?: string}} */ (err).code ?? 'invalid token' }
    }
  }
}

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
