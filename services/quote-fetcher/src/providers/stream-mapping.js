// What the ws-stream provider says to and reads from a vendor, as data: the
// subscribe/auth message templates and the mapping of vendor messages to
// quote fields (WSPS_STREAM_MAPPING). Compiled once at start-up, so a bad
// mapping stops the fetcher with a config error instead of dropping every
// message later.

import { QUOTE_FIELDS, SYMBOL_PATTERN } from '@wsps/protocol'

/** Numeric quote fields (everything but symbol, seq and ts). */
export const NUMERIC_FIELDS = Object.freeze(QUOTE_FIELDS.filter((f) => f !== 'symbol' && f !== 'seq' && f !== 'ts' && f !== 'epoch'))

/** Records already in wsps field names: `{"symbol":"AAPL","bid":1,...}`, alone or in an array. */
export const DEFAULT_MAPPING = '{}'

const MAPPING_KEYS = new Set(['records', 'match', 'recordMatch', 'fields'])
const MAPPABLE = new Set(['symbol', 'ts', ...NUMERIC_FIELDS])

/**
 * @param {unknown} value
 * @param {string[]} path
 */
function dig (value, path) {
  let v = value
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined
    v = /** @type {Record<string, unknown>} */ (v)[p]
  }
  return v
}

/** @param {string} path dot path, '' for the value itself */
const split = (path) => (path === '' ? [] : path.split('.'))

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
 * @param {Record<string, unknown>} conditions field path -> required value
 * @returns {(value: unknown) => boolean}
 */
function matcher (conditions) {
  const checks = Object.entries(conditions).map(([path, want]) => [split(path), want])
  return (value) => checks.every(([path, want]) => dig(value, /** @type {string[]} */ (path)) === want)
}

/**
 * @typedef {object} MappedMessage
 * @property {import('./provider.js').QuoteFields[]} quotes
 * @property {number} malformed records that matched but could not be read
 * @property {boolean} ignored the message is not quote data (a heartbeat, an ack)
 */

/**
 * @param {string} json WSPS_STREAM_MAPPING
 * @returns {(message: unknown, now: number) => MappedMessage}
 * @throws {Error} saying what is wrong with the mapping
 */
export function compileMapping (json) {
  let m
  try { m = JSON.parse(json) } catch { throw new Error('not JSON') }
  if (!m || typeof m !== 'object' || Array.isArray(m)) throw new Error('must be a JSON object')
  for (const k of Object.keys(m)) if (!MAPPING_KEYS.has(k)) throw new Error(`unknown key "${k}" (allowed: ${[...MAPPING_KEYS].join(', ')})`)
  if (m.records !== undefined && typeof m.records !== 'string') throw new Error('"records" must be a dot path string')
  for (const k of ['match', 'recordMatch', 'fields']) {
    if (m[k] !== undefined && (!m[k] || typeof m[k] !== 'object' || Array.isArray(m[k]))) throw new Error(`"${k}" must be an object`)
  }
  /** @type {Record<string, string>} */
  const fields = m.fields ?? Object.fromEntries([...MAPPABLE].map((f) => [f, f]))
  for (const [f, path] of Object.entries(fields)) {
    if (!MAPPABLE.has(f)) throw new Error(`"fields" maps unknown quote field "${f}"`)
    if (typeof path !== 'string' || path === '') throw new Error(`"fields.${f}" must be a non-empty dot path`)
  }
  if (!fields.symbol) throw new Error('"fields" must map "symbol"')
  const records = split(m.records ?? '')
  const messageOk = m.match ? matcher(m.match) : null
  const recordOk = m.recordMatch ? matcher(m.recordMatch) : null
  const symbolPath = split(fields.symbol)
  const tsPath = fields.ts ? split(fields.ts) : null
  const numeric = NUMERIC_FIELDS.filter((f) => fields[f]).map((f) => [f, split(fields[f])])

  /**
   * @param {unknown} rec
   * @param {number} now
   * @returns {import('./provider.js').QuoteFields | null}
   */
  function read (rec, now) {
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
      let v = dig(rec, /** @type {string[]} */ (path))
      if (v === undefined || v === null) continue
      if (typeof v === 'string' && v.trim() !== '') v = Number(v)
      if (typeof v !== 'number' || !Number.isFinite(v)) return null
      q[/** @type {'bid'} */ (f)] = v
    }
    return q
  }

  return (message, now) => {
    /** @type {MappedMessage} */
    const out = { quotes: [], malformed: 0, ignored: false }
    // Every vendor speaks in objects or arrays; a bare 42 or null is broken.
    if (message === null || typeof message !== 'object') {
      out.malformed++
      return out
    }
    if (messageOk && !messageOk(message)) {
      out.ignored = true
      return out
    }
    const list = dig(message, records)
    if (list === undefined || list === null || typeof list !== 'object') {
      // With `match`, the message claimed to be quote data: a missing record
      // list is a broken message. Without, it is some other message.
      if (messageOk) out.malformed++
      else out.ignored = true
      return out
    }
    let matched = 0
    for (const rec of Array.isArray(list) ? list : [list]) {
      if (rec === null || typeof rec !== 'object') {
        out.malformed++
        continue
      }
      if (recordOk && !recordOk(rec)) continue
      matched++
      const q = read(rec, now)
      if (q) out.quotes.push(q)
      else out.malformed++
    }
    if (matched === 0 && out.malformed === 0) out.ignored = true
    return out
  }
}

/**
 * Fills `{token}` in a template with the JSON string of token.
 * @param {string} template WSPS_STREAM_AUTH
 * @param {string} token
 */
export function authFrame (template, token) {
  const frame = template.replaceAll('{token}', JSON.stringify(token))
  try { JSON.parse(frame) } catch { throw new Error('is not JSON once {token} is filled in') }
  return frame
}

/**
 * The messages that (un)subscribe `symbols`: one with `{symbols}` (a JSON
 * array), one per symbol with `{symbol}` (a JSON string).
 *
 * @param {string} template WSPS_STREAM_SUBSCRIBE or WSPS_STREAM_UNSUBSCRIBE
 * @param {string[]} symbols
 * @returns {string[]}
 */
export function subscribeFrames (template, symbols) {
  let frames
  if (template.includes('{symbols}')) frames = symbols.length ? [template.replaceAll('{symbols}', JSON.stringify(symbols))] : []
  else if (template.includes('{symbol}')) frames = symbols.map((s) => template.replaceAll('{symbol}', JSON.stringify(s)))
  else throw new Error('must contain {symbols} or {symbol}')
  for (const f of frames) {
    try { JSON.parse(f) } catch { throw new Error('is not JSON once the symbols are filled in') }
  }
  return frames
}
