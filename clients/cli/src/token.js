// `wsps token` mints a development token (HS256, the secret of `make up
// AUTH=hs256` or any secret file); `wsps check-token` says what a gateway
// with the given auth settings would make of a token: accepted with which
// grants until when, or refused with the code a client would get. It checks
// with the gateway's own config loader and authenticator, so the answer and
// the messages are the gateway's.

import { ErrorCode } from '@wsps/protocol'
import { USER_CLASSES, createAuthenticator } from '@wsps/gateway/auth'
import { loadGatewayConfig } from '@wsps/gateway/config'
import { CliError, CliErrorCode, Exit, usage } from './errors.js'
import { emit, readAll } from './io.js'
import { SECRET_FILE, mintHs256, readSecret } from './jwt.js'

/**
 * @typedef {import('./io.js').Io} Io
 * @typedef {import('./verbs.js').Parsed} Parsed
 */

const CLAIM_OPTIONS = /** @type {const} */ ({
  'symbols-claim': { type: 'string', default: 'symbols' },
  'delayed-claim': { type: 'string', default: 'delayedSymbols' }
})

/** @param {string} list comma-separated */
const symbolList = (list) => list.split(',').map((s) => s.trim()).filter(Boolean)

/** @type {import('./verbs.js').Verb} */
export const token = {
  name: 'token',
  summary: 'mint a development token (HS256) for a secret file',
  usage: `wsps token [--secret-file FILE] [--ttl SECONDS] [--delayed SYMBOLS] [--sub ID] [--class pro|nonpro]
                 [--venues MICS] [--delayed-venues MICS] [SYMBOL...]

  Prints a token signed with the secret in FILE (default: .run/auth-secret,
  written by \`make up AUTH=hs256\`), valid --ttl seconds (default 3600),
  granting the SYMBOLs real-time (prefixes end in *; none: every symbol) and
  --delayed (comma-separated) delayed only. --symbols-claim and
  --delayed-claim name the claims when the gateway's WSPS_AUTH_*_CLAIM are
  not the defaults. --class names the user class (userClass claim; none:
  the gateway takes pro); --venues and --delayed-venues (comma-separated
  MICs) grant whole venues of the gateway's WSPS_VENUES (venues claim).
  --json prints {"token", "claims"}.

  TOKEN=$(wsps token AAPL 'MS*')
  wsps token --ttl 5 --delayed 'NV*' MSFT`,
  options: {
    'secret-file': { type: 'string', default: SECRET_FILE },
    ttl: { type: 'string', default: '3600' },
    delayed: { type: 'string', default: '' },
    sub: { type: 'string', default: 'local-user' },
    class: { type: 'string', default: '' },
    venues: { type: 'string', default: '' },
    'delayed-venues': { type: 'string', default: '' },
    ...CLAIM_OPTIONS
  },
  /**
   * @param {Parsed} args
   * @param {Io} io
   */
  async run ({ values, positionals }, io) {
    const ttl = Number(values.ttl)
    if (!Number.isInteger(ttl) || ttl < 1) throw usage(`--ttl must be a whole number of seconds, got ${values.ttl}`)
    const userClass = String(values.class)
    if (userClass && !USER_CLASSES.includes(/** @type {any} */ (userClass))) throw usage(`--class must be one of ${USER_CLASSES.join(', ')}, got ${userClass}`)
    let secret
    try {
      secret = readSecret(String(values['secret-file']))
    } catch (err) {
      throw new CliError(CliErrorCode.UNREADABLE, /** @type {Error} */ (err).message)
    }
    const jwt = mintHs256(secret, {
      ttl,
      symbols: positionals,
      delayed: symbolList(String(values.delayed)),
      sub: String(values.sub),
      symbolsClaim: String(values['symbols-claim']),
      delayedClaim: String(values['delayed-claim']),
      userClass,
      venues: symbolList(String(values.venues)),
      delayedVenues: symbolList(String(values['delayed-venues']))
    })
    emit(io, values.json ? { token: jwt, claims: claimsOf(jwt) } : jwt)
    return Exit.OK
  }
}

