// End-of-test summary: builds a compact, mergeable summary object from
// k6's handleSummary data, merges several (shards), and renders the text
// tables. Plain ESM without k6 or Node APIs.

import { allChecks, decodeTallies, histCount, histPercentile } from './tally.js'

export const SUMMARY_VERSION = 1

/** Client lag (k6 handling frames late) above this makes the report warn. */
export const LAG_WARN_MS = 100

/** Trend metrics shown in the latency table: key -> [k6 metric, title]. */
export const TRENDS = Object.freeze({
  lat: ['wsps_quote_latency', 'quote latency (now - ts)'],
  tts: ['wsps_time_to_snapshot', 'sub -> first snapshot'],
  rts: ['wsps_reconnect_to_snapshot', 'reconnect -> snapshot'],
  hello: ['wsps_time_to_hello', 'connect -> hello']
})

/** Per-pod counters: summary field -> tally kind. */
const POD_FIELDS = Object.freeze({
  conns: 'conn',
  quotes: 'q',
  quotesHold: 'qh',
  latSumMs: 'lat',
  frames: 'f',
  snaps: 'snap',
  gaps: 'gap',
  ticksLost: 'lost',
  wrong: 'wrong',
  resubs: 'resub',
  errors: 'errn',
  closes: 'closen',
  reconnects: 'recon'
})

/**
 * @typedef {object} Trend
 * @property {number} count
 * @property {number | null} avg
 * @property {number | null} med
 * @property {number | null} p90
 * @property {number | null} p95
 * @property {number | null} p99
 * @property {number | null} max
 * @property {boolean} [approx] derived from the merged histograms
 *
 * @typedef {object} Summary
 * @property {number} version
 * @property {Record<string, any>} meta
 * @property {number} durationMs
 * @property {boolean} ok
 * @property {{metric: string, expr: string, ok: boolean, value: number | null, shard?: number}[]} thresholds
 * @property {Record<string, Trend>} trends
 * @property {Record<string, number>} totals
 * @property {Record<string, Record<string, number>>} pods
 * @property {Record<string, number>} errors
 * @property {Record<string, number>} closes
 * @property {Record<string, number>} failures
 * @property {Record<string, Record<string, number>>} hist
 * @property {number} shards
 */

/** @param {any} v */
const numOrNull = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/**
 * The value of a threshold's aggregation ("p(95)<250" -> values["p(95)"]).
 *
 * @param {Record<string, number>} values
 * @param {string} expr
 */
export function thresholdValue (values, expr) {
  const m = /^\s*([a-z]+(?:\(\d+(?:\.\d+)?\))?)\s*(?:[<>=!]=?|===)/.exec(expr)
  if (!m || !values) return null
  return numOrNull(values[m[1]])
}

/**
 * @param {any} data k6's handleSummary argument (legacy format)
 * @param {Record<string, any>} meta what the script knows about its run
 * @returns {Summary}
 */
export function buildSummary (data, meta) {
  const metrics = data.metrics ?? {}
  const thresholds = []
  for (const [name, m] of Object.entries(metrics)) {
    for (const [expr, t] of Object.entries(/** @type {any} */ (m).thresholds ?? {})) {
      thresholds.push({ metric: name, expr, ok: Boolean(/** @type {any} */ (t).ok), value: thresholdValue(/** @type {any} */ (m).values, expr) })
    }
  }
  thresholds.sort((a, b) => a.metric.localeCompare(b.metric) || a.expr.localeCompare(b.expr))

  const tallies = decodeTallies(allChecks(data.root_group))
  /** @type {Record<string, Record<string, number>>} */
  const pods = {}
  for (const [field, kind] of Object.entries(POD_FIELDS)) {
    for (const [node, n] of Object.entries(tallies[kind] ?? {})) {
      const pod = (pods[node] ??= emptyPod())
      pod[field] += n
    }
  }
  /** @type {Record<string, Record<string, number>>} */
  const hist = {}
  for (const [kind, byKey] of Object.entries(tallies)) if (kind.startsWith('h.')) hist[kind.slice(2)] = byKey

  /** @type {Record<string, Trend>} */
  const trends = {}
  for (const [key, [name]] of Object.entries(TRENDS)) {
    const v = metrics[name]?.values ?? {}
    trends[key] = {
      count: numOrNull(v.count) ?? 0,
      avg: numOrNull(v.avg),
      med: numOrNull(v.med),
      p90: numOrNull(v['p(90)']),
      p95: numOrNull(v['p(95)']),
      p99: numOrNull(v['p(99)']),
      max: numOrNull(v.max)
    }
  }
  const count = (/** @type {string} */ name) => numOrNull(metrics[name]?.values?.count) ?? 0
  const connect = metrics.wsps_connect_success?.values ?? {}
  const totals = {
    connects: (connect.passes ?? 0) + (connect.fails ?? 0),
    connectFailures: connect.fails ?? 0,
    connections: count('wsps_connections'),
    // Every delivered delta has a latency sample; wsps_quotes is only added
    // when a VU flushes, so it misses the tail of VUs that k6 cut off.
    quotes: Math.max(count('wsps_quotes'), numOrNull(metrics.wsps_quote_latency?.values?.count) ?? 0),
    snapQuotes: count('wsps_snapshot_quotes'),
    gaps: count('wsps_seq_gaps'),
    ticksLost: count('wsps_ticks_lost'),
    recoveredSymbols: count('wsps_recovered_symbols'),
    unrecoveredSymbols: count('wsps_unrecovered_symbols'),
    wrong: count('wsps_wrong_symbol'),
    errors: count('wsps_errors'),
    unexpectedCloses: count('wsps_unexpected_closes'),
    reconnects: count('wsps_reconnects'),
    resubscribes: count('wsps_resubscribes'),
    quotesHold: sum(Object.values(pods).map((p) => p.quotesHold))
  }
  return {
    version: SUMMARY_VERSION,
    meta,
    durationMs: numOrNull(data.state?.testRunDurationMs) ?? 0,
    ok: thresholds.every((t) => t.ok),
    thresholds,
    trends,
    totals,
    pods,
    errors: tallies.err ?? {},
    closes: tallies.close ?? {},
    failures: tallies.fail ?? {},
    hist,
    shards: 1
  }
}

