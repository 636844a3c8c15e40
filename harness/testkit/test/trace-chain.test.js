// The trace checks of issue 52 on hand-made spans: a span file in the
// collector's format (one OTLP JSON export request per line) is read into
// flat spans (otlp-spans.js), traceChains() finds each path from the
// fetcher's wsps.ingest to a gateway's wsps.write, and checkChain() passes a
// good one and names what is wrong with a broken parent link, another
// quote's seq, a wrong service or a missing connection.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseSpanFile } from '../src/otlp-spans.js'
import { QUOTE_PATH, checkChain, formatChain, traceChains } from '../src/trace-chain.js'

const TRACE = '5b8efff798038103d269b633813fc60c'
const T0 = 1_780_000_000_000_000_000n // ns

/**
 * An OTLP JSON span as the collector's file exporter writes it.
 *
 * @param {{id: string, parent?: string, name: string, seq?: number, symbol?: string, conn?: string, startUs?: number, us?: number, trace?: string}} s
 */
function otlpSpan ({ id, parent = '', name, seq, symbol = 'AAPL', conn, startUs = 0, us = 250, trace = TRACE }) {
  /** @type {{key: string, value: object}[]} */
  const attributes = [{ key: 'wsps.symbol', value: { stringValue: symbol } }]
  if (seq !== undefined) attributes.push({ key: 'wsps.seq', value: { intValue: String(seq) } })
  if (conn !== undefined) attributes.push({ key: 'wsps.connection', value: { stringValue: conn } })
  const start = T0 + BigInt(startUs) * 1000n
  return {
    traceId: trace,
    spanId: id,
    ...(parent ? { parentSpanId: parent } : {}),
    name,
    kind: 1,
    startTimeUnixNano: String(start),
    endTimeUnixNano: String(start + BigInt(us) * 1000n),
    attributes,
    status: {}
  }
}

/**
 * One export request (one line of the file) from a service.
 *
 * @param {string} service
 * @param {object[]} spans
 */
const line = (service, spans) => JSON.stringify({
  resourceSpans: [{
    resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
    scopeSpans: [{ scope: { name: 'wsps' }, spans }]
  }]
})

const FETCHER = [
  otlpSpan({ id: 'a000000000000001', name: 'wsps.ingest', us: 400 }),
  otlpSpan({ id: 'a000000000000002', parent: 'a000000000000001', name: 'wsps.publish', seq: 42, startUs: 100 })
]
/** Gateway 1: one client written; gateway 2: two. */
const GATEWAY1 = [
  otlpSpan({ id: 'b000000000000001', parent: 'a000000000000002', name: 'wsps.receive', seq: 42, startUs: 500 }),
  otlpSpan({ id: 'b000000000000002', parent: 'b000000000000001', name: 'wsps.fanout', seq: 42, startUs: 600 }),
  otlpSpan({ id: 'b000000000000003', parent: 'b000000000000002', name: 'wsps.write', seq: 42, conn: 'c1', startUs: 700, us: 20 })
]
const GATEWAY2 = [
  otlpSpan({ id: 'c000000000000001', parent: 'a000000000000002', name: 'wsps.receive', seq: 42, startUs: 510 }),
  otlpSpan({ id: 'c000000000000002', parent: 'c000000000000001', name: 'wsps.fanout', seq: 42, startUs: 610 }),
  otlpSpan({ id: 'c000000000000003', parent: 'c000000000000002', name: 'wsps.write', seq: 42, conn: 'c2', startUs: 710 }),
  otlpSpan({ id: 'c000000000000004', parent: 'c000000000000002', name: 'wsps.write', seq: 42, conn: 'c3', startUs: 720 })
]
const FILE = [line('wsps-quote-fetcher', FETCHER), line('wsps-gateway', GATEWAY1), line('wsps-gateway', GATEWAY2)].join('\n') + '\n'

test('a span file is read into flat spans: ids, parent, service, attributes as JS values, duration', () => {
  const spans = parseSpanFile(FILE)
  assert.equal(spans.length, 9)
  const publish = spans.find((s) => s.name === 'wsps.publish')
  assert.deepEqual({ ...publish, startMs: undefined }, {
    traceId: TRACE,
    spanId: 'a000000000000002',
    parentSpanId: 'a000000000000001',
    name: 'wsps.publish',
    service: 'wsps-quote-fetcher',
    attributes: { 'wsps.symbol': 'AAPL', 'wsps.seq': 42 },
    startMs: undefined,
    durationMs: 0.25
  })
  assert.equal(publish?.startMs, 1_780_000_000_000.1)
  assert.equal(spans.find((s) => s.name === 'wsps.ingest')?.parentSpanId, '')
})

test('a last line still being written is left out; a broken line in the middle is an error', () => {
  const cut = FILE + line('wsps-gateway', GATEWAY1).slice(0, 50)
  assert.equal(parseSpanFile(cut).length, 9)
  assert.equal(parseSpanFile(FILE.trimEnd()).length, 9, 'a whole last line without its newline counts')
  assert.throws(() => parseSpanFile('{"resourceSpans": [\n' + FILE), /span file line 1 is not JSON/)
  assert.deepEqual(parseSpanFile(''), [])
})

