// Parameters of the load test. Every knob is an environment variable (k6
// `-e NAME=value` or the process environment), read once by readConfig().
// Plain ESM without k6 or Node APIs: ramp.js, shard.js and the unit tests
// all import it.

import { SYMBOL_PATTERN } from '../../services/protocol/index.js'

export const SCENARIOS = Object.freeze(['smoke', 'ramp', 'soak'])

/**
 * Defaults per scenario. They work against `make up` (ws://localhost:8080/ws).
 * `smoke`: a few sockets, strict; `ramp`: ramp to TARGET and hold;
 * `soak`: long hold with subscription churn.
 */
export const SCENARIO_DEFAULTS = Object.freeze({
  smoke: Object.freeze({ target: 20, ramp: '5s', hold: '20s', churn: '0s' }),
  ramp: Object.freeze({ target: 1000, ramp: '30s', hold: '1m', churn: '0s' }),
  soak: Object.freeze({ target: 1000, ramp: '1m', hold: '30m', churn: '1m' })
})

/** Hot names first: SKEW makes the first ones the most watched. */
export const HOT_SYMBOLS = Object.freeze([
  'AAPL', 'MSFT', 'NVDA', 'AMZN', 'GOOGL', 'META', 'TSLA', 'AVGO', 'JPM', 'V',
  'BRK.B', 'LLY', 'WMT', 'XOM', 'MA', 'UNH', 'COST', 'NFLX', '^GSPC', 'EURUSD=X'
])

/** Every variable the script reads, with its meaning (docs and --help style output). */
export const ENV_DOCS = Object.freeze({
  SCENARIO: 'smoke | ramp | soak (default ramp)',
  WS_URL: 'WebSocket URL; a comma-separated list spreads connections round-robin (default ws://localhost:8080/ws)',
  TARGET: 'connections to hold (per k6 process; default smoke 20, ramp 1000, soak 1000)',
  RAMP: 'ramp-up duration, k6 style: 30s, 2m, 1m30s (default smoke 5s, ramp 30s, soak 1m)',
  HOLD: 'hold duration at TARGET (default smoke 20s, ramp 1m, soak 30m)',
  STAGES: 'instead of RAMP/HOLD/TARGET: duration:connections,... e.g. 30s:1000,1m:1000,30s:3000,2m:3000',
  SYMBOLS: 'symbol universe: a comma-separated list, or a number N for N symbols (20 well-known + synthetic; default 200)',
  SUBS: 'subscriptions per connection (default 5; at most the gateway limit, 200)',
  SKEW: 'popularity skew, Zipf exponent over the universe in order: 0 uniform, 1 a few hot symbols and a long tail (default 1)',
  CONNS_PER_VU: 'WebSocket connections per k6 VU (default 10)',
  RECONNECT: '1: reconnect after a server close (1012 at once with jitter, others with backoff) and after failed connects (default 0); a reconnect resumes every symbol with `since` (seq and epoch held)',
  MODE: 'delivery of every subscription: merge (default) or distinct (every tick; ticks lost are counted, threshold 0)',
  CHURN: 'swap one subscription per connection every CHURN (0s: never; default soak 1m, else 0s)',
  SEED: 'seed of the symbol picks (default 1)',
  LAT_P95_MS: 'threshold: quote latency p95 below this (default 250)',
  LAT_P99_MS: 'threshold: quote latency p99 below this (default 500)',
  SNAP_P95_MS: 'threshold: time from sub to first snapshot p95 below this (default 1500)',
  RECONNECT_P99_MS: 'threshold with RECONNECT=1: reconnect-to-snapshot p99 below this (default 5000)',
  CONNECT_OK: 'threshold: share of connects that reach hello (default 0.99)',
  SUMMARY_DIR: 'where handleSummary writes summary.json and summary.txt (default loadtest/results; /tmp in a read-only pod)',
  SUMMARY_JSON_LINE: '1: also print the summary as one stdout line "WSPS_SUMMARY {json}" (for kubectl logs)'
})

