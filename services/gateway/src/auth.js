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
// Grants by venue: a third claim (WSPS_AUTH_VENUES_CLAIM) grants every
// symbol of a venue (an exchange MIC, from the WSPS_VENUES table:
// venues.js) real-time or delayed: `{"realtime":["XNAS"],"delayed":["XNYS"]}`.
// It adds to the symbol claims, by the same rules (real-time wins); with it
// present an absent symbols claim grants nothing of its own (not all).
//
// Who holds the token: `sub`, the user (required while sessions per user
// are capped: session-cap.js counts them), and the user class claim
// (WSPS_AUTH_CLASS_CLAIM), `pro` or `nonpro`. Absent, the class is `pro`:
// exchanges count a subscriber as professional unless qualified as
// non-professional, so an issuer that says nothing is billed the safe way.
// Any other value rejects the token (BAD_IDENTITY).
//
// Where a token comes from (docs/protocol.md, "Authentication"): the
// `Authorization` header at the upgrade or on GET /sse, the first frame
// `{"op":"auth"}` on a WebSocket (browsers cannot set headers there), and
// `?token=` on GET /sse only (EventSource can send nothing else). Query
// strings end up in access logs, so the logger and nginx mask it.

import { createRemoteJWKSet, jwtVerify } from 'jose'
import { ErrorCode } from '@wsps/protocol'

/** The user classes a token may name; exchanges bill them apart. */
export const USER_CLASSES = Object.freeze(/** @type {const} */ (['pro', 'nonpro']))
/** The class of a token without the claim (see above). */
export const DEFAULT_USER_CLASS = 'pro'

/**
 * @typedef {(symbol: string) => boolean} Grants
 * @typedef {typeof USER_CLASSES[number]} UserClass
 * @typedef {{grants: Grants | null, delayed: Grants | null, expiresAt: number | null, user: string | null, userClass: UserClass | null}} Access
 *   what a token lets a connection do and who holds it: grants: every
 *   symbol the token grants, real-time or delayed (null: all); delayed:
 *   those it grants delayed only (null: none); expiresAt: its `exp` in ms;
 *   user: its `sub` (null: none, or auth off), for an operator's view, its
 *   sessions' count and disconnect, never for a decision on symbols;
 *   userClass: `pro` or `nonpro` (null: auth off)
 * @typedef {({ok: true} & Access) | {ok: false, reason: string, code?: string}} AuthResult
 *   code: the ErrorCode of a refusal when it is not UNAUTHORIZED
 * @typedef {(token: string | null) => Promise<AuthResult>} Authenticator
 */

/**
 * @param {Pick<import('./config.js').GatewayConfig,
 *   'authMode' | 'authSecret' | 'authJwksUrl' | 'authIssuer' | 'authAudience' | 'authSymbolsClaim' | 'authDelayedClaim'>
 *   & Partial<Pick<import('./config.js').GatewayConfig, 'authVenuesClaim' | 'authClassClaim' | 'maxSessionsPerUser' | 'usageRecords'>>} config
 * @param {import('./venues.js').VenueOf} [venueOf] a symbol's venue (venues.js; none: no symbol has one)
 * @returns {Authenticator | null} null when auth is off
 */
export function createAuthenticator (config, venueOf = () => null) {
  if (config.authMode === 'none') return null
  const key = config.authMode === 'hs256'
    ? new TextEncoder().encode(config.authSecret)
    : createRemoteJWKSet(new URL(config.authJwksUrl), { timeoutDuration: 5000, cooldownDuration: 30000 })
  /** @type {import('jose').JWTVerifyOptions} */
  const options = { algorithms: config.authMode === 'hs256' ? ['HS256'] : ['RS256', 'ES256', 'EdDSA', 'PS256'] }
  if (config.authIssuer) options.issuer = config.authIssuer
  if (config.authAudience) options.audience = config.authAudience
  const venuesClaim = config.authVenuesClaim ?? 'venues'
  const classClaim = config.authClassClaim ?? 'userClass'
  // Sessions counted or usage recorded per user: a token must then name one.
  const requireUser = (config.maxSessionsPerUser ?? 0) > 0 || (config.usageRecords ?? false)

  return async (token) => {
    if (!token) return { ok: false, reason: 'missing token' }
    try {
      const { payload } = await jwtVerify(token, /** @type {any} */ (key), options)
      const entitled = entitlementsFrom(payload[config.authSymbolsClaim], payload[config.authDelayedClaim], payload[venuesClaim], venueOf)
      if (entitled === null) return { ok: false, reason: `claims ${config.authSymbolsClaim} and ${config.authDelayedClaim} must be arrays of symbols and prefixes, ${venuesClaim} {"realtime":[MIC...],"delayed":[MIC...]}`, code: ErrorCode.BAD_GRANT }
      const who = identityOf(payload, classClaim, requireUser)
      if (!who.ok) return { ok: false, reason: who.reason, code: ErrorCode.BAD_IDENTITY }
      return { ok: true, ...entitled, expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : null, user: who.user, userClass: who.userClass }
    } catch (err) {
      return { ok: false, reason: /** @type {{code?: string}} */ (err).code ?? 'invalid token' }
    }
  }
}

