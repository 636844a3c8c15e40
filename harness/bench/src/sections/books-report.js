// The book section's figures and its Markdown (results.md, and
// docs/benchmarks/books.md through scripts/books-report.js): pure, so
// test/books.test.js checks them without a run.

import { P99_LIMIT_MS } from '../profiles.js'

/** The servers the section measures, in the order of its table. */
export const BOOK_SERVERS = /** @type {const} */ (['wsps', 'naive'])
/** The depth every subscriber holds. */
export const DEPTH = 25

/**
 * @typedef {object} BookStep one server at one subscriber count (sections/books.js measure)
 * @property {string} server
 * @property {number} subscribers connected and holding their book
 * @property {number} [failed] not holding their book by the ready timeout (cut; the step fails)
 * @property {number} framesPerSec
 * @property {number} cores
 * @property {number | null} framesPerCore
 * @property {number} p50
 * @property {number} p99
 * @property {number | null} [socketP99]
 * @property {number | null} [feedP50] publisher ts to a plain Redis subscriber
 * @property {number | null} [feedP99]
 * @property {number} [skippedPerSec]
 * @property {number | null} bytesPerFrame
 * @property {number} mismatches
 * @property {number} gaps
 * @property {boolean} pass
 */

/**
 * Each server's figure: its best passing step by frames per second per
 * core (p99 within the bound, no gap, no mismatch), with that step's
 * latency and bytes; null when no step passed. Mismatches and gaps are
 * summed over every step, passing or not.
 *
 * @param {BookStep[]} steps
 * @returns {Record<string, {best: BookStep | null, steps: number, mismatches: number, gaps: number}>}
 */
export function bookFigures (steps) {
  /** @type {Record<string, {best: BookStep | null, steps: number, mismatches: number, gaps: number}>} */
  const out = {}
  for (const s of steps) {
    const f = (out[s.server] ??= { best: null, steps: 0, mismatches: 0, gaps: 0 })
    f.steps++
    f.mismatches += s.mismatches
    f.gaps += s.gaps
    if (s.pass && s.framesPerCore !== null && (f.best === null || s.framesPerCore > (f.best.framesPerCore ?? 0))) f.best = s
  }
  return out
}

/**
 * The median and range of some runs' values (nulls left out).
 *
 * @param {(number | null | undefined)[]} values
 * @returns {{median: number, min: number, max: number, n: number} | null}
 */
export function spread (values) {
  const v = /** @type {number[]} */ (values.filter((x) => typeof x === 'number' && Number.isFinite(x))).sort((a, b) => a - b)
  if (v.length === 0) return null
  const mid = v.length >> 1
  const median = v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2
  return { median, min: v[0], max: v[v.length - 1], n: v.length }
}

/** @param {ReturnType<typeof spread>} s */
export function fmtSpread (s) {
  if (s === null) return '-'
  const r = (/** @type {number} */ x) => (Math.abs(x) >= 100 ? String(Math.round(x)) : Math.abs(x) >= 10 ? String(Math.round(x * 10) / 10) : String(Math.round(x * 100) / 100))
  return s.n > 1 && s.min !== s.max ? `${r(s.median)} (${r(s.min)}-${r(s.max)})` : r(s.median)
}

/**
 * The section as Markdown. runs: the section's results of one or more
 * runs (results.books of each); the summary gives per server the median
 * over runs of its figures and their range, then every step of every run.
 *
 * @param {any[]} runs
 * @returns {string[]}
 */
