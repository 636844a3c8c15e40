// The one client of a gateway's admin API (services/gateway/src/admin-routes.js)
// for the verbs that use it (top, conn, disconnect, drain): where it is, its
// token, and its `{code, message}` refusals as REFUSED.

import { CliError, CliErrorCode, usage } from './errors.js'
import { readFile } from './io.js'

/** A `make up` gateway's admin port. */
export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8081'
/** An action waits for the gateways' answers (a few seconds at most): more than that is UNREACHABLE. */
const TIMEOUT_MS = 10_000

/** The options every admin verb takes. */
export const ADMIN_OPTIONS = Object.freeze({
  url: { type: /** @type {const} */ ('string'), default: DEFAULT_ADMIN_URL },
  token: { type: /** @type {const} */ ('string') },
  'token-file': { type: /** @type {const} */ ('string') }
})

/** How the admin options read in a verb's usage. */
export const ADMIN_USAGE = `Talks to a gateway's admin API (default ${DEFAULT_ADMIN_URL}, a \`make up\`
  gateway; in a cluster its metrics port, which no ingress routes) with its
  WSPS_ADMIN_TOKEN: --token, --token-file, or by default .run/admin-token.`

/**
 * @param {import('./verbs.js').Parsed['values']} values
 * @returns {(path: string, init?: {method?: string, body?: unknown}) => Promise<any>} calls the API, answers its body
 */
export function adminApi (values) {
  if (values.token !== undefined && values['token-file'] !== undefined) throw usage('give --token or --token-file, not both')
  const token = values.token !== undefined ? String(values.token) : readFile(String(values['token-file'] ?? '.run/admin-token')).trim()
  const base = String(values.url)
  return async (path, { method = 'GET', body } = {}) => {
    const url = new URL(path, base).toString()
    /** @type {Record<string, string>} */
    const headers = { authorization: `Bearer ${token}` }
    if (body !== undefined) headers['content-type'] = 'application/json'
    let res
    try {
      res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(TIMEOUT_MS) })
    } catch (err) {
      throw new CliError(CliErrorCode.UNREACHABLE, `${url}: ${/** @type {Error} */ (err).cause ?? /** @type {Error} */ (err).message}`)
    }
    const answer = await res.json().catch(() => ({}))
    if (!res.ok) throw new CliError(CliErrorCode.REFUSED, `${res.status} ${answer.code ?? ''}: ${answer.message ?? res.statusText}`, { status: res.status, answer })
    return answer
  }
}