test('traceChains: one chain per client written, root first; each passes checkChain', () => {
  const chains = traceChains(parseSpanFile(FILE))
  assert.equal(chains.length, 3)
  for (const chain of chains) {
    assert.deepEqual(chain.map((s) => s.name), QUOTE_PATH.map((s) => s.name))
    assert.deepEqual(checkChain(chain), [])
  }
  assert.deepEqual(chains.map((c) => c.at(-1)?.attributes['wsps.connection']).sort(), ['c1', 'c2', 'c3'])
  assert.match(formatChain(chains[0]), /^AAPL seq 42, trace 5b8e\w+: wsps\.ingest \(wsps-quote-fetcher, 0\.400 ms\) -> wsps\.publish .* -> wsps\.write \(wsps-gateway, 0\.020 ms\)$/)
})

test('an ingest with a parent outside the file (a publisher\'s traceparent) is still the root', () => {
  const fetcher = [otlpSpan({ id: 'a000000000000001', parent: 'ffffffffffffffff', name: 'wsps.ingest' }), FETCHER[1]]
  const chains = traceChains(parseSpanFile([line('wsps-quote-fetcher', fetcher), line('wsps-gateway', GATEWAY1)].join('\n')))
  assert.equal(chains.length, 1)
  assert.deepEqual(checkChain(chains[0]), [])
})

test('a broken parent link fails: the chain stops short, and a chain joined by hand names the link', () => {
  const broken = GATEWAY1.map((s) => s.name === 'wsps.fanout' ? { ...s, parentSpanId: 'b0000000000000ff' } : s)
  const spans = parseSpanFile([line('wsps-quote-fetcher', FETCHER), line('wsps-gateway', broken)].join('\n'))
  const chains = traceChains(spans)
  assert.ok(chains.length > 0)
  for (const chain of chains) assert.notDeepEqual(checkChain(chain), [], `chain ${chain.map((s) => s.name).join(' -> ')} passed`)
  const short = chains.find((c) => c.at(-1)?.name === 'wsps.write')
  assert.deepEqual(short?.map((s) => s.name), ['wsps.fanout', 'wsps.write'])
  assert.match(checkChain(/** @type {any} */ (short))[0], /^2 spans \(wsps\.fanout -> wsps\.write\), want 5/)

  const byName = Object.fromEntries(spans.map((s) => [s.name, s]))
  const joined = QUOTE_PATH.map((p) => byName[p.name])
  assert.deepEqual(checkChain(joined), ['wsps.fanout\'s parent is b0000000000000ff, not wsps.receive (b000000000000001)'])
})

test('checkChain names another quote\'s seq or symbol, a wrong service, another trace, a write without its connection', () => {
  const good = traceChains(parseSpanFile(FILE))[0]
  /**
   * The good chain with span `i` changed.
   *
   * @param {number} i
   * @param {(s: import('../src/otlp-spans.js').Span) => object} change
   */
  const withSpan = (i, change) => good.map((s, j) => j === i ? { ...s, ...change(s) } : s)
  assert.deepEqual(checkChain(withSpan(3, (s) => ({ attributes: { ...s.attributes, 'wsps.seq': 43 } }))), ['wsps.fanout has wsps.seq 43, wsps.publish 42'])
  assert.deepEqual(checkChain(withSpan(4, (s) => ({ attributes: { ...s.attributes, 'wsps.symbol': 'MSFT' } }))), ['wsps.write has wsps.symbol "MSFT", wsps.publish "AAPL"'])
  assert.deepEqual(checkChain(withSpan(0, (s) => ({ attributes: { ...s.attributes, 'wsps.symbol': 'MSFT' } }))), ['wsps.ingest has wsps.symbol "MSFT", wsps.publish "AAPL"'])
  assert.deepEqual(checkChain(withSpan(2, () => ({ service: 'wsps-quote-fetcher' }))), ['wsps.receive is from service "wsps-quote-fetcher", want wsps-gateway'])
  assert.deepEqual(checkChain(withSpan(1, (s) => ({ attributes: { 'wsps.symbol': s.attributes['wsps.symbol'] } }))).slice(0, 1), ['wsps.publish has no integer wsps.seq (undefined)'])
  assert.deepEqual(checkChain(withSpan(4, () => ({ attributes: { 'wsps.symbol': 'AAPL', 'wsps.seq': 42 } }))), ['wsps.write has no wsps.connection'])
  assert.ok(checkChain(withSpan(2, () => ({ traceId: '0'.repeat(32) }))).some((p) => p.startsWith('wsps.receive is in trace 000')))
  assert.deepEqual(checkChain(good.slice(0, 4)), ['4 spans (wsps.ingest -> wsps.publish -> wsps.receive -> wsps.fanout), want 5 (wsps.ingest -> wsps.publish -> wsps.receive -> wsps.fanout -> wsps.write)'])
  assert.deepEqual(checkChain([...good.slice(0, 2), good[3], good[2], good[4]]).slice(0, 2), ['span 3 is wsps.fanout, want wsps.receive', 'wsps.fanout\'s parent is b000000000000001, not wsps.publish (a000000000000002)'])
})
