// `wsps check-config`: would a service start with these settings? The
// service's own loader answers (services/*/src/config.js: the schema, the
// cross-checks, unknown WSPS_* names), so the problems are the lines the
// service would print at start-up before exiting with 78. The settings come
// from an env file, this shell, or a chart: a Helm values file rendered by
// `helm template` (which checks the chart's own schema first), or manifests
// rendered already, each gateway and fetcher Deployment's environment
// rebuilt as its pod would get it (chart-env.js).

import { gatewaySettings, loadGatewayConfig } from '@wsps/gateway/config'
import { fetcherSettings, loadFetcherConfig } from '@wsps/quote-fetcher/config'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { redacted } from '@wsps/shared/config'
import { podEnvironments } from './chart-env.js'
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

/** @type {import('./verbs.js').Verb} */
export const checkConfig = {
  name: 'check-config',
  summary: 'would a service start with these WSPS_* settings?',
  usage: `wsps check-config gateway|fetcher [ENV_FILE]
       wsps check-config --values VALUES.yaml [--chart DIR] [--helm BIN]
       wsps check-config --rendered MANIFESTS.yaml...

  Checks the WSPS_* settings of ENV_FILE (KEY=VALUE lines; # comments,
  blank lines and a leading \`export\` are allowed), or of this shell's
  environment without one, as the service checks them at start-up, and
  prints its problems in its own words. Exits 1 when it would refuse them.
  --json prints {"ok", "service", "given", "config"} (secrets redacted).

  --values renders the chart (--chart, default the repository's
  charts/wsps) with VALUES.yaml by \`helm template\` (--helm, default helm
  on PATH), whose own schema check comes first; --rendered reads manifests
  rendered already. Each gateway and fetcher Deployment's environment is
  then checked as its pod would start with it (ConfigMaps, env, $(NAME)
  references). Secret files (*_FILE) exist only in the pod: a stand-in is
  read in their place, so their contents are not checked. One line per
  Deployment; --json one record each.`,
  options: {
    values: { type: 'string' },
    chart: { type: 'string' },
    helm: { type: 'string', default: 'helm' },
    rendered: { type: 'boolean', default: false }
  },
  /**
   * @param {Parsed} args
   * @param {Io} io
   */
  async run ({ values, positionals }, io) {
    if (values.values !== undefined || values.rendered) return checkChart(/** @type {any} */ (values), positionals, io)
    if (values.chart !== undefined) throw usage('--chart goes with --values')
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

/** The chart beside this command in the repository (absent from an image that has only the CLI). */
const REPO_CHART = fileURLToPath(new URL('../../../charts/wsps', import.meta.url))

/**
 * The gateway and fetcher Deployments of a chart, each through its service's loader.
 *
 * @param {{values?: string, chart?: string, helm: string, rendered: boolean, json: boolean}} options
 * @param {string[]} files
 * @param {Io} io
 */
function checkChart ({ values, chart, helm, rendered, json }, files, io) {
  if (values !== undefined && rendered) throw usage('--values or --rendered, not both')
  /** @type {{source: string, text: string}[]} */
  let sources
  if (rendered) {
    if (files.length === 0) throw usage('--rendered needs the manifest files')
    sources = files.map((f) => ({ source: f, text: readFile(f) }))
  } else {
    if (files.length) throw usage(`--values takes one values file (given also: ${files.join(' ')})`)
    const dir = chart ?? REPO_CHART
    if (!existsSync(dir)) throw usage(`no chart at ${dir}: give --chart DIR`)
    const r = spawnSync(helm, ['template', 'wsps', dir, '--namespace', 'wsps', '-f', /** @type {string} */ (values)], { encoding: 'utf8', maxBuffer: 64 << 20 })
    if (r.error) throw new CliError(CliErrorCode.BAD_INPUT, `${helm}: ${r.error.message} (--helm names the binary)`)
    if (r.status !== 0) throw new CliError(CliErrorCode.BAD_CONFIG, `helm template refused ${values}:\n${r.stderr.trim()}`)
    sources = [{ source: /** @type {string} */ (values), text: r.stdout }]
  }
  const stand = mkdtempSync(join(tmpdir(), 'wsps-check-config-'))
  const standIn = join(stand, 'secret')
  writeFileSync(standIn, 'x'.repeat(48))
  let refused = 0
  let checked = 0
  try {
    for (const { source, text } of sources) {
      let pods
      try {
        pods = podEnvironments(text)
      } catch (err) {
        throw new CliError(CliErrorCode.BAD_INPUT, `${source}: not YAML manifests: ${/** @type {Error} */ (err).message}`)
      }
      for (const pod of pods) {
        checked++
        const service = SERVICES[pod.service]
        const secretFiles = Object.keys(pod.env).filter((k) => k.endsWith('_FILE')).sort()
        const env = { ...pod.env, ...Object.fromEntries(secretFiles.map((k) => [k, standIn])) }
        const given = Object.keys(env).filter((k) => k.startsWith('WSPS_')).length
        /** @type {string[]} */
        let problems = []
        try {
          service.load(env)
        } catch (err) {
          problems = /** @type {{problems?: string[]}} */ (err).problems ?? [/** @type {Error} */ (err).message]
          refused++
        }
        const what = `${source}: ${service.name} (Deployment ${pod.deployment})`
        if (json) emit(io, { ok: problems.length === 0, source, service: pod.service, deployment: pod.deployment, given, secretFiles, ...(problems.length ? { problems } : {}) })
        else if (problems.length) emit(io, `${what}: refused:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
        else emit(io, `${what}: ok (${given} WSPS_* settings${secretFiles.length ? `; secret files not checked: ${secretFiles.join(', ')}` : ''})`)
      }
    }
  } finally {
    rmSync(stand, { recursive: true, force: true })
  }
  if (checked === 0) throw new CliError(CliErrorCode.BAD_INPUT, 'no gateway or fetcher Deployment in what was rendered')
  if (refused) throw new CliError(CliErrorCode.BAD_CONFIG, `${refused} of ${checked} Deployments would refuse to start`)
  return Exit.OK
}
