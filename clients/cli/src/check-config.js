// `wsps check-config`: would a service start with these settings? The
// service's own loader answers (services/*/src/config.js: the schema, the
// cross-checks, unknown WSPS_* names), so the problems are the lines the
// service would print at start-up before exiting with 78.

import { gatewaySettings, loadGatewayConfig } from '@wsps/gateway/config'
import { fetcherSettings, loadFetcherConfig } from '@wsps/quote-fetcher/config'
import { redacted } from '@wsps/shared/config'
import { CliError, CliErrorCode, Exit, usage } from './errors.js'
import { emit, readFile } from './io.js'

/**
 * @typedef {import('./io.js').Io} Io
 * @typedef {import('./verbs.js').Parsed} Parsed
 */

/** The services by the name their process logs under. */
const SERVICES = Object.freeze({
  gateway: { name: 'wsps-gateway', settings: gatewaySettings, load: loadGatewayConfig },
  fetcher: { name: 'wsps-quote-fetcher', settings: fetcherSettings, load: loadFetcherConfig }
})

export const checkConfig = {
  name: 'check-config',
  summary: 'would a service start with these WSPS_* settings?',
  usage: `wsps check-config gateway|fetcher [ENV_FILE]

  Checks the WSPS_* settings of ENV_FILE (KEY=VALUE lines; # comments,
  blank lines and a leading \`export\` are allowed), or of this shell's
  environment without one, as the service checks them at start-up, and
  prints its problems in its own words. Exits 1 when it would refuse them.
  --json prints {"ok", "service", "given", "config"} (secrets redacted).`,
  options: {},
  /**
   * @param {Parsed} args
   * @param {Io} io
   */
  async run ({ values, positionals }, io) {
    const [which, file, ...rest] = positionals
    if (rest.length || (which !== 'gateway' && which !== 'fetcher')) throw usage('name the service: gateway or fetcher (then an env file, or none for this environment)')
    const service = SERVICES[which]
    const env = file === undefined ? wspsOf(io.env) : parseEnvFile(readFile(file), file)
    let config
    try {
      config = service.load(env)
    } catch (err) {
      const problems = /** @type {{problems?: string[]}} */ (err).problems
      if (!problems) throw err
      throw new CliError(CliErrorCode.BAD_CONFIG, `${service.name}: ${/** @type {Error} */ (err).message}`, { service: which, problems })
    }
    const given = Object.keys(env).sort()
    if (values.json) emit(io, { ok: true, service: which, given, config: redacted(service.settings, config) })
    else emit(io, `${service.name}: ok (${given.length} of ${service.settings.length} settings given, the rest default)`)
    return Exit.OK
  }
}

/**
 * @param {Record<string, string | undefined>} env
 * @returns {Record<string, string>}
 */
function wspsOf (env) {
  /** @type {Record<string, string>} */
  const out = {}
  for (const [k, v] of Object.entries(env)) if (k.startsWith('WSPS_') && v !== undefined) out[k] = v
  return out
}

/**
 * KEY=VALUE lines, as a shell or an env file of Docker or systemd writes
 * them: one pair of matching quotes around a value is dropped.
 *
 * @param {string} text
 * @param {string} file for messages
 * @returns {Record<string, string>}
 */
export function parseEnvFile (text, file) {
  /** @type {Record<string, string>} */
  const out = {}
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim()
    if (line === '' || line.startsWith('#')) continue
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line)
    if (!m) throw new CliError(CliErrorCode.BAD_INPUT, `${file}:${i + 1}: not a KEY=VALUE line`)
    const quoted = /^(["'])(.*)\1$/.exec(m[2])
    out[m[1]] = quoted ? quoted[2] : m[2]
  }
  return out
}
