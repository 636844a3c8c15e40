// HS256 development tokens (`make up AUTH=hs256`), signed with node:crypto:
// a JWT is two base64url JSON documents and an HMAC over them, no library
// needed. Used by `wsps token` (token.js) and the local stack's token
// endpoint for the page (infra/local/token-server.js). Not for production:
// a real issuer signs tokens for its logged-in users.

import { createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Where `make up AUTH=hs256` writes the secret. */
export const SECRET_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '.run', 'auth-secret')

/**
 * The secret in file, or an error that says how to make one.
 *
 * @param {string} file
 */
export function readSecret (file) {
  try {
    return readFileSync(file, 'utf8').trim()
  } catch (err) {
    throw new Error(`${/** @type {Error} */ (err).message}\n  (start the stack with \`make up AUTH=hs256\`: it writes the secret)`)
  }
}

/**
 * @param {string} secret
 * @param {object} o
 * @param {number} o.ttl seconds until `exp`
 * @param {string[]} [o.symbols] the gateway's default WSPS_AUTH_SYMBOLS_CLAIM; none or empty: every
 *   symbol (or, with delayed, none real-time)
 * @param {string[]} [o.delayed] the default WSPS_AUTH_DELAYED_CLAIM: symbols granted delayed only
 * @param {string} [o.sub]
 * @param {string} [o.symbolsClaim] WSPS_AUTH_SYMBOLS_CLAIM when it is not the default
 * @param {string} [o.delayedClaim] WSPS_AUTH_DELAYED_CLAIM likewise
 * @param {string} [o.userClass] `pro` or `nonpro`, in the default WSPS_AUTH_CLASS_CLAIM ('': none)
 * @param {string[]} [o.venues] venues (MICs) granted real-time, in the default WSPS_AUTH_VENUES_CLAIM
 * @param {string[]} [o.delayedVenues] venues granted delayed only, likewise
 */
export function mintHs256 (secret, { ttl, symbols = [], delayed = [], sub = 'local-user', symbolsClaim = 'symbols', delayedClaim = 'delayedSymbols', userClass = '', venues = [], delayedVenues = [] }) {
  const now = Math.floor(Date.now() / 1000)
  /** @type {Record<string, unknown>} */
  const claims = { sub, iat: now, exp: now + ttl }
  if (symbols.length) claims[symbolsClaim] = symbols
  if (delayed.length) claims[delayedClaim] = delayed
  if (userClass) claims.userClass = userClass
  if (venues.length || delayedVenues.length) claims.venues = { realtime: venues, delayed: delayedVenues }
  return signHs256(secret, claims)
}

/**
 * A token with exactly these claims (the e2e also signs malformed ones).
 *
 * @param {string} secret
 * @param {Record<string, unknown>} claims
 */
export function signHs256 (secret, claims) {
  /** @param {object} doc */
  const b64 = (doc) => Buffer.from(JSON.stringify(doc)).toString('base64url')
  const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`
}
