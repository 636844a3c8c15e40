// The testkit's OpenTelemetry Collector (harness/testkit/src/otel-collector.js),
// the real binary of infra/otelcol: spans sent by the official JS SDK with
// its OTLP/HTTP JSON exporter (what the services use) come back from its
// span file with their trace, parent link, names, service and attributes;
// traceChains() finds the parent -> child path in them. The collector comes
// from `tools/tools.sh otelcol`.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { context, trace } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { startCollector } from '../src/otel-collector.js'
import { traceChains } from '../src/trace-chain.js'
import { waitFor } from '../src/wait.js'

/** @type {import('../src/otel-collector.js').CollectorHandle} */
let collector
/** @type {TracerProvider} */
let provider

before(async () => {
  collector = await startCollector()
  provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'wsps-collector-test' }),
    spanProcessors: [new SimpleSpanProcessor({ exporter: new OTLPTraceExporter({ url: collector.tracesUrl }) })]
  })
})

after(async () => {
  await provider?.shutdown()
  await collector?.close()
})

test('a parent and its child, sent as OTLP/HTTP JSON, are read back with their link and attributes', async () => {
  assert.deepEqual(collector.spans(), [], 'the readiness probe (an empty export) wrote no span')
  const tracer = provider.getTracer('wsps-test')
  const parent = tracer.startSpan('wsps.publish', { attributes: { 'wsps.symbol': 'AAPL', 'wsps.seq': 42 } })
  // No context manager: the child names its parent through an explicit context.
  const child = tracer.startSpan('wsps.receive', { attributes: { 'wsps.symbol': 'AAPL', 'wsps.seq': 42, 'wsps.ratio': 0.5, 'wsps.live': true } }, trace.setSpan(context.active(), parent))
  child.end()
  parent.end()
  await provider.forceFlush()

  await waitFor(() => collector.spans().length >= 2, { timeout: 10_000, interval: 100, message: 'both spans in the collector\'s file' })
  const spans = collector.spans()
  assert.equal(spans.length, 2)
  const p = spans.find((s) => s.name === 'wsps.publish')
  const c = spans.find((s) => s.name === 'wsps.receive')
  assert.ok(p && c, `names: ${spans.map((s) => s.name)}`)
  assert.equal(p.traceId, parent.spanContext().traceId)
  assert.equal(p.spanId, parent.spanContext().spanId)
  assert.equal(p.parentSpanId, '')
  assert.equal(c.traceId, p.traceId)
  assert.equal(c.spanId, child.spanContext().spanId)
  assert.equal(c.parentSpanId, p.spanId)
  for (const s of spans) assert.equal(s.service, 'wsps-collector-test')
  assert.deepEqual(p.attributes, { 'wsps.symbol': 'AAPL', 'wsps.seq': 42 })
  assert.deepEqual(c.attributes, { 'wsps.symbol': 'AAPL', 'wsps.seq': 42, 'wsps.ratio': 0.5, 'wsps.live': true })
  assert.ok(p.durationMs >= c.durationMs && c.durationMs >= 0, `durations ${p.durationMs} ${c.durationMs} ms`)
  assert.ok(Math.abs(p.startMs - Date.now()) < 60_000, `start ${p.startMs}`)

  assert.deepEqual(traceChains(spans).map((chain) => chain.map((s) => s.name)), [['wsps.publish', 'wsps.receive']])
})