/** What a connection may do with auth off (or before its token): every symbol, no expiry, nobody named. */
export const OPEN_ACCESS = Object.freeze({ grants: null, delayed: null, expiresAt: null, user: null, userClass: null })

/** Longest `sub` taken: it names Redis keys and log lines. */
export const MAX_USER_LENGTH = 256

/**
 * Who a verified token's payload names.
 *
 * @param {import('jose').JWTPayload} payload
 * @param {string} classClaim WSPS_AUTH_CLASS_CLAIM
 * @param {boolean} requireUser a token without `sub` is rejected
 * @returns {{ok: true, user: string | null, userClass: UserClass} | {ok: false, reason: string}}
 */
export function identityOf (payload, classClaim, requireUser) {
  const { sub } = payload
  if (sub !== undefined && (typeof sub !== 'string' || sub === '' || sub.length > MAX_USER_LENGTH)) return { ok: false, reason: `sub must be a string of 1 to ${MAX_USER_LENGTH} characters` }
  if (sub === undefined && requireUser) return { ok: false, reason: 'sub is required: sessions are counted (or usage recorded) per user' }
  const claimed = payload[classClaim]
  if (claimed !== undefined && !USER_CLASSES.includes(/** @type {any} */ (claimed))) return { ok: false, reason: `claim ${classClaim} must be one of ${USER_CLASSES.join(', ')}` }
  return { ok: true, user: sub ?? null, userClass: /** @type {UserClass | undefined} */ (claimed) ?? DEFAULT_USER_CLASS }
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
 * The real-time and delayed grants of a token's claims.
 *
 * @param {unknown} symbolsClaim
 * @param {unknown} delayedClaim
 * @param {unknown} [venuesClaim] `{"realtime": [MIC...], "delayed": [MIC...]}`, both optional
 * @param {import('./venues.js').VenueOf} [venueOf] a symbol's venue (null: none)
 * @returns {{grants: Grants | null, delayed: Grants | null} | null} grants:
 *   every symbol granted either way (null: all); delayed: those granted
 *   delayed only (null: none); null when a claim that is there has the
 *   wrong shape (not an array of strings; venues: not that object)
 */
export function entitlementsFrom (symbolsClaim, delayedClaim, venuesClaim, venueOf = () => null) {
  if (!claimShape(symbolsClaim) || !claimShape(delayedClaim)) return null
  if (venuesClaim === undefined) return symbolEntitlements(symbolsClaim, delayedClaim)
  const venues = venuesFrom(venuesClaim)
  if (venues === null) return null
  // With venues granted, a symbol claim that is absent grants nothing of its own.
  const bySymbol = symbolEntitlements(symbolsClaim ?? [], delayedClaim)
  const { grants: symbolGrants, delayed: symbolDelayed } = bySymbol
  if (symbolGrants === null) return bySymbol
  /** @param {string} s */
  const realtime = (s) => {
    const venue = venueOf(s)
    return (symbolGrants(s) && !(symbolDelayed?.(s) ?? false)) || (venue !== null && venues.realtime.has(venue))
  }
  /** @param {string} s */
  const later = (s) => {
    const venue = venueOf(s)
    return symbolGrants(s) || (venue !== null && venues.delayed.has(venue))
  }
  return { grants: (s) => realtime(s) || later(s), delayed: (s) => !realtime(s) && later(s) }
}

/**
 * The venues a venues claim grants each way.
 *
 * @param {unknown} claim
 * @returns {{realtime: Set<string>, delayed: Set<string>} | null} null: the wrong shape
 */
function venuesFrom (claim) {
  if (claim === null || typeof claim !== 'object' || Array.isArray(claim)) return null
  const { realtime = [], delayed = [], ...rest } = /** @type {Record<string, unknown>} */ (claim)
  if (Object.keys(rest).length || !Array.isArray(realtime) || !Array.isArray(delayed)) return null
  if (![...realtime, ...delayed].every((v) => typeof v === 'string')) return null
  return { realtime: new Set(realtime), delayed: new Set(delayed) }
}

/**
 * The grants of the two symbol claims alone (both of the right shape).
 *
 * @param {unknown} symbolsClaim
 * @param {unknown} delayedClaim
 * @returns {{grants: Grants | null, delayed: Grants | null}}
 */
function symbolEntitlements (symbolsClaim, delayedClaim) {
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
 * Why a bars or book `sub` is refused whole by the token or the limit, if
 * it is: NOT_ENTITLED for what the token does not grant, then
 * TOO_MANY_SUBSCRIPTIONS when the fresh ones would pass the limit.
 *
 * @param {{grants: ((symbol: string) => boolean) | null, held: number}} holder the token's check and
 *   the subscriptions the connection holds
 * @param {string[]} fresh what the request adds
 * @param {number} maxSubscriptions
 * @param {number | string} [id] the request's
 * @returns {import('./protocol.js').ProtocolError | null}
 */
export function subscriptionRefusal ({ grants, held }, fresh, maxSubscriptions, id) {
  const denied = ungranted(grants, fresh)
  if (denied.length) return notEntitled(denied, id)
  if (held + fresh.length > maxSubscriptions) {
    return { code: ErrorCode.TOO_MANY_SUBSCRIPTIONS, message: `at most ${maxSubscriptions} subscriptions per connection (holding ${held})`, id }
  }
  return null
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
