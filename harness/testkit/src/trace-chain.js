// What a traced quote's spans must look like (issue 52): one chain
// wsps.ingest -> wsps.publish in the fetcher, wsps.receive -> wsps.fanout
// -> wsps.write in a gateway, each span the child of the one before, all
// about one quote. Pure functions over flat spans (otlp-spans.js), shared
// by the integration tests and the e2e (infra/e2e/traces.mjs).

/** @typedef {import('./otlp-spans.js').Span} Span */

/** @param {unknown} v an attribute value, for a message (a BigInt seq too) */
const show = (v) => typeof v === 'bigint' ? `${v}n` : JSON.stringify(v)

/** The spans of a quote's path, in order, and the service that emits each. */
export const QUOTE_PATH = Object.freeze([
  { name: 'wsps.ingest', service: 'wsps-quote-fetcher' },
  { name: 'wsps.publish', service: 'wsps-quote-fetcher' },
  { name: 'wsps.receive', service: 'wsps-gateway' },
  { name: 'wsps.fanout', service: 'wsps-gateway' },
  { name: 'wsps.write', service: 'wsps-gateway' }
].map((s) => Object.freeze(s)))

/**
 * Every path through the spans' parent links: for each span that no span of
 * its trace names as its parent (a leaf), the spans from the highest
 * ancestor present down to it. A quote published once and written to three
 * clients by two gateways gives three chains, sharing their first spans; a
 * broken link gives a chain that stops short of the root.
 *
 * @param {Span[]} spans
 * @returns {Span[][]} root first
 */
export function traceChains (spans) {
  /** @type {Map<string, Map<string, Span>>} trace id -> span id -> span */
  const traces = new Map()
  for (const s of spans) {
    let t = traces.get(s.traceId)
    if (!t) traces.set(s.traceId, (t = new Map()))
    t.set(s.spanId, s)
  }
  /** @type {Span[][]} */
  const chains = []
  for (const t of traces.values()) {
    const parents = new Set([...t.values()].map((s) => s.parentSpanId))
    for (const leaf of t.values()) {
      if (parents.has(leaf.spanId)) continue
      const chain = [leaf]
      const seen = new Set([leaf.spanId])
      for (let p = t.get(leaf.parentSpanId); p && !seen.has(p.spanId); p = t.get(p.parentSpanId)) {
        seen.add(p.spanId)
        chain.unshift(p)
      }
      chains.push(chain)
    }
  }
  return chains
}

/**
 * What is wrong with `chain` as a quote's path (QUOTE_PATH): names and
 * services in order, one trace, each span's parent the span before it (the
 * first may have a parent outside the file: a publisher's traceparent),
 * wsps.symbol and wsps.seq present and equal from wsps.publish on (the
 * fetcher's wsps.ingest, before the seq exists, must agree on the symbol if
 * it has one), and wsps.connection on wsps.write.
 *
 * @param {Span[]} chain root first (a traceChains() entry)
 * @returns {string[]} the problems; none for a good chain
 */
export function checkChain (chain) {
  const problems = []
  const names = chain.map((s) => s.name).join(' -> ')
  if (chain.length !== QUOTE_PATH.length) problems.push(`${chain.length} spans (${names || 'none'}), want ${QUOTE_PATH.length} (${QUOTE_PATH.map((s) => s.name).join(' -> ')})`)
  chain.slice(0, QUOTE_PATH.length).forEach((s, i) => {
    const want = QUOTE_PATH[i]
    if (s.name !== want.name) problems.push(`span ${i + 1} is ${s.name}, want ${want.name}`)
    if (s.service !== want.service) problems.push(`${s.name} is from service ${JSON.stringify(s.service)}, want ${want.service}`)
    if (s.traceId !== chain[0].traceId) problems.push(`${s.name} is in trace ${s.traceId}, ${chain[0].name} in ${chain[0].traceId}`)
    if (i > 0 && s.parentSpanId !== chain[i - 1].spanId) problems.push(`${s.name}'s parent is ${s.parentSpanId || 'none'}, not ${chain[i - 1].name} (${chain[i - 1].spanId})`)
  })
  const quote = chain.find((s) => s.name === 'wsps.publish') ?? chain[1] ?? chain[0]
  const symbol = quote?.attributes['wsps.symbol']
  const seq = quote?.attributes['wsps.seq']
  if (quote && (typeof symbol !== 'string' || !symbol)) problems.push(`${quote.name} has no wsps.symbol (${show(symbol)})`)
  if (quote && !Number.isSafeInteger(seq)) problems.push(`${quote.name} has no integer wsps.seq (${show(seq)})`)
  for (const s of chain.slice(chain.indexOf(quote) + 1)) {
    if (s.attributes['wsps.symbol'] !== symbol) problems.push(`${s.name} has wsps.symbol ${show(s.attributes['wsps.symbol'])}, ${quote?.name} ${show(symbol)}`)
    if (s.attributes['wsps.seq'] !== seq) problems.push(`${s.name} has wsps.seq ${show(s.attributes['wsps.seq'])}, ${quote?.name} ${seq}`)
  }
  const ingest = chain[0]
  if (ingest && ingest !== quote && 'wsps.symbol' in ingest.attributes && ingest.attributes['wsps.symbol'] !== symbol) {
    problems.push(`${ingest.name} has wsps.symbol ${show(ingest.attributes['wsps.symbol'])}, ${quote?.name} ${show(symbol)}`)
  }
  const write = chain.find((s) => s.name === 'wsps.write')
  if (write && write.attributes['wsps.connection'] === undefined) problems.push('wsps.write has no wsps.connection')
  return problems
}

/**
 * One line for a report: the quote, then each span with its service and
 * duration, root first.
 *
 * @param {Span[]} chain
 */
export function formatChain (chain) {
  const q = chain.find((s) => s.name === 'wsps.publish') ?? chain[0]
  const spans = chain.map((s) => `${s.name} (${s.service}, ${s.durationMs.toFixed(3)} ms)`).join(' -> ')
  return `${q?.attributes['wsps.symbol']} seq ${q?.attributes['wsps.seq']}, trace ${chain[0]?.traceId}: ${spans}`
}
