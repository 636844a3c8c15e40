// How the ws-stream provider reads vendor messages (WSPS_STREAM_MAPPING):
// which records are quotes, trades or control messages, and which record
// fields become which quote fields. Compiled once at start-up, so a bad
// mapping stops the fetcher with a config error instead of dropping every
// message later. (The subscribe templates are in stream-templates.js.)

import { QUOTE_FIELDS, SYMBOL_PATTERN } from '@wsps/protocol'

/** Numeric quote fields (everything but symbol, seq and ts). */
export const NUMERIC_FIELDS = Object.freeze(QUOTE_FIELDS.filter((f) => f !== 'symbol' && f !== 'seq' && f !== 'ts' && f !== 'epoch'))

/** Records already in wsps field names: `{"symbol":"AAPL","bid":1,...}`, alone or in an array. */
export const DEFAULT_MAPPING = '{}'

const MAPPING_KEYS = new Set(['records', 'match', 'rules', 'recordMatch', 'fields'])
const RULE_KEYS = new Set(['match', 'fields', 'ignore'])
const MAPPABLE = new Set(['symbol', 'ts', ...NUMERIC_FIELDS])

/**
 * The value at a split dot path (undefined where the path leads nowhere).
 * Exported for the vendor session's code and message paths.
 * @param {unknown} value
 * @param {string[]} path
 */
export function dig (value, path) {
  let v = value
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined
    v = /** @type {Record<string, unknown>} */ (v)[p]
  }
  return v
}

/** @param {string} path dot path, '' for the value itself */
const split = (path) => (path === '' ? [] : path.split('.'))

/** @param {unknown} v */
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)

/** @param {unknown} v */
const isScalar = (v) => v === null || ['string', 'number', 'boolean'].includes(typeof v)

/**
 * Vendors stamp time in seconds, ms, µs or ns, or as ISO text; all become ms.
 * @param {unknown} v
 * @returns {number | null}
 */
function toMs (v) {
  if (typeof v === 'string') {
    if (/^\d+(\.\d+)?$/.test(v)) return toMs(Number(v))
    const t = Date.parse(v)
    return Number.isFinite(t) ? t : null
  }
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return null
  if (v > 1e17) return Math.round(v / 1e6)
  if (v > 1e14) return Math.round(v / 1e3)
  if (v > 1e11) return Math.round(v)
  return Math.round(v * 1000)
}

/**
 * A test of a message or record: every path must hold its value, or one of
 * the values when the value is a list (`{"T":["x","c"]}`). Exported so the
 * vendor session can recognise its answers the same way.
 *
 * @param {Record<string, unknown>} conditions field path -> required value or list of values
 * @param {string} [where] the setting's key, for the error
 * @returns {(value: unknown) => boolean}
 * @throws {Error} when a value is neither a scalar nor a non-empty list of scalars
 */
export function matcher (conditions, where = 'match') {
  const checks = Object.entries(conditions).map(([path, want]) => {
    const options = Array.isArray(want) ? want : [want]
    if (options.length === 0 || !options.every(isScalar)) throw new Error(`"${where}.${path}" must be a value or a non-empty list of values`)
    return /** @type {const} */ ([split(path), new Set(options)])
  })
  return (value) => checks.every(([path, options]) => options.has(dig(value, path)))
}

/**
 * @typedef {object} MappedMessage
 * @property {import('./provider.js').QuoteFields[]} quotes one update per data record, each with at least one field besides symbol and ts
 * @property {Record<'ignored' | 'unmatched' | 'malformed' | 'empty', number>} dropped records not
 *   published, by reason (wsps_fetcher_stream_records_dropped_total{reason}; the provider adds
 *   `unknown_symbol`, as only it knows which symbols this replica holds)
 */

/**
 * @typedef {object} Rule
 * @property {(record: unknown) => boolean} test
 * @property {((record: unknown, now: number) => import('./provider.js').QuoteFields | null) | null} read null: an ignore rule
 */

/**
 * @param {unknown} fieldsSpec `fields` of a rule, undefined: every quote field by its own name
 * @param {string} where the setting's key, for the errors
 */
function compileFields (fieldsSpec, where) {
  if (fieldsSpec !== undefined && !isObject(fieldsSpec)) throw new Error(`"${where}" must be an object`)
  /** @type {Record<string, unknown>} */
  const fields = /** @type {Record<string, unknown> | undefined} */ (fieldsSpec) ?? Object.fromEntries([...MAPPABLE].map((f) => [f, f]))
  for (const [f, path] of Object.entries(fields)) {
    if (!MAPPABLE.has(f)) throw new Error(`"${where}" maps unknown quote field "${f}"`)
    if (typeof path !== 'string' || path === '') throw new Error(`"${where}.${f}" must be a non-empty dot path`)
  }
  if (typeof fields.symbol !== 'string') throw new Error(`"${where}" must map "symbol"`)
  const symbolPath = split(fields.symbol)
  const tsPath = typeof fields.ts === 'string' ? split(fields.ts) : null
  const numeric = NUMERIC_FIELDS.filter((f) => typeof fields[f] === 'string').map((f) => /** @type {const} */ ([f, split(/** @type {string} */ (fields[f]))]))

  /**
   * @param {unknown} rec
   * @param {number} now
   * @returns {import('./provider.js').QuoteFields | null} null: malformed
   */
  return (rec, now) => {
    const sym = dig(rec, symbolPath)
    if (typeof sym !== 'string') return null
    const symbol = sym.toUpperCase()
    if (!SYMBOL_PATTERN.test(symbol)) return null
    let ts = now
    if (tsPath) {
      const raw = dig(rec, tsPath)
      if (raw !== undefined && raw !== null) {
        const t = toMs(raw)
        if (t === null) return null
        ts = t
      }
    }
    /** @type {import('./provider.js').QuoteFields} */
    const q = { symbol, ts }
    for (const [f, path] of numeric) {
      let v = dig(rec, path)
      if (v === undefined || v === null) continue
      if (typeof v === 'string' && v.trim() !== '') v = Number(v)
      if (typeof v !== 'number' || !Number.isFinite(v)) return null
      q[/** @type {'bid'} */ (f)] = v
    }
    return q
  }
}