/** @type {import('./verbs.js').Verb} */
export const checkToken = {
  name: 'check-token',
  summary: 'what a gateway with these auth settings makes of a token',
  usage: `wsps check-token (--secret-file FILE | --jwks-url URL) [--issuer ISS] [--audience AUD] TOKEN|-

  Checks TOKEN (- reads it from stdin) as a gateway with WSPS_AUTH_MODE=hs256
  and that secret (or jwks and that URL), WSPS_AUTH_ISSUER and
  WSPS_AUTH_AUDIENCE would: prints its subject, expiry and grants, or why it
  is refused and the error code a client gets (UNAUTHORIZED, BAD_GRANT).
  Exits 1 when refused. --symbols-claim and --delayed-claim as for token.`,
  options: {
    'secret-file': { type: 'string' },
    'jwks-url': { type: 'string' },
    issuer: { type: 'string', default: '' },
    audience: { type: 'string', default: '' },
    ...CLAIM_OPTIONS
  },
  /**
   * @param {Parsed} args
   * @param {Io} io
   */
  async run ({ values, positionals }, io) {
    if (positionals.length !== 1) throw usage('give one token (or - to read it from stdin)')
    const secretFile = values['secret-file']
    const jwksUrl = values['jwks-url']
    if ((secretFile === undefined) === (jwksUrl === undefined)) throw usage('give --secret-file or --jwks-url (one of them)')
    const jwt = positionals[0] === '-' ? (await readAll(io.in)).trim() : positionals[0]
    /** @type {Record<string, string>} */
    const env = {
      WSPS_AUTH_MODE: secretFile !== undefined ? 'hs256' : 'jwks',
      WSPS_AUTH_ISSUER: String(values.issuer),
      WSPS_AUTH_AUDIENCE: String(values.audience),
      WSPS_AUTH_SYMBOLS_CLAIM: String(values['symbols-claim']),
      WSPS_AUTH_DELAYED_CLAIM: String(values['delayed-claim'])
    }
    if (secretFile !== undefined) env.WSPS_AUTH_HS256_SECRET_FILE = String(secretFile)
    else env.WSPS_AUTH_JWKS_URL = String(jwksUrl)
    let config
    try {
      config = loadGatewayConfig(env)
    } catch (err) {
      const problems = /** @type {{problems?: string[]}} */ (err).problems
      if (!problems) throw err
      throw new CliError(CliErrorCode.BAD_CONFIG, problems.join('; '), { problems })
    }
    const authenticate = /** @type {import('@wsps/gateway/auth').Authenticator} */ (createAuthenticator(config))
    const result = await authenticate(jwt)
    const claims = claimsOf(jwt)
    if (!result.ok) {
      const code = result.code ?? ErrorCode.UNAUTHORIZED
      throw new CliError(CliErrorCode.INVALID_TOKEN, `refused: ${result.reason} (a client gets ${code})`, { reason: result.reason, errorCode: code, claims })
    }
    const realtime = claims?.[config.authSymbolsClaim] ?? null
    const delayed = claims?.[config.authDelayedClaim] ?? null
    const report = {
      ok: true,
      sub: claims?.sub ?? null,
      class: result.userClass,
      expiresAt: result.expiresAt === null ? null : new Date(result.expiresAt).toISOString(),
      expiresInS: result.expiresAt === null ? null : Math.round((result.expiresAt - Date.now()) / 1000),
      // The gateway's rules: no symbols claim grants every symbol, unless a delayed claim is there.
      realtime: realtime ?? (delayed === null ? '*' : []),
      delayed: delayed ?? []
    }
    if (values.json) {
      emit(io, report)
    } else {
      emit(io, `accepted: sub ${report.sub ?? '(none)'} (${report.class}), ${report.expiresAt === null ? 'no expiry' : `expires ${report.expiresAt} (in ${report.expiresInS} s)`}`)
      emit(io, `  real-time: ${report.realtime === '*' ? 'every symbol' : listOrNone(/** @type {string[]} */ (report.realtime))}`)
      emit(io, `  delayed only: ${listOrNone(/** @type {string[]} */ (report.delayed))}`)
    }
    return Exit.OK
  }
}

/** @param {string[]} list */
function listOrNone (list) {
  return list.length ? list.join(', ') : 'none'
}

/**
 * A token's claims, read without checking it (to show them), or null when
 * it is not a JWT at all.
 *
 * @param {string} jwt
 * @returns {Record<string, any> | null}
 */
export function claimsOf (jwt) {
  try {
    return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'))
  } catch {
    return null
  }
}

