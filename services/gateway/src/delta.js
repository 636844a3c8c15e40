// Delta encoding of quotes. The gateway diffs each published quote against
// the previous one of its symbol ONCE per pod, serializes the delta once, and
// every subscriber gets the same string; in Protobuf too, once, when the
// first reader of the binary encoding needs it (docs/protocol.md, Binary
// encoding).

import { QUOTE_FIELDS } from '@wsps/protocol'
import { encodeQuote, quotesBytes } from '@wsps/protocol/proto-codec'
import { encodeQuotes } from './protocol.js'
import { TextFrame } from './text-frame.js'

const DIFFED = QUOTE_FIELDS.filter((f) => f !== 'symbol' && f !== 'seq' && f !== 'ts')

/**
 * @typedef {Record<string, unknown> & {symbol: string, seq: number, ts: number}} Quote
 */

/**
 * One published quote's delta, shared by every subscriber. Its JSON and its
 * one-update `q` frame are built when a pass first needs them, once for
 * every subscriber; only this class writes them.
 */
export class Update {
  /** @type {string | null} the delta serialized once (null until needed, for merged ones) */
  #json
  /** @type {Buffer | null} #json's UTF-8 bytes, encoded once: what frames of non-ASCII deltas are joined from */
  #bytes = null
  /** @type {boolean | null} whether #json is ASCII, checked once */
  #ascii = null
  /** @type {import('./text-frame.js').TextFrame | null} the `q` frame holding only this update */
  #frame = null
  /** @type {Uint8Array | null} the delta as a Protobuf Quote, encoded once: what binary batches are joined from */
  #proto = null
  /** @type {import('./text-frame.js').TextFrame | null} the binary `q` frame holding only this update */
  #protoFrame = null
  /** Fan-out pass that last sent it (for latency metrics). */
  #tick = -1

  /**
   * @param {string} symbol
   * @param {number} seq
   * @param {number} base seq the delta applies on top of
   * @param {number} ts producer timestamp (ms)
   * @param {Record<string, unknown>} fields the delta's fields (symbol, seq, ts and what changed)
   * @param {string | null} json the fields serialized, if done already
   * @param {import('./quote-trace.js').QuoteTrace | null} [trace] the spans of the traced quote it holds
   */
  constructor (symbol, seq, base, ts, fields, json, trace = null) {
    this.symbol = symbol
    this.seq = seq
    this.base = base
    this.ts = ts
    this.fields = fields
    this.#json = json
    this.trace = trace
    trace?.adopt()
  }

  /** @returns {string} the delta as JSON, serialized once */
  get json () {
    return this.#json ??= JSON.stringify(this.fields)
  }

  /** @returns {Buffer} the delta as UTF-8 JSON, encoded once: a reader's batch of non-ASCII deltas joins these */
  get bytes () {
    return this.#bytes ??= Buffer.from(this.json)
  }

  /** @returns {boolean} the JSON is ASCII (each char one byte): a reader's batch of such deltas is joined as text */
  get ascii () {
    if (this.#ascii === null) {
      const json = this.json
      this.#ascii = Buffer.byteLength(json) === json.length
    }
    return this.#ascii
  }

  /**
   * @returns {import('./text-frame.js').TextFrame} a `q` frame holding only
   *   this update: every subscriber it is the only update for shares it,
   *   framed once (text-frame.js)
   */
  get frame () {
    return this.#frame ??= new TextFrame(encodeQuotes([this.json]))
  }

  /** @returns {Uint8Array} the delta as a Protobuf Quote message, encoded once */
  get proto () {
    return this.#proto ??= encodeQuote(this.fields)
  }

  /**
   * @returns {import('./text-frame.js').TextFrame} the binary `q` frame
   *   holding only this update, shared like `frame` by its subscribers of
   *   the binary encoding
   */
  get protoFrame () {
    return this.#protoFrame ??= TextFrame.binary(quotesBytes('q', [this.proto]))
  }

  /**
   * Notes that a chunk of a pass wrote it.
   *
   * @param {number} tick the chunk (Fanout counts them)
   * @returns {boolean} true the first time in this chunk (the pass's
   *   latency sample is taken at the last chunk that wrote it)
   */
  sentIn (tick) {
    if (this.#tick === tick) return false
    this.#tick = tick
    return true
  }
}

/**
 * @param {Quote} prev
 * @param {Quote} next
 * @param {import('./quote-trace.js').QuoteTrace | null} [trace] next's, when it is traced
 * @returns {Update}
 */
export function diffQuotes (prev, next, trace = null) {
  /** @type {Record<string, unknown>} */
  const fields = { symbol: next.symbol, seq: next.seq, ts: next.ts }
  const base = prev.seq
  if (base !== next.seq - 1) fields.base = base
  for (const f of DIFFED) {
    if (next[f] !== prev[f] && next[f] !== undefined) fields[f] = next[f]
  }
  // A delayed feed's quotes say so in every delta too, not only in the
  // snapshot (docs/protocol.md, Delayed grants).
  if (next.delayed === true) fields.delayed = true
  return new Update(next.symbol, next.seq, base, next.ts, fields, JSON.stringify(fields), trace)
}

/**
 * Merges a newer update into an older one not yet sent (conflation). The
 * result applies on top of `older.base` and holds every field either changed.
 *
 * @param {Update} older
 * @param {Update} newer
 * @returns {Update}
 */
export function mergeUpdates (older, newer) {
  /** @type {Record<string, unknown>} */
  const fields = { ...older.fields, ...newer.fields, base: older.base }
  if (older.base === newer.seq - 1) delete fields.base
  // The merged update holds both quotes: it carries the newer's trace, or
  // the older's (one trace per update; a second one ends, conflated).
  if (older.trace !== null && newer.trace !== null && older.trace !== newer.trace) older.trace.conflated()
  return new Update(newer.symbol, newer.seq, older.base, newer.ts, fields, null, newer.trace ?? older.trace)
}
