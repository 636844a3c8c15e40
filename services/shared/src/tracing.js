// Traces of a quote's path (docs/operations.md): OpenTelemetry spans sent by
// OTLP/HTTP (JSON) to WSPS_OTLP_TRACES_URL, none at all when it is empty.
//
// A quote's trace crosses Redis inside the quote (published.js: its last
// member, the W3C traceparent of the fetcher's publish span), so every
// process names its parent explicitly: no context manager, no propagator,
// no global provider. What is traced is decided once, where a quote enters
// (the fetcher); the gateway traces what arrives traced.

import { ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api'

/** Span names, one per step of a quote's path. */
export const SpanName = Object.freeze({
  /** fetcher: from a quote's arrival (a job's fetch, a stream record, a publish request) to its publish's answer */
  INGEST: 'wsps.ingest',
  /** fetcher: the publish script call that gave the quote its seq */
  PUBLISH: 'wsps.publish',
  /** gateway: the quote read from its channel */
  RECEIVE: 'wsps.receive',
  /** gateway: from the receive to the end of the fan-out pass that wrote it to its subscribers */
  FANOUT: 'wsps.fanout',
  /** gateway: one client's write of a frame holding it */
  WRITE: 'wsps.write'
})

/** Span attribute names. */
export const Attr = Object.freeze({
  SYMBOL: 'wsps.symbol',
  SEQ: 'wsps.seq',
  EPOCH: 'wsps.epoch',
  NODE: 'wsps.node',
  /** fetcher: why the publish script refused the quote */
  REFUSED: 'wsps.refused',
  /** gateway: ms from the quote's ts to its receive */
  AGE_MS: 'wsps.age_ms',
  /** gateway: what the feed did with a quote it did not fan out */
  TAKEN: 'wsps.taken',
  /** gateway: the quote went to its subscribers as a snapshot (the first held, a new epoch), not in a pass */
  SNAPSHOT: 'wsps.snapshot',
  /** gateway: connections written (write spans are capped) */
  WRITES: 'wsps.writes',
  CONNECTION: 'wsps.connection',
  BYTES: 'wsps.bytes'
})

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/**
 * @typedef {import('@opentelemetry/api').Tracer} Tracer
 * @typedef {import('@opentelemetry/api').Span} Span
 * @typedef {import('@opentelemetry/api').Context} Context
 * @typedef {{tracer: Tracer, close(): Promise<void>}} Tracing
 */

/**
 * Starts the SDK when a URL is set. Export failures (a collector away) are
 * logged at most once a minute: spans are dropped, quotes never wait.
 *
 * @param {object} options
 * @param {string} options.url WSPS_OTLP_TRACES_URL ('' off)
 * @param {string} options.service service.name
 * @param {string} options.node this process (WSPS_NODE_NAME)
 * @param {import('pino').Logger} options.logger
 * @returns {Promise<Tracing | null>} null when off
 */
export async function startTracing ({ url, service, node, logger }) {
  if (!url) return null
  const [{ TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, { diag, DiagLogLevel }] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/api')
  ])
  const log = logger.child({ component: 'tracing' })
  let warnedAt = -Infinity
  const warn = (/** @type {unknown[]} */ ...args) => {
    if (Date.now() - warnedAt < 60_000) return
    warnedAt = Date.now()
    log.warn({ url, detail: args.map(String).join(' ') }, 'traces not exported (dropped)')
  }
  diag.setLogger({ error: warn, warn, info () {}, debug () {}, verbose () {} }, DiagLogLevel.WARN)
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'service.instance.id': node }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }), scheduledDelayMillis: 1000 })]
  })
  log.info({ url }, 'tracing on')
  return {
    tracer: provider.getTracer('wsps'),
    close: () => provider.shutdown().catch((err) => warn(err))
  }
}

/**
 * @param {Span} span
 * @returns {string} its W3C traceparent
 */
export function traceparentOf (span) {
  const { traceId, spanId, traceFlags } = span.spanContext()
  return `00-${traceId}-${spanId}-0${traceFlags & TraceFlags.SAMPLED}`
}

/**
 * A remote parent from a W3C traceparent.
 *
 * @param {unknown} traceparent
 * @returns {Context | null | undefined} null: valid but not sampled (trace
 *   nothing); undefined: none or not a traceparent
 */
export function remoteParent (traceparent) {
  const m = typeof traceparent === 'string' ? TRACEPARENT.exec(traceparent) : null
  if (m === null || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return undefined
  const flags = parseInt(m[3], 16)
  if ((flags & TraceFlags.SAMPLED) === 0) return null
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: m[1], spanId: m[2], traceFlags: flags, isRemote: true })
}

/**
 * @param {Span} span
 * @returns {Context} a context whose spans are span's children
 */
export function under (span) {
  return trace.setSpan(ROOT_CONTEXT, span)
}

export { SpanKind }
