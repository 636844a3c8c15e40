// The one config loader: each service declares its settings once (name, type,
// default, doc) and calls loadConfig(schema, process.env) once at start-up.
// Nothing else reads the environment.

import { readFileSync } from 'node:fs'
import { ConfigError } from './errors.js'

/**
 * @typedef {'int' | 'number' | 'string' | 'bool' | 'enum' | 'list' | 'url'} SettingType
 *
 * @typedef {object} Setting
 * @property {string} env Environment variable, `WSPS_` prefixed.
 * @property {string} key Property name in the loaded config object.
 * @property {SettingType} type
 * @property {unknown} default Used when the variable is unset or empty.
 * @property {string} doc One line for docs/configuration.md.
 * @property {number} [min]
 * @property {number} [max]
 * @property {readonly string[]} [values] Allowed values for `enum`.
 * @property {readonly string[]} [protocols] Allowed URL schemes for `url`.
 * @property {boolean} [secret] Never logged; may also be read from `<env>_FILE`.
 */

// Kubernetes injects <SERVICE>_PORT, <SERVICE>_PORT_<n>_TCP_*, and
// <SERVICE>_SERVICE_HOST/PORT for every Service in the namespace. A Service
// named wsps-redis yields WSPS_REDIS_PORT=tcp://..., which must not be taken
// for a typo of ours (the chart also sets enableServiceLinks: false). Only
// the name AND the value together say "service link": a name alone would let
// WSPS_METRIC_PORT=9100 (a typo of WSPS_METRICS_PORT) through silently, but
// Kubernetes never gives <SERVICE>_PORT a bare number, only proto://ip:port.
const IP = String.raw`(\d{1,3}(\.\d{1,3}){3}|\[?[0-9a-fA-F:]+\]?)`
const PROTO = '(tcp|udp|sctp)'
/** @type {ReadonlyArray<[RegExp, RegExp]>} name pattern, then the value Kubernetes gives it */
const K8S_SERVICE_LINKS = [
  [/^WSPS_[A-Z0-9_]+_SERVICE_HOST$/, new RegExp(`^${IP}$`)],
  [/^WSPS_[A-Z0-9_]+_SERVICE_PORT(_[A-Z0-9_]+)?$/, /^\d{1,5}$/],
  [/^WSPS_[A-Z0-9_]+_PORT(_\d+_(TCP|UDP|SCTP))?$/, new RegExp(`^${PROTO}://${IP}:\\d{1,5}$`)],
  [/^WSPS_[A-Z0-9_]+_PORT_\d+_(TCP|UDP|SCTP)_PROTO$/, new RegExp(`^${PROTO}$`)],
  [/^WSPS_[A-Z0-9_]+_PORT_\d+_(TCP|UDP|SCTP)_PORT$/, /^\d{1,5}$/],
  [/^WSPS_[A-Z0-9_]+_PORT_\d+_(TCP|UDP|SCTP)_ADDR$/, new RegExp(`^${IP}$`)]
]

/**
 * A variable Kubernetes injected for a Service: its name and its value both
 * have the service-link shape.
 *
 * @param {string} name
 * @param {string | undefined} value
 */
function isServiceLink (name, value) {
  return K8S_SERVICE_LINKS.some(([n, v]) => n.test(name) && v.test(value ?? ''))
}

/**
 * @param {Setting} s
 * @param {string} raw
 * @returns {{value?: unknown, problem?: string}}
 */