function emptyPod () {
  /** @type {Record<string, number>} */
  const p = {}
  for (const f of Object.keys(POD_FIELDS)) p[f] = 0
  return p
}

/** @param {number[]} xs */
function sum (xs) {
  return xs.reduce((t, x) => t + x, 0)
}

/**
 * @param {Record<string, number>} into
 * @param {Record<string, number> | undefined} from
 */
function addInto (into, from) {
  for (const [k, v] of Object.entries(from ?? {})) into[k] = (into[k] ?? 0) + v
  return into
}

/**
 * Merges the summaries of several k6 processes that ran the same profile
 * at the same time (shards). Counts add up exactly; percentiles come from
 * the merged histograms (bucket upper bounds, within ~12%), averages are
 * count-weighted, max is the max.
 *
 * @param {Summary[]} list
 * @returns {Summary}
 */
export function mergeSummaries (list) {
  if (list.length === 0) throw new Error('nothing to merge')
  if (list.length === 1) return list[0]
  /** @type {Record<string, Record<string, number>>} */
  const pods = {}
  /** @type {Record<string, Record<string, number>>} */
  const hist = {}
  for (const s of list) {
    for (const [node, p] of Object.entries(s.pods)) addInto((pods[node] ??= emptyPod()), p)
    for (const [name, h] of Object.entries(s.hist ?? {})) addInto((hist[name] ??= {}), h)
  }
  /** @type {Record<string, Trend>} */
  const trends = {}
  for (const key of Object.keys(TRENDS)) {
    const parts = list.map((s) => s.trends[key]).filter((t) => t && t.count > 0)
    const n = sum(parts.map((t) => t.count))
    const h = hist[key]
    const max = parts.length ? Math.max(...parts.map((t) => t.max ?? 0)) : null
    // A bucket's upper bound can exceed the largest value seen: cap at max.
    const pct = (/** @type {number} */ p) => {
      const v = h && histCount(h) > 0 ? histPercentile(h, p) : null
      return v === null || max === null ? v : Math.min(v, max)
    }
    trends[key] = {
      count: n,
      avg: n ? sum(parts.map((t) => (t.avg ?? 0) * t.count)) / n : null,
      med: pct(50),
      p90: pct(90),
      p95: pct(95),
      p99: pct(99),
      max,
      approx: true
    }
  }
  /** @type {Record<string, number>} */
  const totals = {}
  for (const s of list) addInto(totals, s.totals)
  const first = list[0]
  return {
    version: SUMMARY_VERSION,
    meta: {
      ...first.meta,
      target: sum(list.map((s) => s.meta.target ?? 0)),
      peakConns: sum(list.map((s) => s.meta.peakConns ?? 0)),
      holdConns: sum(list.map((s) => s.meta.holdConns ?? s.meta.peakConns ?? 0)),
      vus: sum(list.map((s) => s.meta.vus ?? 0)),
      urls: [...new Set(list.flatMap((s) => s.meta.urls ?? []))],
      localIps: list.map((s) => s.meta.localIps).filter(Boolean)
    },
    durationMs: Math.max(...list.map((s) => s.durationMs)),
    ok: list.every((s) => s.ok),
    thresholds: list.flatMap((s, i) => s.thresholds.map((t) => ({ ...t, shard: i }))),
    trends,
    totals,
    pods,
    errors: list.reduce((acc, s) => addInto(acc, s.errors), /** @type {Record<string, number>} */ ({})),
    closes: list.reduce((acc, s) => addInto(acc, s.closes), /** @type {Record<string, number>} */ ({})),
    failures: list.reduce((acc, s) => addInto(acc, s.failures), /** @type {Record<string, number>} */ ({})),
    hist,
    shards: sum(list.map((s) => s.shards ?? 1))
  }
}

