// A traced quote's spans in a gateway (docs/operations.md, Traces of a
// quote's path): `wsps.receive` under the fetcher's publish span, then
// `wsps.fanout` from the receive to the end of the pass that wrote it, and
// under that one `wsps.write` per client written (the first WRITE_SPANS of
// them; the fan-out span counts them all). The updates built from the quote
// carry its QuoteTrace (delta.js); nothing is traced that did not arrive so.

import { Attr, SpanKind, SpanName, remoteParent, under } from '@wsps/shared/tracing'

/** Most write spans per traced quote: a symbol with 10 000 subscribers must not make 10 000 spans. */
export const WRITE_SPANS = 16

/** What a feed did with a quote it did not fan out, by Taken value (feed.js). */
const TAKEN = ['stale', 'held', 'new_epoch', 'gap']

/**
 * @typedef {import('@opentelemetry/api').Span} Span
 * @typedef {import('./delta.js').Quote} Quote
 */

export class QuoteTracer {
  #tracer
  #node

  /**
   * @param {import('@opentelemetry/api').Tracer} tracer
   * @param {string} node
   */
  constructor (tracer, node) {
    this.#tracer = tracer
    this.#node = node
  }

  /**
   * A quote arrived with a trace.
   *
   * @param {Quote} quote
   * @param {string} traceparent its publish span
   * @returns {QuoteTrace | null} null when the traceparent is unusable or not sampled
   */
  received (quote, traceparent) {
    const parent = remoteParent(traceparent)
    if (!parent) return null
    const now = Date.now()
    const attributes = { [Attr.SYMBOL]: quote.symbol, [Attr.SEQ]: quote.seq, [Attr.NODE]: this.#node }
    const receive = this.#tracer.startSpan(SpanName.RECEIVE, {
      kind: SpanKind.CONSUMER,
      startTime: now,
      attributes: { ...attributes, [Attr.AGE_MS]: Math.max(0, now - quote.ts), ...(typeof quote.epoch === 'string' ? { [Attr.EPOCH]: quote.epoch } : {}) }
    }, parent)
    receive.end(now)
    return new QuoteTrace(this.#tracer, this.#tracer.startSpan(SpanName.FANOUT, { startTime: now, attributes }, under(receive)), attributes)
  }
}

/** One traced quote's fan-out, told by the updates that carry it. */
export class QuoteTrace {
  #tracer
  #fanout
  #attributes
  #writes = 0
  #adopted = false
  #ended = false

  /**
   * @param {import('@opentelemetry/api').Tracer} tracer
   * @param {Span} fanout
   * @param {Record<string, string | number>} attributes
   */
  constructor (tracer, fanout, attributes) {
    this.#tracer = tracer
    this.#fanout = fanout
    this.#attributes = attributes
  }

  /** An update carries it (delta.js). */
  adopt () {
    this.#adopted = true
  }

  /** It goes to every subscriber as a snapshot at once (the first quote held, a new epoch): its writes follow now. */
  snapshot () {
    this.#adopted = true
    this.#fanout.setAttribute(Attr.SNAPSHOT, true)
  }

  /**
   * The feed is done with the quote: one no update carries is not fanned
   * out (dropped, held for a gap fill, sent as a snapshot) and ends here.
   *
   * @param {number} taken a Taken value (feed.js)
   */
  settle (taken) {
    if (this.#adopted) return
    this.#fanout.setAttribute(Attr.TAKEN, TAKEN[taken] ?? String(taken))
    this.#end()
  }

  /**
   * A client's frame holding it was written.
   *
   * @param {number} connection its id
   * @param {number} bytes the frame's
   * @param {number} startTime when its write began (ms)
   */
  wrote (connection, bytes, startTime) {
    if (++this.#writes > WRITE_SPANS) return
    this.#tracer.startSpan(SpanName.WRITE, {
      kind: SpanKind.PRODUCER,
      startTime,
      attributes: { ...this.#attributes, [Attr.CONNECTION]: connection, [Attr.BYTES]: bytes }
    }, under(this.#fanout)).end()
  }

  /**
   * The first pass that wrote it ended (the fanout): so does its fan-out
   * span, at the pass's last write. Writes to slow readers in later passes
   * still get their spans.
   *
   * @param {number} at ms
   */
  passed (at) {
    this.#end(at)
  }

  /** A newer traced quote of its symbol was merged over it before any pass wrote it. */
  conflated () {
    if (this.#ended) return
    this.#fanout.setAttribute(Attr.TAKEN, 'conflated')
    this.#end()
  }

  /** @param {number} [at] */
  #end (at) {
    if (this.#ended) return
    this.#ended = true
    this.#fanout.setAttribute(Attr.WRITES, this.#writes)
    this.#fanout.end(at)
  }
}
