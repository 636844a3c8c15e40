// Where a quote's trace starts (docs/operations.md, Traces of a quote's
// path): the fetcher decides which quotes are traced, once, as they enter.
// A traced quote gets two spans, `wsps.ingest` from its arrival and, under
// it, `wsps.publish` for the script call; the publish span's traceparent
// travels inside the published quote (published.js), so the gateways' spans
// of it are its children.

import { SpanStatusCode } from '@opentelemetry/api'
import { Attr, SpanKind, SpanName, traceparentOf, under } from '@wsps/shared/tracing'

/**
 * @typedef {import('@opentelemetry/api').Span} Span
 * @typedef {import('@opentelemetry/api').Context} Context
 * @typedef {{ingest: Span, publish: Span, traceparent: string}} QuoteSpans
 * @typedef {object} TraceOptions how quotes handed to the publisher entered
 * @property {Context | null} [parent] a publish request's sampled
 *   traceparent (every quote traced under it), or null: its traceparent was
 *   not sampled (none traced); absent: each quote drawn alone
 * @property {number} [startTime] when they arrived (ms since the epoch; default now)
 */

export class IngestTraces {
  #tracer
  #sample
  #node
  #random

  /**
   * @param {object} options
   * @param {import('@opentelemetry/api').Tracer} options.tracer
   * @param {number} options.sample WSPS_TRACE_SAMPLE
   * @param {string} options.node
   * @param {() => number} [options.random]
   */
  constructor ({ tracer, sample, node, random = Math.random }) {
    this.#tracer = tracer
    this.#sample = sample
    this.#node = node
    this.#random = random
  }

  /**
   * Starts the spans of the quotes to trace, as their publish begins.
   *
   * @param {readonly {symbol: string}[]} quotes
   * @param {TraceOptions} [options]
   * @returns {(QuoteSpans | null)[] | null} per quote its spans or null; null: none traced
   */
  start (quotes, { parent, startTime } = {}) {
    if (parent === null || (parent === undefined && this.#sample === 0)) return null
    /** @type {(QuoteSpans | null)[] | null} */
    let out = null
    const now = Date.now()
    for (let i = 0; i < quotes.length; i++) {
      if (parent === undefined && this.#random() >= this.#sample) continue
      const attributes = { [Attr.SYMBOL]: quotes[i].symbol, [Attr.NODE]: this.#node }
      const ingest = this.#tracer.startSpan(SpanName.INGEST, { kind: parent ? SpanKind.SERVER : SpanKind.INTERNAL, attributes, startTime: startTime ?? now }, parent)
      const publish = this.#tracer.startSpan(SpanName.PUBLISH, { kind: SpanKind.PRODUCER, attributes, startTime: now }, under(ingest))
      out ??= new Array(quotes.length).fill(null)
      out[i] = { ingest, publish, traceparent: traceparentOf(publish) }
    }
    return out
  }

  /**
   * Ends a quote's spans with its publish's outcome.
   *
   * @param {QuoteSpans} spans
   * @param {number | string | Error} outcome its seq, why the script refused it, or the call's error
   */
  static end ({ ingest, publish }, outcome) {
    if (typeof outcome === 'number') {
      publish.setAttribute(Attr.SEQ, outcome)
      ingest.setAttribute(Attr.SEQ, outcome)
    } else if (typeof outcome === 'string') {
      publish.setAttribute(Attr.REFUSED, outcome)
      publish.setStatus({ code: SpanStatusCode.ERROR, message: `refused: ${outcome}` })
    } else {
      publish.setStatus({ code: SpanStatusCode.ERROR, message: outcome.message })
    }
    publish.end()
    ingest.end()
  }
}
