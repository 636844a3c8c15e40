// The gateway's spans of a traced quote (quote-trace.js): receive under the
// fetcher's publish span, fan-out under the receive, one write per client
// under the fan-out (capped), on the real OpenTelemetry SDK with an
// in-memory exporter; nothing for quotes that arrive untraced or unsampled.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { SpanName } from '@wsps/shared/tracing'
import { QuoteTracer, WRITE_SPANS } from '../src/quote-trace.js'
import { gatewayParts, quote, tick } from './helper.js'

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PUBLISH_SPAN = '00f067aa0ba902b7'

function traced () {
  const exporter = new InMemorySpanExporter()
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] })
  const parts = gatewayParts({ tracer: new QuoteTracer(provider.getTracer('test'), 'gw-1') })
  /** The spans ended so far, by name. */
  const spans = () => {
    /** @type {Record<string, import('@opentelemetry/sdk-trace').ReadableSpan[]>} */
    const by = {}
    for (const s of exporter.getFinishedSpans()) (by[s.name] ??= []).push(s)
    return by
  }
  return { ...parts, spans }
}

/** @param {ReturnType<typeof traced>} parts @param {number} n */
async function live ({ broker, hub, client }, n) {
  broker.latestValues.set('AAPL', quote(1))
  const clients = Array.from({ length: n }, () => client())
  for (const c of clients) hub.add('AAPL', c.c)
  await tick(); await tick()
  return clients
}

test('a traced quote: receive under the publish span, fan-out under the receive, a write per client under the fan-out, all with symbol and seq', async () => {
  const parts = traced()
  const clients = await live(parts, 2)
  parts.hub.onQuote('AAPL', quote(2, { bid: 1.2 }), `00-${TRACE_ID}-${PUBLISH_SPAN}-01`)
  assert.equal(parts.spans()[SpanName.FANOUT], undefined, 'the fan-out span lasts until the pass has written')
  parts.pass()
  const by = parts.spans()
  const [receive] = by[SpanName.RECEIVE]
  const [fanout] = by[SpanName.FANOUT]
  const writes = by[SpanName.WRITE]
  assert.equal(receive.spanContext().traceId, TRACE_ID)
  assert.equal(receive.parentSpanContext?.spanId, PUBLISH_SPAN)
  assert.equal(fanout.parentSpanContext?.spanId, receive.spanContext().spanId)
  assert.equal(writes.length, 2)
  assert.deepEqual(new Set(writes.map((w) => w.attributes['wsps.connection'])), new Set(clients.map((c) => c.conn.id)))
  for (const s of [receive, fanout, ...writes]) {
    assert.equal(s.spanContext().traceId, TRACE_ID)
    assert.equal(s.attributes['wsps.symbol'], 'AAPL')
    assert.equal(s.attributes['wsps.seq'], 2)
  }
  for (const w of writes) {
    assert.equal(w.parentSpanContext?.spanId, fanout.spanContext().spanId)
    assert.ok(Number(w.attributes['wsps.bytes']) > 0)
  }
  assert.equal(fanout.attributes['wsps.writes'], 2)
  for (const c of clients) assert.equal(c.ws.sent.at(-1).quotes[0].bid, 1.2, 'and the clients got the quote, without its trace')
})

test('write spans are capped per quote; the fan-out span counts every write', async () => {
  const parts = traced()
  await live(parts, WRITE_SPANS + 4)
  parts.hub.onQuote('AAPL', quote(2, { bid: 1.2 }), `00-${TRACE_ID}-${PUBLISH_SPAN}-01`)
  parts.pass()
  const by = parts.spans()
  assert.equal(by[SpanName.WRITE].length, WRITE_SPANS)
  assert.equal(by[SpanName.FANOUT][0].attributes['wsps.writes'], WRITE_SPANS + 4)
})

test('untraced, unsampled or malformed traceparents make no spans; a quote not fanned out ends its fan-out span saying why', async () => {
  const parts = traced()
  await live(parts, 1)
  parts.hub.onQuote('AAPL', quote(2), null)
  parts.hub.onQuote('AAPL', quote(3), `00-${TRACE_ID}-${PUBLISH_SPAN}-00`)
  parts.hub.onQuote('AAPL', quote(4), '00-nothex-01')
  parts.pass()
  assert.deepEqual(parts.spans(), {})
  // Older than what the feed holds: dropped, and its trace says so.
  parts.hub.onQuote('AAPL', quote(3), `00-${TRACE_ID}-${PUBLISH_SPAN}-01`)
  const by = parts.spans()
  assert.equal(by[SpanName.FANOUT][0].attributes['wsps.taken'], 'stale')
  assert.equal(by[SpanName.WRITE], undefined)
})

test('two traced quotes merged before a pass: the older trace ends as conflated, the newer is written', async () => {
  const parts = traced()
  await live(parts, 1)
  parts.hub.onQuote('AAPL', quote(2, { bid: 1.2 }), `00-${TRACE_ID}-${PUBLISH_SPAN}-01`)
  parts.hub.onQuote('AAPL', quote(3, { bid: 1.3 }), `00-${'1'.repeat(32)}-${PUBLISH_SPAN}-01`)
  parts.pass()
  const fanouts = parts.spans()[SpanName.FANOUT]
  assert.deepEqual(fanouts.map((s) => [s.attributes['wsps.seq'], s.attributes['wsps.taken'] ?? 'written']), [[2, 'conflated'], [3, 'written']])
  assert.deepEqual(parts.spans()[SpanName.WRITE].map((s) => s.spanContext().traceId), ['1'.repeat(32)])
})

test('a symbol\'s first quote goes out as a snapshot: its writes are traced, the fan-out span says snapshot', async () => {
  const parts = traced()
  const clients = [parts.client(), parts.client()]
  for (const c of clients) parts.hub.add('AAPL', c.c)
  await tick(); await tick()
  parts.hub.onQuote('AAPL', quote(1, { bid: 1.1 }), `00-${TRACE_ID}-${PUBLISH_SPAN}-01`)
  const by = parts.spans()
  assert.equal(by[SpanName.FANOUT][0].attributes['wsps.snapshot'], true)
  assert.equal(by[SpanName.FANOUT][0].attributes['wsps.writes'], 2)
  assert.equal(by[SpanName.WRITE].length, 2)
  for (const c of clients) assert.equal(c.ws.sent.at(-1).op, 'snap')
})