export function booksSection (runs) {
  const ok = runs.filter((r) => r && !r.error)
  const title = '## Order books (books section)'
  if (ok.length === 0) return runs.length && runs[0] ? [title, '', `Failed: ${runs.find((r) => r?.error)?.error ?? 'no run'}`, ''] : []
  const p = ok[0].params
  const out = [title, '']
  out.push(`${p.booksCount} books, each a seeded random walk around its mid (changes concentrated near the top: a changed level's distance from the best is geometric, ~1.7% past level 25; 5% of updates move the mid), ${p.booksRate} updates/s each, written through the book script (\`applyBook\`). Subscribers hold one book each at depth ${ok[0].depth}, spread over the books, opened by the Go load generator (epoll mode, several processes on their own 127.0.0.x sources); one reference client per book (\`BookReceiver\`) checks the checksum of every frame it gets. **wsps**: one gateway process, deltas (\`levels\`) per batching window. **naive**: harness/bench/src/servers/naive-books.js, the full top ${ok[0].depth} as a \`book\` frame on every change to every subscriber. Each server alone on the server core for its step; ${p.booksMeasureMs} ms windows after ${p.booksSettleMs} ms settling.`, '')
  out.push(`**frames/s per core**: \`levels\` + \`book\` frames delivered per second (after each book's first) divided by the server's CPU (cores), at the server's best step with p99 ≤ ${P99_LIMIT_MS} ms, no gap, no mismatch and every subscriber connected (in the step table, "x of y": only x of the y subscribers held their book by the ready timeout, ${ok.map((r, i) => `run ${i + 1}: ${r.params.booksConnectPerSec ? `max(30 s, y / ${r.params.booksConnectPerSec} per s)` : '30 s'}`).join(', ')}; the others were cut). **B/frame**: bytes on the wire per frame (text and WebSocket header) as the reference clients got them, median over every step of every run (for wsps a \`levels\` delta, for naive the whole top 25). **mismatches**: checksum mismatches over every step. In the step table, **feed p50/p99**: publish ts to a plain Redis subscriber in the bench's process, what Redis and the publisher add before either server sees a change (the same for both servers; the bound counts it against them). Median over ${ok.length} run${ok.length > 1 ? 's' : ''}${ok.length > 1 ? ', range in brackets (of the runs in which the server passed a step)' : ''}.`, '')
  out.push('| server | frames/s per core at p99 ≤ 100 ms | at subscribers | frames/s | server cores | B/frame | p50 ms | p99 ms | mismatches | gaps |')
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  const figs = ok.map((r) => bookFigures(r.steps))
  for (const name of BOOK_SERVERS) {
    const per = figs.map((f) => f[name]).filter(Boolean)
    if (per.length === 0) continue
    const best = per.map((f) => f.best)
    const pick = (/** @type {keyof BookStep} */ k) => fmtSpread(spread(best.map((b) => /** @type {number | null} */ (b ? b[k] : null))))
    const none = best.every((b) => b === null)
    // Bytes per frame hang on the feed, not on the load: over every step.
    const bytes = fmtSpread(spread(ok.flatMap((r) => r.steps.filter((/** @type {BookStep} */ s) => s.server === name).map((/** @type {BookStep} */ s) => s.bytesPerFrame))))
    const passed = best.filter((b) => b !== null).length
    const of = passed < best.length ? ` [${passed} of ${best.length} runs passed a step]` : ''
    out.push(`| ${name} | ${none ? 'no step passed' : pick('framesPerCore') + of} | ${pick('subscribers')} | ${pick('framesPerSec')} | ${pick('cores')} | ${bytes} | ${pick('p50')} | ${pick('p99')} | ${per.reduce((a, f) => a + f.mismatches, 0)} | ${per.reduce((a, f) => a + f.gaps, 0)} |`)
  }
  out.push('', 'Every step:', '')
  out.push('| run | server | subscribers | updates/s (skipped) | frames/s | server cores | frames/s per core | B/frame | p50 ms | p99 ms | p99 to the socket ms | feed p50/p99 ms | mismatches | gaps | load core | pass |')
  out.push('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
  ok.forEach((r, i) => {
    for (const s of r.steps) {
      out.push(`| ${i + 1} | ${s.server} | ${s.subscribers}${s.failed ? ` of ${s.subscribers + s.failed}` : ''} | ${s.updatesPerSec}${s.skippedPerSec ? ` (${s.skippedPerSec})` : ''} | ${s.framesPerSec} | ${s.cores} | ${s.framesPerCore ?? '-'} | ${s.bytesPerFrame ?? '-'} | ${s.p50} | ${s.p99} | ${s.socketP99 ?? '-'} | ${s.feedP50 ?? '-'}/${s.feedP99 ?? '-'} | ${s.mismatches} | ${s.gaps} | ${s.loadCore} | ${s.pass ? 'yes' : 'no'} |`)
    }
  })
  out.push('')
  return out
}
