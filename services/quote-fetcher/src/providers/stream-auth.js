// How the ws-stream provider proves who it is to a vendor, and how it reads
// the vendor's answer: the auth message and upgrade headers with the
// credentials filled in (WSPS_STREAM_AUTH, WSPS_STREAM_HEADERS), and the
// matchers of the vendor's success, refusal and connection-limit answers
// (WSPS_STREAM_AUTH_REPLIES). Compiled once at start-up.
//
// The credentials come only from secret settings (WSPS_STREAM_KEY,
// WSPS_STREAM_SECRET, WSPS_STREAM_TOKEN: `_FILE`-able, redacted in the
// start-up log); the templates hold placeholders, never a credential, so
// nothing here is ever logged with the credentials in it, and an error
// message shows a template filled with the placeholder names only.

import { dig, matcher } from './stream-mapping.js'

/** Placeholder -> the credential it stands for. */
const PLACEHOLDERS = /** @type {const} */ ({ '{key}': 'key', '{secret}': 'secret', '{token}': 'token' })
/** Which setting holds each credential, for error messages. */
const SETTING = /** @type {const} */ ({ key: 'WSPS_STREAM_KEY', secret: 'WSPS_STREAM_SECRET', token: 'WSPS_STREAM_TOKEN' })
const REPLY_KEYS = new Set(['ok', 'refused', 'limited', 'code', 'message'])
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/** @typedef {{key: string, secret: string, token: string}} Credentials */

/**
 * @typedef {object} ReplyMatch
 * @property {'ok' | 'refused' | 'limited'} kind
 * @property {string} code the vendor's code (or status) in the matching record, '' when none
 * @property {string} message the vendor's message in the matching record, '' when none
 */

/**
 * @typedef {object} StreamAuth
 * @property {string | null} frame the auth message, credentials filled in; null: none is sent
 * @property {Record<string, string>} headers upgrade request headers, credentials filled in
 * @property {boolean} waits whether the session waits for the vendor's `ok` answer before it is ready
 * @property {(message: unknown) => ReplyMatch | null} reply reads a vendor message received while authenticating
 */

/**
 * @param {string} template
 * @param {(name: keyof Credentials) => string} fill
 */
function fillIn (template, fill) {
  return template.replace(/\{(key|secret|token)\}/g, (p) => fill(PLACEHOLDERS[/** @type {keyof typeof PLACEHOLDERS} */ (p)]))
}

/**
 * Every credential a template's placeholders name must be set.
 * @param {string} setting the template's, for the error
 * @param {string} template
 * @param {Credentials} credentials
 * @throws {Error} naming the placeholder and the empty setting, never a credential
 */
function requireCredentials (setting, template, credentials) {
  for (const [p, c] of /** @type {[string, keyof Credentials][]} */ (Object.entries(PLACEHOLDERS))) {
    if (template.includes(p) && !credentials[c]) throw new Error(`${setting} uses ${p} but ${SETTING[c]} is empty`)
  }
}

/**
 * `{path: value}`: every path must hold the value, or one of the values of
 * a list (`{"T":"error","code":[401,402]}`), tested as the mapping tests
 * records (stream-mapping.js matcher).
 * @param {string} name for errors
 * @param {unknown} conditions
 * @returns {(record: unknown) => boolean}
 */
function answer (name, conditions) {
  if (!conditions || typeof conditions !== 'object' || Array.isArray(conditions)) throw new Error(`"${name}" must be an object of {path: value}`)
  if (Object.keys(conditions).length === 0) throw new Error(`"${name}" must have at least one condition`)
  return matcher(/** @type {Record<string, unknown>} */ (conditions), name)
}

/**
 * @param {unknown} v
 * @returns {string}
 */
const text = (v) => (v === undefined || v === null ? '' : (typeof v === 'object' ? JSON.stringify(v) : String(v)).slice(0, 200))

/**
 * @param {string} json WSPS_STREAM_AUTH_REPLIES
 * @returns {{reply: StreamAuth['reply'], waits: boolean}}
 */
function compileReplies (json) {
  if (json === '') return { reply: () => null, waits: false }
  let r
  try { r = JSON.parse(json) } catch { throw new Error('WSPS_STREAM_AUTH_REPLIES is not JSON') }
  if (!r || typeof r !== 'object' || Array.isArray(r)) throw new Error('WSPS_STREAM_AUTH_REPLIES must be a JSON object')
  for (const k of Object.keys(r)) if (!REPLY_KEYS.has(k)) throw new Error(`WSPS_STREAM_AUTH_REPLIES: unknown key "${k}" (allowed: ${[...REPLY_KEYS].join(', ')})`)
  if (r.ok === undefined) throw new Error('WSPS_STREAM_AUTH_REPLIES must have "ok" (the vendor\'s success answer)')
  for (const k of ['code', 'message']) {
    if (r[k] !== undefined && (typeof r[k] !== 'string' || r[k] === '')) throw new Error(`WSPS_STREAM_AUTH_REPLIES: "${k}" must be a dot path`)
  }
  /** @type {[ReplyMatch['kind'], (record: unknown) => boolean][]} */
  const kinds = []
  // A connection-limit refusal is often an error like the others (Alpaca:
  // T=error, code 406): it is looked for first.
  for (const kind of /** @type {const} */ (['limited', 'refused', 'ok'])) {
    if (r[kind] !== undefined) kinds.push([kind, answer(`WSPS_STREAM_AUTH_REPLIES: ${kind}`, r[kind])])
  }
  const codePath = r.code ? r.code.split('.') : null
  const messagePath = r.message ? r.message.split('.') : null
  return {
    waits: true,
    reply (message) {
      // Vendors answer with one record or an array of them (Alpaca and
      // Polygon send arrays, sometimes with `connected` first).
      for (const rec of Array.isArray(message) ? message : [message]) {
        if (rec === null || typeof rec !== 'object') continue
        for (const [kind, match] of kinds) {
          if (!match(rec)) continue
          return { kind, code: codePath ? text(dig(rec, codePath)) : '', message: messagePath ? text(dig(rec, messagePath)) : '' }
        }
      }
      return null
    }
  }
}