/**
 * Balance of connections over pods.
 *
 * @param {Record<string, Record<string, number>>} pods
 * @returns {{max: number, min: number, ratio: number | null, spread: number | null, pods: number}}
 */
export function balance (pods) {
  const conns = Object.values(pods).map((p) => p.conns).filter((n) => n > 0)
  if (conns.length === 0) return { max: 0, min: 0, ratio: null, spread: null, pods: 0 }
  const max = Math.max(...conns)
  const min = Math.min(...conns)
  const mean = sum(conns) / conns.length
  return { max, min, ratio: max / min, spread: (max - min) / mean, pods: conns.length }
}

/**
 * Formats a number for the tables: integers with thousands separators,
 * others with `digits` decimals; null as "-".
 *
 * @param {number | null | undefined} v
 * @param {number} [digits]
 */
export function fmt (v, digits = 0) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '-'
  const fixed = v.toFixed(digits)
  const [int, frac] = fixed.split('.')
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  return frac ? `${grouped}.${frac}` : grouped
}

/** @param {number} ms */
function dur (ms) {
  if (!ms) return '0s'
  const s = Math.round(ms / 1000)
  const m = Math.floor(s / 60)
  return m ? `${m}m${s % 60 ? `${s % 60}s` : ''}` : `${s}s`
}

/**
 * Lays out rows as aligned columns (first column left, others right).
 *
 * @param {string[][]} rows the first row is the header
 * @param {string} [indent]
 */
export function table (rows, indent = '  ') {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i] ?? '').length)))
  return rows.map((r) => indent + r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ').trimEnd()).join('\n')
}

/**
 * The readable report.
 *
 * @param {Summary} s
 * @returns {string}
 */
