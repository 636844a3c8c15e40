// Where a quote's trace starts (ingest-traces.js) on a real redis-server:
// the Publisher's traced quotes get an ingest span and a publish span under
// it, their seq or refusal on them, and the publish span's traceparent as
// the published quote's last member, which the gateway cuts (published.js);
// a publish request's sampled traceparent is the parent of all its quotes,
// an unsampled one traces none.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Redis } from 'ioredis'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { redisKeys } from '@wsps/shared/keys'
import { traceOf, untraced } from '@wsps/shared/published'
import { SpanName, remoteParent } from '@wsps/shared/tracing'
import { useScriptedRedis } from '@wsps/testkit/scripted-redis'
import { IngestTraces } from '../src/ingest-traces.js'
import { Publisher } from '../src/publisher.js'

const db = useScriptedRedis()
let n = 0

/** @param {{sample?: number, random?: () => number}} [o] */
async function setup ({ sample = 1, random } = {}) {
  const keys = redisKeys(`t${n++}`)
  const exporter = new InMemorySpanExporter()
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] })
  const traces = new IngestTraces({ tracer: provider.getTracer('test'), sample, node: 'f-1', random })
  const publisher = new Publisher({ redis: db.r, keys, ttlMs: 60_000, sharded: false, historySize: 100, historyTtlMs: 60_000, traces })
  const sub = new Redis(db.redis.url)
  /** @type {string[]} */
  const messages = []
  sub.on('message', (_ch, msg) => messages.push(msg))
  await sub.subscribe(keys.channel('A'), keys.channel('B'))
  const spans = (/** @type {string} */ name) => exporter.getFinishedSpans().filter((s) => s.name === name)
  return { publisher, messages, spans, close: () => sub.disconnect() }
}

/** @param {() => boolean} ok */
async function until (ok) {
  for (let i = 0; i < 100 && !ok(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
}

test('a traced quote: ingest span, publish span under it with the seq, and its traceparent as the published quote\'s last member', async (t) => {
  const s = await setup()
  t.after(s.close)
  const start = Date.now() - 50
  assert.equal((await s.publisher.publish([{ symbol: 'A', ts: Date.now(), bid: 1 }], { trace: { startTime: start } })).published, 1)
  const [ingest] = s.spans(SpanName.INGEST)
  const [publish] = s.spans(SpanName.PUBLISH)
  assert.equal(ingest.parentSpanContext, undefined, 'a root')
  assert.equal(publish.parentSpanContext?.spanId, ingest.spanContext().spanId)
  assert.equal(publish.attributes['wsps.seq'], 1)
  assert.equal(publish.attributes['wsps.symbol'], 'A')
  assert.ok(ingest.startTime[0] * 1000 + ingest.startTime[1] / 1e6 <= start + 1, 'the ingest span starts at the arrival')
  await until(() => s.messages.length === 1)
  const raw = untraced(s.messages[0])
  assert.equal(traceOf(s.messages[0]), `00-${publish.spanContext().traceId}-${publish.spanContext().spanId}-01`)
  assert.deepEqual(JSON.parse(raw), { seq: 1, epoch: JSON.parse(raw).epoch, symbol: 'A', ts: JSON.parse(raw).ts, bid: 1 }, 'without it, the quote as ever')
})

test('a quote read back with a trace (the previous quote a provider builds on) does not carry that trace on', async (t) => {
  const s = await setup({ sample: 0 })
  t.after(s.close)
  await s.publisher.publish([/** @type {any} */ ({ symbol: 'A', ts: Date.now(), bid: 1, trace: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })])
  await until(() => s.messages.length === 1)
  assert.equal(traceOf(s.messages[0]), null)
  assert.equal(s.spans(SpanName.INGEST).length, 0)
})

test('sampling draws each quote alone; a refused quote\'s publish span says why', async (t) => {
  const draws = [0.5, 0.05]
  const s = await setup({ sample: 0.1, random: () => /** @type {number} */ (draws.shift()) })
  t.after(s.close)
  const now = Date.now()
  await s.publisher.publish([{ symbol: 'A', ts: now }, { symbol: 'B', ts: now }])
  assert.deepEqual(s.spans(SpanName.PUBLISH).map((p) => p.attributes['wsps.symbol']), ['B'])
  draws.push(0)
  await s.publisher.publish([{ symbol: 'B', ts: now - 1000 }])
  const refused = s.spans(SpanName.PUBLISH)[1]
  assert.equal(refused.attributes['wsps.refused'], 'old')
  assert.equal(refused.status.code, 2, 'ERROR')
})

test('a publish request\'s sampled traceparent parents every quote; an unsampled one traces none', async (t) => {
  const s = await setup({ sample: 0 })
  t.after(s.close)
  const now = Date.now()
  const parent = remoteParent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')
  await s.publisher.publish([{ symbol: 'A', ts: now }, { symbol: 'B', ts: now }], { trace: { parent } })
  const ingests = s.spans(SpanName.INGEST)
  assert.equal(ingests.length, 2)
  for (const i of ingests) {
    assert.equal(i.spanContext().traceId, '4bf92f3577b34da6a3ce929d0e0e4736')
    assert.equal(i.parentSpanContext?.spanId, '00f067aa0ba902b7')
  }
  await s.publisher.publish([{ symbol: 'A', ts: now + 1 }], { trace: { parent: remoteParent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00') } })
  assert.equal(s.spans(SpanName.INGEST).length, 2)
})
