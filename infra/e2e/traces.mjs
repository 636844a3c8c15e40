// Issue 52 item 3: traces of a quote's path. The e2e's OpenTelemetry
// Collector (infra/e2e/otel-collector.yaml, the distribution of
// infra/otelcol) runs in the release's namespace before the install; the
// release sends it its spans (tracing.otlpTracesUrl, one quote in
// tracing.sampleRatio: infra/e2e/values.yaml). Once host clients are
// subscribed, its span file must hold a whole path of one sampled quote:
// wsps.ingest -> wsps.publish (fetcher) -> wsps.receive -> wsps.fanout ->
// wsps.write (a gateway), linked by parent span ids, one symbol and seq
// (harness/testkit/src/trace-chain.js judges it; otlp-spans.js reads the file).
import { writeFileSync } from 'node:fs'
import { parseSpanFile } from '../../harness/testkit/src/otlp-spans.js'
import { checkChain, formatChain, traceChains } from '../../harness/testkit/src/trace-chain.js'

export const COLLECTOR_MANIFEST = 'infra/e2e/otel-collector.yaml'
const SELECTOR = 'app.kubernetes.io/name=otel-collector'
/**
 * The file exporter's file and the one rotated out beside it (the
 * manifest's rotation), oldest first: only the newest may end inside a
 * batch still being written (otlp-spans.js), and it is read last. No file
 * yet: nothing (cat reads the empty stdin).
 */
const CAT_SPANS = 'cat $(ls -tr /data/spans*.jsonl 2>/dev/null) </dev/null'

/**
 * What the e2e lends this module (its kubectl in the release's namespace, bounded waits, log and fail).
 * @typedef {{code: number | null, out: string, err: string}} RunResult
 * @typedef {{
 *   kubectl: (args: string[], o?: {timeoutMs?: number, allowFail?: boolean}) => Promise<RunResult>,
 *   until: <T>(what: string, timeoutMs: number, check: () => T | Promise<T>, everyMs?: number) => Promise<any>,
 *   log: (msg: string) => void,
 *   fail: (msg: string) => never,
 *   ns: string
 * }} TracesContext
 */

/**
 * The URL the release sends its spans to (tracing.otlpTracesUrl).
 * @param {string} ns
 */
export const tracesUrl = (ns) => `http://otel-collector.${ns}.svc:4318/v1/traces`

/**
 * A fresh collector (a leftover one from a kept cluster would still hold
 * an earlier run's spans), ready before the release starts sending.
 * @param {TracesContext} ctx
 */
export async function deployCollector (ctx) {
  await ctx.kubectl(['delete', '-f', COLLECTOR_MANIFEST, '--ignore-not-found', '--cascade=foreground', '--wait=true', '--timeout=60s'], { timeoutMs: 70000 })
  await ctx.kubectl(['apply', '-f', COLLECTOR_MANIFEST])
  await ctx.kubectl(['rollout', 'status', 'deployment/otel-collector', '--timeout=120s'], { timeoutMs: 130000 })
}

/**
 * The collector's spans so far, and its span files' text (kept for a look
 * after the run). A file not written yet reads as empty.
 * @param {TracesContext} ctx
 */
async function readSpans (ctx) {
  const pods = JSON.parse((await ctx.kubectl(['get', 'pods', '-l', SELECTOR, '--field-selector=status.phase=Running', '-o', 'json'])).out).items
    .filter((/** @type {any} */ p) => !p.metadata.deletionTimestamp)
  if (pods.length !== 1) return { text: '', spans: [], error: `${pods.length} running collector pods` }
  const r = await ctx.kubectl(['exec', pods[0].metadata.name, '-c', 'otelcol', '--', 'sh', '-c', CAT_SPANS], { allowFail: true, timeoutMs: 30000 })
  if (r.code !== 0) return { text: '', spans: [], error: `kubectl exec ${pods[0].metadata.name}: exit ${r.code} ${r.err.trim()}` }
  return { text: r.out, spans: parseSpanFile(r.out), error: '' }
}

/**
 * Spans by name, for a message: `wsps.ingest 12, wsps.publish 12, ...`.
 * @param {import('../../harness/testkit/src/otlp-spans.js').Span[]} spans
 */
function census (spans) {
  /** @type {Record<string, number>} */
  const n = {}
  for (const s of spans) n[`${s.service}/${s.name}`] = (n[`${s.service}/${s.name}`] || 0) + 1
  return Object.entries(n).sort().map(([k, v]) => `${k} ${v}`).join(', ') || 'none'
}

/**
 * Waits (bounded) for a whole quote path in the collector's spans.
 * @param {TracesContext} ctx
 * @returns {Promise<string>} the report line
 */
export async function checkTraces (ctx) {
  let last = { text: '', spans: /** @type {import('../../harness/testkit/src/otlp-spans.js').Span[]} */ ([]), error: '' }
  try {
    const found = await ctx.until('a sampled quote\'s whole path in the collector\'s spans', 90000, async () => {
      last = await readSpans(ctx)
      if (last.error) return last.error
      const chains = traceChains(last.spans)
      const whole = chains.filter((c) => checkChain(c).length === 0)
      if (whole.length) return { chains, whole }
      // The nearest miss: the longest chain, and what is wrong with it.
      const best = chains.reduce((a, c) => (c.length > (a?.length ?? 0) ? c : a), /** @type {typeof chains[0] | undefined} */ (undefined))
      return `${last.spans.length} spans (${census(last.spans)}), ${chains.length} chains, none whole${best ? `; longest: ${checkChain(best).join('; ')}` : ''}`
    }, 3000)
    const traces = new Set(last.spans.map((s) => s.traceId)).size
    const line = `traces: ${last.spans.length} spans in ${traces} traces (${census(last.spans)}); ${found.whole.length} of ${found.chains.length} chains a whole quote path, e.g. ${formatChain(found.whole[0])}`
    ctx.log('  ' + line)
    return line
  } finally {
    if (last.text) writeFileSync('.run/e2e/otel-spans.jsonl', last.text)
  }
}