export function renderText (s) {
  const m = s.meta
  const out = []
  const shards = s.shards > 1 ? `, ${s.shards} k6 processes merged` : ''
  out.push(`wsps load test: scenario ${m.scenario}, target ${fmt(m.target)} connections (${fmt(m.vus)} VUs x ${m.connsPerVu}${shards})`)
  out.push(`  ${m.subs} subscriptions each from ${fmt(m.symbols)} symbols (skew ${m.skew}), reconnect ${m.reconnect ? 'on' : 'off'}, ${(m.urls ?? []).join(' ')}`)
  out.push(`  ran ${dur(s.durationMs)}: ramp ${dur(m.rampMs)}, hold ${dur(m.holdMs)}`)

  out.push('', 'Thresholds')
  if (s.thresholds.length === 0) out.push('  (none)')
  else {
    out.push(table([
      ['', 'metric', 'threshold', 'value', ...(s.shards > 1 ? ['shard'] : [])],
      ...s.thresholds.map((t) => [t.ok ? 'ok' : 'FAIL', t.metric, t.expr, fmt(t.value, t.value !== null && !Number.isInteger(t.value) ? 2 : 0), ...(s.shards > 1 ? [String(t.shard)] : [])])
    ]))
  }

  const holdS = (m.holdMs ?? 0) / 1000
  const pods = Object.entries(s.pods).sort(([a], [b]) => a.localeCompare(b))
  const totalConns = sum(pods.map(([, p]) => p.conns))
  out.push('', 'Connections per pod')
  if (pods.length === 0) out.push('  (no connection reached hello)')
  else {
    const rows = [['pod', 'conns', 'share', 'quotes', holdS ? 'quotes/s (hold)' : 'quotes/s', 'mean lat ms', 'snaps', 'gaps', 'wrong', 'errors', 'closes', 'reconn']]
    const rate = (/** @type {Record<string, number>} */ p) => holdS ? p.quotesHold / holdS : (s.durationMs ? p.quotes / (s.durationMs / 1000) : null)
    const all = emptyPodSum(pods.map(([, p]) => p))
    /** @type {[string, Record<string, number>][]} */
    const lines = [...pods, ['total', all]]
    for (const [node, row] of lines) {
      rows.push([
        String(node), fmt(row.conns), totalConns ? `${(100 * row.conns / totalConns).toFixed(1)}%` : '-',
        fmt(row.quotes), fmt(rate(row), 0), fmt(row.quotes ? row.latSumMs / row.quotes : null, 1),
        fmt(row.snaps), fmt(row.gaps), fmt(row.wrong), fmt(row.errors), fmt(row.closes), fmt(row.reconnects)
      ])
    }
    out.push(table(rows))
    const b = balance(s.pods)
    out.push(`  balance over ${b.pods} pod(s): max ${fmt(b.max)} / min ${fmt(b.min)} = ${fmt(b.ratio, 2)}, spread ${b.spread === null ? '-' : `${(100 * b.spread).toFixed(1)}%`} of the mean`)
    if (totalConns < (s.totals.connections ?? 0)) {
      out.push(`  note: the per-pod rows cover ${fmt(totalConns)} of ${fmt(s.totals.connections)} connections: k6 stopped some VUs before their last tally flush (a falling stage, or k6 behind schedule: see the client lag)`)
    }
  }

  const t = s.totals
  out.push('', 'Messages')
  const expected = (m.holdConns ?? m.peakConns ?? 0) * (m.subs ?? 0)
  if (holdS) {
    out.push(`  during the hold: ${fmt(t.quotesHold / holdS)} quotes/s (about ${fmt(expected)}/s expected at 1 update/s per symbol)`)
  }
  out.push(`  whole run: ${fmt(t.quotes)} delta quotes, ${fmt(t.snapQuotes)} snapshot quotes, ${fmt(s.durationMs ? t.quotes / (s.durationMs / 1000) : null)} quotes/s`)
  out.push(`  connects ${fmt(t.connects)} (${fmt(t.connectFailures)} failed), reconnects ${fmt(t.reconnects)}, resubscribes after a gap ${fmt(t.resubscribes)}`)
  out.push(`  seq gaps ${fmt(t.gaps)}, wrong-symbol quotes ${fmt(t.wrong)}, error frames ${fmt(t.errors)}, unexpected closes ${fmt(t.unexpectedCloses)}`)
  out.push(`  ticks lost ${fmt(t.ticksLost ?? 0)} (counted in distinct mode), symbols resumed ${fmt(t.recoveredSymbols ?? 0)} recovered, ${fmt(t.unrecoveredSymbols ?? 0)} not`)

  out.push('', `Latency, ms${s.shards > 1 ? ' (percentiles from merged histograms: bucket upper bounds, within ~12%)' : ''}`)
  const lrows = [['', 'count', 'avg', 'p50', 'p90', 'p95', 'p99', 'max']]
  for (const [key, [, title]] of Object.entries(TRENDS)) {
    const tr = s.trends[key]
    if (!tr || (tr.count === 0 && key !== 'lat' && key !== 'tts')) continue
    lrows.push([title, fmt(tr.count), fmt(tr.avg, 1), fmt(tr.med, 1), fmt(tr.p90, 1), fmt(tr.p95, 1), fmt(tr.p99, 1), fmt(tr.max, 1)])
  }
  out.push(table(lrows))
  const lag = s.hist.lag
  if (lag && histCount(lag) > 0) {
    const p50 = histPercentile(lag, 50)
    const p99 = histPercentile(lag, 99)
    out.push(`  k6 client lag (frame read -> handled by the script): p50 <= ${fmt(p50, 1)}, p99 <= ${fmt(p99, 1)}`)
    if ((p99 ?? 0) > LAG_WARN_MS) {
      out.push(`  WARNING: k6 fell behind (lag p99 over ${LAG_WARN_MS} ms): it is short of CPU, and the latencies above may be its own delays`)
      out.push('           as much as the system\'s. Give k6 more CPU, fewer frames per process (TARGET, SUBS) or shard it (shard.js).')
    }
  }

  const listing = (/** @type {Record<string, number>} */ o) => {
    const e = Object.entries(o).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1])
    return e.length ? e.map(([k, n]) => `${k} ${fmt(n)}`).join(', ') : 'none'
  }
  out.push('', 'Errors')
  out.push(`  error frames by code: ${listing(s.errors)}`)
  out.push(`  closes by the server or the network, by code: ${listing(s.closes)}`)
  out.push(`  failed connects, by reason: ${listing(s.failures)}`)

  const failed = s.thresholds.filter((x) => !x.ok)
  out.push('', failed.length
    ? `RESULT: FAIL (${failed.length} of ${s.thresholds.length} thresholds failed: ${[...new Set(failed.map((x) => x.metric))].join(', ')})`
    : `RESULT: PASS (${s.thresholds.length} thresholds)`)
  return out.join('\n') + '\n'
}

/** @param {Record<string, number>[]} list */
function emptyPodSum (list) {
  const total = emptyPod()
  for (const p of list) addInto(total, p)
  return total
}