function parse (s, raw) {
  const bad = (/** @type {string} */ why) => ({ problem: `${s.env}=${JSON.stringify(raw)}: ${why}` })
  switch (s.type) {
    case 'int':
    case 'number': {
      if (!/^-?\d+(\.\d+)?$/.test(raw)) return bad(`expected a ${s.type === 'int' ? 'whole ' : ''}number`)
      const n = Number(raw)
      if (s.type === 'int' && !Number.isInteger(n)) return bad('expected a whole number')
      if (s.min !== undefined && n < s.min) return bad(`must be >= ${s.min}`)
      if (s.max !== undefined && n > s.max) return bad(`must be <= ${s.max}`)
      return { value: n }
    }
    case 'bool':
      if (/^(1|true|yes|on)$/i.test(raw)) return { value: true }
      if (/^(0|false|no|off)$/i.test(raw)) return { value: false }
      return bad('expected true or false')
    case 'enum':
      if (!s.values?.includes(raw)) return bad(`expected one of ${s.values?.join(', ')}`)
      return { value: raw }
    case 'list':
      return { value: raw.split(',').map((x) => x.trim()).filter(Boolean) }
    case 'url': {
      let u
      try { u = new URL(raw) } catch { return bad('not a URL') }
      if (s.protocols && !s.protocols.includes(u.protocol.replace(/:$/, ''))) {
        return bad(`scheme must be one of ${s.protocols.join(', ')}`)
      }
      return { value: raw }
    }
    default:
      return { value: raw }
  }
}

/**
 * Loads and validates config. Unknown `WSPS_*` variables are errors (a typo
 * must not silently fall back to a default), except Kubernetes service links
 * (name and value both shaped like one: isServiceLink).
 *
 * @template {Record<string, unknown>} T
 * @param {readonly Setting[]} schema
 * @param {Record<string, string | undefined>} env
 * @returns {Readonly<T>}
 */
export function loadConfig (schema, env) {
  /** @type {Record<string, unknown>} */
  const out = {}
  /** @type {string[]} */
  const problems = []
  const known = new Set(schema.flatMap((s) => (s.secret ? [s.env, `${s.env}_FILE`] : [s.env])))

  for (const s of schema) {
    let raw = env[s.env]
    const file = s.secret ? env[`${s.env}_FILE`] : undefined
    if ((raw === undefined || raw === '') && file) {
      try {
        raw = readFileSync(file, 'utf8').trim()
      } catch (err) {
        problems.push(`${s.env}_FILE=${file}: ${/** @type {Error} */ (err).message}`)
        continue
      }
    }
    if (raw === undefined || raw.trim() === '') {
      out[s.key] = s.default
      continue
    }
    const { value, problem } = parse(s, raw.trim())
    if (problem) problems.push(s.secret ? `${s.env}: invalid value` : problem)
    else out[s.key] = value
  }

  for (const name of Object.keys(env)) {
    if (name.startsWith('WSPS_') && !known.has(name) && !isServiceLink(name, env[name])) {
      problems.push(`${name}: unknown setting (see docs/configuration.md)`)
    }
  }

  if (problems.length) throw new ConfigError(problems)
  return /** @type {Readonly<T>} */ (Object.freeze(out))
}

/**
 * A copy of config safe to log: secrets replaced.
 *
 * @param {readonly Setting[]} schema
 * @param {Record<string, unknown>} config
 */
export function redacted (schema, config) {
  /** @type {Record<string, unknown>} */
  const out = { ...config }
  for (const s of schema) {
    if (s.secret && out[s.key]) out[s.key] = '[redacted]'
    if (s.type === 'url' && typeof out[s.key] === 'string' && out[s.key] !== '') {
      const u = new URL(/** @type {string} */ (out[s.key]))
      if (u.password) { u.password = 'redacted'; out[s.key] = u.toString() }
    }
  }
  return out
}

/**
 * Markdown table of a schema, for docs/configuration.md.
 *
 * @param {readonly Setting[]} schema
 */
export function markdownTable (schema) {
  const rows = schema.map((s) => {
    const def = Array.isArray(s.default) ? s.default.join(',') : String(s.default ?? '')
    let type = s.type
    if (s.type === 'enum') type = /** @type {SettingType} */ (`${s.values?.join(' \\| ')}`)
    const range = s.min !== undefined || s.max !== undefined ? ` (${s.min ?? ''}..${s.max ?? ''})` : ''
    return `| \`${s.env}\` | ${type}${range} | ${def === '' ? '(empty)' : '`' + def + '`'} | ${s.doc}${s.secret ? ' Secret: may be given as a file path in `' + s.env + '_FILE`.' : ''} |`
  })
  return ['| variable | type | default | meaning |', '| --- | --- | --- | --- |', ...rows].join('\n')
}
