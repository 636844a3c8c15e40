// Traces of a quote's path on real processes (issue 52): redis-server, the
// OpenTelemetry Collector built from source (infra/otelcol), a push fetcher
// and a sim fetcher, each with its gateway, both services exporting to the
// collector. A publish request's sampled traceparent and the sim provider's
// own sampling each give a chain wsps.ingest -> wsps.publish ->
// wsps.receive -> wsps.fanout -> wsps.write per client; no client frame
// ever holds a quote's trace; an untraced quote makes no span; a collector
// that is away costs spans, never quotes.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, test } from 'node:test'
import { freePort } from '../src/net.js'
import { startCollector } from '../src/otel-collector.js'
import { checkChain, formatChain, traceChains } from '../src/trace-chain.js'
import { setUp, useStack, waitFor } from '../src/index.js'

const TOKEN = 'traces-test-publish-token-0123'
const stack = useStack()
/** @type {import('../src/otel-collector.js').CollectorHandle | undefined} */
let collector
after(() => collector?.close())
const on = setUp(async () => {
  collector = await startCollector()
  const traced = { WSPS_OTLP_TRACES_URL: collector.tracesUrl }
  await stack.start()
  const pushGateway = await stack.gateway({ ...traced, WSPS_REDIS_KEY_PREFIX: 'tp' })
  const pushFetcher = await stack.fetcher({ ...traced, WSPS_REDIS_KEY_PREFIX: 'tp', WSPS_PROVIDER: 'push', WSPS_PUBLISH_TOKEN: TOKEN, WSPS_TRACE_SAMPLE: 0 })
  const simGateway = await stack.gateway({ ...traced, WSPS_REDIS_KEY_PREFIX: 'ts' })
  await stack.fetcher({ ...traced, WSPS_REDIS_KEY_PREFIX: 'ts', WSPS_TRACE_SAMPLE: 1 })
  return { pushGateway, pushFetcher, simGateway, collector }
})

/**
 * @param {object} body
 * @param {string} [traceparent]
 */