/**
 * `rules`, or the one rule the older keys `recordMatch` and `fields` make.
 * @param {Record<string, unknown>} m the parsed mapping
 * @returns {Rule[]}
 */
function compileRules (m) {
  if (m.rules === undefined) {
    if (m.recordMatch !== undefined && !isObject(m.recordMatch)) throw new Error('"recordMatch" must be an object')
    const test = m.recordMatch ? matcher(/** @type {Record<string, unknown>} */ (m.recordMatch), 'recordMatch') : () => true
    return [{ test, read: compileFields(m.fields, 'fields') }]
  }
  if (m.recordMatch !== undefined || m.fields !== undefined) throw new Error('"rules" replaces "recordMatch" and "fields": use one or the other')
  if (!Array.isArray(m.rules) || m.rules.length === 0) throw new Error('"rules" must be a non-empty list')
  return m.rules.map((rule, i) => {
    const where = `rules[${i}]`
    if (!isObject(rule)) throw new Error(`"${where}" must be an object`)
    for (const k of Object.keys(rule)) if (!RULE_KEYS.has(k)) throw new Error(`"${where}" has unknown key "${k}" (allowed: ${[...RULE_KEYS].join(', ')})`)
    if (rule.match !== undefined && !isObject(rule.match)) throw new Error(`"${where}.match" must be an object`)
    // A rule that matches everything hides the rules after it.
    const catchAll = !rule.match || Object.keys(rule.match).length === 0
    if (catchAll && i < /** @type {unknown[]} */ (m.rules).length - 1) throw new Error(`"${where}" has no "match" but is not the last rule (the rules after it would never be used)`)
    if (rule.ignore !== undefined && rule.ignore !== true) throw new Error(`"${where}.ignore" can only be true`)
    if ((rule.ignore === true) === (rule.fields !== undefined)) throw new Error(`"${where}" needs either "fields" or "ignore": true`)
    const test = catchAll ? () => true : matcher(rule.match, `${where}.match`)
    return { test, read: rule.ignore ? null : compileFields(rule.fields, `${where}.fields`) }
  })
}

/**
 * @param {string} json WSPS_STREAM_MAPPING
 * @returns {(message: unknown, now: number) => MappedMessage}
 * @throws {Error} saying what is wrong with the mapping
 */
export function compileMapping (json) {
  let m
  try { m = JSON.parse(json) } catch { throw new Error('not JSON') }
  if (!isObject(m)) throw new Error('must be a JSON object')
  for (const k of Object.keys(m)) if (!MAPPING_KEYS.has(k)) throw new Error(`unknown key "${k}" (allowed: ${[...MAPPING_KEYS].join(', ')})`)
  if (m.records !== undefined && typeof m.records !== 'string') throw new Error('"records" must be a dot path string')
  if (m.match !== undefined && !isObject(m.match)) throw new Error('"match" must be an object')
  const records = split(m.records ?? '')
  const messageOk = m.match ? matcher(m.match) : null
  const rules = compileRules(m)

  return (message, now) => {
    /** @type {MappedMessage} */
    const out = { quotes: [], dropped: { ignored: 0, unmatched: 0, malformed: 0, empty: 0 } }
    // Every vendor speaks in objects or arrays; a bare 42 or null is broken.
    if (message === null || typeof message !== 'object') {
      out.dropped.malformed++
      return out
    }
    if (messageOk && !messageOk(message)) {
      out.dropped.ignored++
      return out
    }
    const list = dig(message, records)
    if (list === undefined || list === null || typeof list !== 'object') {
      // With `match`, the message claimed to be quote data: a missing record
      // list is a broken message. Without, it is some other message.
      out.dropped[messageOk ? 'malformed' : 'ignored']++
      return out
    }
    for (const rec of Array.isArray(list) ? list : [list]) {
      if (rec === null || typeof rec !== 'object') {
        out.dropped.malformed++
        continue
      }
      const rule = rules.find((r) => r.test(rec))
      if (!rule) out.dropped.unmatched++
      else if (!rule.read) out.dropped.ignored++
      else {
        const q = rule.read(rec, now)
        if (!q) out.dropped.malformed++
        // Only symbol and ts: nothing to publish (a status record mapped by
        // a rule that matches too much would otherwise publish an empty
        // update and bump seq).
        else if (Object.keys(q).length === 2) out.dropped.empty++
        else out.quotes.push(q)
      }
    }
    return out
  }
}