/**
 * @param {string} json WSPS_STREAM_HEADERS
 * @param {Credentials} credentials
 * @returns {Record<string, string>}
 */
function compileHeaders (json, credentials) {
  if (json === '') return {}
  let h
  try { h = JSON.parse(json) } catch { throw new Error('WSPS_STREAM_HEADERS is not JSON') }
  if (!h || typeof h !== 'object' || Array.isArray(h)) throw new Error('WSPS_STREAM_HEADERS must be a JSON object of header name -> value')
  /** @type {Record<string, string>} */
  const out = {}
  for (const [name, value] of Object.entries(h)) {
    if (!HEADER_NAME.test(name)) throw new Error(`WSPS_STREAM_HEADERS: "${name}" is not a header name`)
    if (typeof value !== 'string') throw new Error(`WSPS_STREAM_HEADERS: the value of "${name}" must be a string`)
    const filled = fillIn(value, (c) => credentials[c])
    // Checked on the filled-in value, but the message names the template only.
    if (/[\r\n\0]/.test(filled)) throw new Error(`WSPS_STREAM_HEADERS: the value of "${name}" has a line break or NUL once the credentials are filled in`)
    out[name] = filled
  }
  return out
}

/**
 * @param {object} settings
 * @param {string} settings.auth WSPS_STREAM_AUTH: `{key}`, `{secret}`, `{token}` become JSON strings
 * @param {string} settings.headers WSPS_STREAM_HEADERS: the placeholders become the bare credential
 * @param {string} settings.replies WSPS_STREAM_AUTH_REPLIES
 * @param {Credentials} credentials
 * @returns {StreamAuth}
 * @throws {Error} saying what is wrong, never with a credential in the message
 */
export function compileAuth ({ auth, headers, replies }, credentials) {
  requireCredentials('WSPS_STREAM_AUTH', auth, credentials)
  requireCredentials('WSPS_STREAM_HEADERS', headers, credentials)
  let frame = null
  if (auth !== '') {
    frame = fillIn(auth, (c) => JSON.stringify(credentials[c]))
    try {
      JSON.parse(frame)
    } catch {
      const example = fillIn(auth, (c) => JSON.stringify(c.toUpperCase()))
      throw new Error(`WSPS_STREAM_AUTH is not JSON once the credentials are filled in (a placeholder becomes a JSON string, quotes included: ${example})`)
    }
  }
  const { reply, waits } = compileReplies(replies)
  return { frame, headers: compileHeaders(headers, credentials), waits, reply }
}

/**
 * Fills `{key}`, `{secret}`, `{token}` in the stream URL, URL-encoded, for
 * vendors that take the credential in the query (Finnhub: `?token={token}`).
 * @param {string} url WSPS_STREAM_URL
 * @param {Credentials} credentials
 */
export function streamUrl (url, credentials) {
  requireCredentials('WSPS_STREAM_URL', url, credentials)
  return fillIn(url, (c) => encodeURIComponent(credentials[c]))
}

/**
 * A URL safe to log: no query, no user info (either may hold a credential).
 * @param {string} url
 */
export function loggableUrl (url) {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname}`
  } catch {
    return '(invalid URL)'
  }
}

/**
 * What is wrong with the ws-stream credential settings, one line each, for
 * the config loader (never with a credential in it).
 * @param {{streamUrl: string, streamAuth: string, streamHeaders: string, streamAuthReplies: string, streamKey: string, streamSecret: string, streamToken: string}} config
 * @returns {string[]}
 */
export function streamAuthProblems (config) {
  const credentials = { key: config.streamKey, secret: config.streamSecret, token: config.streamToken }
  /** @type {string[]} */
  const problems = []
  try {
    compileAuth({ auth: config.streamAuth, headers: config.streamHeaders, replies: config.streamAuthReplies }, credentials)
  } catch (err) {
    problems.push(/** @type {Error} */ (err).message)
  }
  try {
    streamUrl(config.streamUrl, credentials)
  } catch (err) {
    problems.push(/** @type {Error} */ (err).message)
  }
  return problems
}
