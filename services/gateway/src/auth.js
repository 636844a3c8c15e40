// Optional JWT check at upgrade, and per-symbol entitlements from a claim.
// Market-data permissions are per user: a token lists the symbols (or
// prefixes ending in `*`) it grants; without the claim it grants all.

import { createRemoteJWKSet, jwtVerify } from 'jose'

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
 * The token of an upgrade request: `Authorization: Bearer` or `?token=`.
 *
 * @param {import('node:http').IncomingMessage} req
 * @returns {string | null}
 */
export function tokenOf (req) {
  const header = req.headers.authorization
  if (header?.startsWith('Bearer ')) return header.slice(7).trim()
  const q = (req.url ?? '').indexOf('?')
  if (q === -1) return null
  return new URLSearchParams(req.url?.slice(q + 1)).get('token')
}