const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g
const UNIT_MS = { ms: 1, s: 1000, m: 60000, h: 3600000 }

/**
 * Parses a k6-style duration ("90s", "1m30s", "500ms", "2h") or a bare
 * number of seconds into milliseconds.
 *
 * @param {string} text
 * @returns {number}
 */
export function parseDuration (text) {
  const s = String(text).trim()
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000)
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(s)) throw new Error(`not a duration: "${text}" (use e.g. 30s, 2m, 1m30s)`)
  let ms = 0
  for (const m of s.matchAll(DURATION_PART)) ms += Number(m[1]) * UNIT_MS[/** @type {'ms'|'s'|'m'|'h'} */ (m[2])]
  return Math.round(ms)
}

/**
 * Milliseconds as a k6 duration string ("1m30s", "250ms", "0s").
 *
 * @param {number} ms
 * @returns {string}
 */
export function formatDuration (ms) {
  if (ms <= 0) return '0s'
  let rest = Math.round(ms)
  let out = ''
  for (const [unit, size] of /** @type {[string, number][]} */ ([['h', 3600000], ['m', 60000], ['s', 1000]])) {
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`
      rest %= size
    }
  }
  if (rest > 0) out += `${rest}ms`
  return out
}

/**
 * The symbol universe, most popular first.
 *
 * @param {string} spec a comma-separated list, or a count
 * @returns {string[]}
 */
export function symbolUniverse (spec) {
  const s = String(spec).trim()
  if (/^\d+$/.test(s)) {
    const n = Number(s)
    if (n < 1 || n > 100000) throw new Error(`SYMBOLS=${s}: a count must be 1..100000`)
    const out = HOT_SYMBOLS.slice(0, n)
    const width = String(n).length
    for (let i = out.length + 1; out.length < n; i++) out.push(`T${String(i).padStart(Math.max(4, width), '0')}`)
    return out
  }
  const list = [...new Set(s.split(',').map((x) => x.trim()).filter(Boolean))]
  if (list.length === 0) throw new Error('SYMBOLS is empty')
  const bad = list.filter((x) => !SYMBOL_PATTERN.test(x))
  if (bad.length) throw new Error(`SYMBOLS: not valid symbols (${SYMBOL_PATTERN}): ${bad.slice(0, 5).join(', ')}`)
  return list
}

/**
 * @param {string} name
 * @param {string | undefined} raw
 * @param {number} dflt
 * @param {{min?: number, max?: number, int?: boolean}} [range]
 */
function num (name, raw, dflt, { min = -Infinity, max = Infinity, int = false } = {}) {
  if (raw === undefined || raw === '') return dflt
  const v = Number(raw)
  if (!Number.isFinite(v) || (int && !Number.isInteger(v)) || v < min || v > max) {
    throw new Error(`${name}=${raw}: expected ${int ? 'an integer' : 'a number'} in ${min}..${max}`)
  }
  return v
}

/** @param {string | undefined} raw */
function flag (raw) {
  return raw !== undefined && /^(1|true|yes|on)$/i.test(raw.trim())
}

/**
 * @typedef {object} Stage
 * @property {number} durationMs
 * @property {number} conns connections held at the end of the stage
 *
 * @typedef {object} Config
 * @property {string} scenario
 * @property {string[]} urls
 * @property {Stage[]} stages
 * @property {number} target the largest stage target
 * @property {number} rampMs duration of the first stage
 * @property {number} holdMs time at the final level (the last stage when its target equals the one before)
 * @property {string[]} symbols
 * @property {number} subs
 * @property {number} skew
 * @property {number} connsPerVu
 * @property {boolean} reconnect
 * @property {'merge' | 'distinct'} mode
 * @property {number} churnMs
 * @property {number} seed
 * @property {{latP95: number, latP99: number, snapP95: number, reconnectP99: number, connectOk: number}} limits
 * @property {string} summaryDir
 * @property {boolean} summaryJsonLine
 */

/**
 * Reads every parameter once, with defaults per scenario. Throws an Error
 * naming the variable when a value is invalid.
 *
 * @param {Record<string, string | undefined>} env
 * @returns {Config}
 */
export function readConfig (env) {
  const scenario = (env.SCENARIO || 'ramp').trim()
  if (!SCENARIOS.includes(scenario)) throw new Error(`SCENARIO=${scenario}: expected one of ${SCENARIOS.join(', ')}`)
  const d = SCENARIO_DEFAULTS[/** @type {'smoke'|'ramp'|'soak'} */ (scenario)]

  const urls = (env.WS_URL || 'ws://localhost:8080/ws').split(',').map((u) => u.trim()).filter(Boolean)
  for (const u of urls) if (!/^wss?:\/\/[^/\s]+/.test(u)) throw new Error(`WS_URL: not a ws:// or wss:// URL: ${u}`)

  /** @type {Stage[]} */
  let stages
  if (env.STAGES && env.STAGES.trim()) {
    stages = env.STAGES.split(',').map((part) => {
      const m = /^\s*([^:\s]+)\s*:\s*(\d+)\s*$/.exec(part)
      if (!m) throw new Error(`STAGES: "${part}" is not duration:connections`)
      return { durationMs: parseDuration(m[1]), conns: Number(m[2]) }
    })
  } else {
    const target = num('TARGET', env.TARGET, d.target, { min: 1, max: 1000000, int: true })
    stages = [
      { durationMs: parseDuration(env.RAMP || d.ramp), conns: target },
      { durationMs: parseDuration(env.HOLD || d.hold), conns: target }
    ]
  }
  const target = Math.max(...stages.map((s) => s.conns))
  if (target < 1) throw new Error('the load profile never opens a connection (every stage target is 0)')
  const last = stages[stages.length - 1]
  const before = stages.length > 1 ? stages[stages.length - 2].conns : 0
  const holdMs = last.conns === before ? last.durationMs : 0

  const symbols = symbolUniverse(env.SYMBOLS || '200')
  const subs = num('SUBS', env.SUBS, 5, { min: 1, max: 10000, int: true })
  if (subs > symbols.length) throw new Error(`SUBS=${subs} is more than the ${symbols.length} symbols in the universe`)

  const mode = (env.MODE || 'merge').trim()
  if (mode !== 'merge' && mode !== 'distinct') throw new Error(`MODE=${mode}: expected merge or distinct`)

  return {
    scenario,
    urls,
    mode,
    stages,
    target,
    rampMs: stages[0].durationMs,
    holdMs,
    symbols,
    subs,
    skew: num('SKEW', env.SKEW, 1, { min: 0, max: 5 }),
    connsPerVu: num('CONNS_PER_VU', env.CONNS_PER_VU, 10, { min: 1, max: 5000, int: true }),
    reconnect: flag(env.RECONNECT),
    churnMs: parseDuration(env.CHURN || d.churn),
    seed: num('SEED', env.SEED, 1, { min: 0, max: 4294967295, int: true }),
    limits: {
      latP95: num('LAT_P95_MS', env.LAT_P95_MS, 250, { min: 1 }),
      latP99: num('LAT_P99_MS', env.LAT_P99_MS, 500, { min: 1 }),
      snapP95: num('SNAP_P95_MS', env.SNAP_P95_MS, 1500, { min: 1 }),
      reconnectP99: num('RECONNECT_P99_MS', env.RECONNECT_P99_MS, 5000, { min: 1 }),
      connectOk: num('CONNECT_OK', env.CONNECT_OK, 0.99, { min: 0, max: 1 })
    },
    summaryDir: (env.SUMMARY_DIR || 'loadtest/results').replace(/(.)\/+$/, '$1'),
    summaryJsonLine: flag(env.SUMMARY_JSON_LINE)
  }
}