async function publish (body, traceparent) {
  /** @type {Record<string, string>} */
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }
  if (traceparent) headers.traceparent = traceparent
  const res = await fetch(`${on.pushFetcher.url}/v1/quotes`, { method: 'POST', headers, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

/**
 * The whole chains (ingest to a client's write) of the spans matched, once
 * there are `writes` of them: the two processes export on their own
 * schedules, so a gateway's spans may come in before the fetcher's.
 *
 * @param {(s: import('../src/otlp-spans.js').Span) => boolean} match the trace's spans
 * @param {number} writes
 */
async function chainsOf (match, writes) {
  /** @type {import('../src/otlp-spans.js').Span[][]} */
  let chains = []
  try {
    return /** @type {import('../src/otlp-spans.js').Span[][]} */ (await waitFor(() => {
      chains = traceChains(on.collector.spans().filter(match)).filter((c) => c.at(-1)?.name === 'wsps.write')
      const whole = chains.filter((c) => c[0].name === 'wsps.ingest')
      return whole.length >= writes ? whole : null
    }, { timeout: 15_000, message: `${writes} whole chains at the collector` }))
  } catch (err) {
    throw new Error(`${/** @type {Error} */ (err).message}; there: ${chains.map(formatChain).join('; ') || 'none'}`)
  }
}

/** @param {import('../src/test-client.js').TestClient} c */
const tracesSeen = (c) => c.frames.filter((f) => JSON.stringify(f).includes('"trace"'))

test('a publish request with a sampled traceparent: one chain from its span to each client\'s write, symbol and seq on every span; no frame holds the trace', async () => {
  const merge = await stack.client(on.pushGateway.wsUrl)
  await merge.sub(['TRC1'])
  const distinct = await stack.client(on.pushGateway.wsUrl)
  await distinct.sub(['TRC1'], { mode: 'distinct' })
  const traceId = randomBytes(16).toString('hex')
  const parent = randomBytes(8).toString('hex')
  const res = await publish({ quotes: [{ symbol: 'TRC1', bid: 10.5, ask: 10.6 }] }, `00-${traceId}-${parent}-01`)
  assert.deepEqual([res.status, res.body], [200, { accepted: 1 }])
  await waitFor(() => merge.quote('TRC1')?.bid === 10.5 && distinct.quote('TRC1')?.bid === 10.5, { message: 'TRC1 at both clients' })
  const chains = await chainsOf((s) => s.traceId === traceId, 2)
  for (const chain of chains) {
    assert.deepEqual(checkChain(chain), [], formatChain(chain))
    assert.equal(chain[0].parentSpanId, parent, 'the ingest span is the request span\'s child')
    assert.equal(chain[1].attributes['wsps.seq'], merge.quote('TRC1')?.seq)
  }
  assert.deepEqual(new Set(chains.map((c) => c.at(-1)?.attributes['wsps.connection'])).size, 2, 'one write per client')
  // The quote as a new client's snapshot and as a resumed client's replay from history.
  const late = await stack.client(on.pushGateway.wsUrl)
  await late.sub(['TRC1'])
  await waitFor(() => late.quote('TRC1')?.bid === 10.5, { message: 'TRC1 snapshot' })
  const resumed = await stack.client(on.pushGateway.wsUrl)
  const ack = await resumed.sub(['TRC1'], { mode: 'distinct', since: { TRC1: { seq: 0, epoch: /** @type {string} */ (merge.quote('TRC1')?.epoch) } } })
  assert.deepEqual(ack.recovered, { TRC1: true })
  await resumed.next((f) => f.op === 'q' && f.quotes.some((/** @type {any} */ q) => q.symbol === 'TRC1' && q.bid === 10.5), { from: 0 })
  for (const c of [merge, distinct, late, resumed]) assert.deepEqual(tracesSeen(c), [], 'a client never sees a trace')
})

test('a quote the sim provider drew (WSPS_TRACE_SAMPLE=1): a chain from its own root ingest span', async () => {
  const c = await stack.client(on.simGateway.wsUrl)
  await c.sub(['SIMT'])
  await c.waitQuotes('SIMT', 2)
  const [chain] = await chainsOf((s) => s.attributes['wsps.symbol'] === 'SIMT', 1)
  assert.deepEqual(checkChain(chain), [], formatChain(chain))
  assert.equal(chain[0].parentSpanId, '', 'a root: no request started it')
  assert.deepEqual(tracesSeen(c), [])
})

test('unsampled: a request with an unsampled traceparent, or none with WSPS_TRACE_SAMPLE=0, makes no span', async () => {
  const c = await stack.client(on.pushGateway.wsUrl)
  await c.sub(['TRC0'])
  const traceId = randomBytes(16).toString('hex')
  assert.equal((await publish({ quotes: [{ symbol: 'TRC0', bid: 1 }] }, `00-${traceId}-${randomBytes(8).toString('hex')}-00`)).status, 200)
  assert.equal((await publish({ quotes: [{ symbol: 'TRC0', bid: 2, ts: Date.now() + 1 }] })).status, 200)
  await waitFor(() => c.quote('TRC0')?.bid === 2, { message: 'TRC0 at the client' })
  // A traced quote published after them: once its spans are in, theirs would be too.
  const marker = randomBytes(16).toString('hex')
  await publish({ quotes: [{ symbol: 'TRC0', bid: 3, ts: Date.now() + 2 }] }, `00-${marker}-${randomBytes(8).toString('hex')}-01`)
  await chainsOf((s) => s.traceId === marker, 1)
  assert.deepEqual(on.collector.spans().filter((s) => s.attributes['wsps.symbol'] === 'TRC0' && s.traceId !== marker).map((s) => s.name), [])
})

test('a collector that is away costs the spans, never a quote: every quote traced, none reaches it, clients get them all the same', async () => {
  const away = `http://127.0.0.1:${await freePort()}/v1/traces`
  const gateway = await stack.gateway({ WSPS_OTLP_TRACES_URL: away, WSPS_REDIS_KEY_PREFIX: 'tx' })
  const fetcher = await stack.fetcher({ WSPS_OTLP_TRACES_URL: away, WSPS_REDIS_KEY_PREFIX: 'tx', WSPS_TRACE_SAMPLE: 1 })
  const c = await stack.client(gateway.wsUrl)
  await c.sub(['AWAY'], { mode: 'distinct' })
  await c.waitQuotes('AWAY', 4)
  // The exporter retries a refused export with backoff before it gives the batch up.
  await waitFor(() => fetcher.logs.some((l) => l.includes('traces not exported')), { timeout: 45_000, message: 'the fetcher telling its spans were dropped' })
  assert.equal(fetcher.logs.filter((l) => l.includes('traces not exported')).length, 1, 'once, not once a batch')
  const seqs = c.seqs.get('AWAY') ?? []
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => seqs[0] + i), 'every tick, in order')
  assert.deepEqual(c.problems, [])
})
