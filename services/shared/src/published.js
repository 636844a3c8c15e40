// A quote as published: the one layout the publish script
// (scripts.js, PUBLISH) writes to the symbol's channel, its history stream
// and its latest quote (and the NATS writer to its subject, composePublished),
// and the readers of it. Nobody else reads a
// published quote's bytes.
//
//   {"seq":<N>,"epoch":"<E>","symbol":"<S>",...the quote's fields, "ts" among them}
//
// seq first and epoch second, spliced in front of the quote by the script
// (with history off there is no epoch: `{"seq":<N>,"symbol":...`); the
// rest is the fetcher's JSON of the quote without seq and epoch
// (publishArgs). A delayed copy ends with `,"delayed":true}`
// (delayedCopy, for the gateway's delayed timeline).
//
// A traced quote (docs/operations.md, Traces of a quote's path) ends with
// `,"trace":"<W3C traceparent>"}`: the fetcher's publish span, which the
// gateway's spans of that quote descend from. Last and of fixed length, so
// the gateway finds and cuts it without parsing (traceOf, untraced) where a
// published quote enters it, and no client ever sees it.

/** What every published quote starts with. */
export const PREFIX = '{"seq":'

/**
 * A quote as published, from its seq, its epoch and the rest of the
 * fetcher's JSON of it (without the opening brace: starts with
 * `"symbol"`): what the publish script writes on Redis, for the NATS
 * writer, which composes it in JS (nats-publish.js).
 *
 * @param {number} seq
 * @param {string} epoch
 * @param {string} rest
 */
export function composePublished (seq, epoch, rest) {
  return `${PREFIX}${seq},"epoch":"${epoch}",${rest}`
}

/** What a traced quote ends with, around its traceparent (55 characters). */
const TRACE_OPEN = ',"trace":"'
const TRACE_LENGTH = TRACE_OPEN.length + 55 + 2

/**
 * @typedef {Record<string, unknown> & {symbol: string, seq: number, ts: number}} PublishedQuote
 * @typedef {{seq: number, epoch: unknown}} Cursor where a quote stands in its symbol's count
 * @typedef {{seq: number, ts: number, epoch: unknown, raw: string}} Entry a quote's place and time, with its bytes
 */

/**
 * The seq, read from the layout without parsing the rest (the hot path of
 * gap fill: many quotes looked at, few taken).
 *
 * @param {string} raw
 * @returns {number} NaN when raw is not a published quote
 */
export function seqOf (raw) {
  if (!raw.startsWith(PREFIX)) return NaN
  const end = raw.indexOf(',', PREFIX.length)
  return Number(raw.slice(PREFIX.length, end < 0 ? raw.length - 1 : end))
}

/**
 * The whole quote.
 *
 * @param {string} raw
 * @returns {PublishedQuote | null} null when it does not parse or has no numeric seq
 */
export function parsePublished (raw) {
  try {
    const q = JSON.parse(raw)
    return q !== null && typeof q === 'object' && typeof q.seq === 'number' ? q : null
  } catch {
    return null
  }
}

/**
 * @param {string | null} raw
 * @returns {Cursor | null}
 */
export function cursorOf (raw) {
  const q = raw === null ? null : parsePublished(raw)
  return q === null ? null : { seq: q.seq, epoch: q.epoch }
}

/**
 * @param {string} raw
 * @returns {Entry | null} null when it does not parse or has no seq or ts
 */
export function entryOf (raw) {
  const q = parsePublished(raw)
  return q !== null && typeof q.ts === 'number' ? { seq: q.seq, ts: q.ts, epoch: q.epoch, raw } : null
}

/**
 * A quote as a delayed subscription gets it: the published bytes with
 * `,"delayed":true` before the closing brace.
 *
 * @param {string} raw a quote as published
 * @returns {string}
 */
export function delayedCopy (raw) {
  return `${raw.slice(0, -1)},"delayed":true}`
}

/**
 * @param {string} raw
 * @returns {number} where its trace begins, -1 when it has none: O(1), one comparison
 */
function traceAt (raw) {
  const at = raw.length - TRACE_LENGTH
  return at >= 0 && raw.startsWith(TRACE_OPEN, at) ? at : -1
}

/**
 * @param {string} raw a quote as published
 * @returns {string | null} its traceparent, null when it is not traced
 */
export function traceOf (raw) {
  const at = traceAt(raw)
  return at < 0 ? null : raw.slice(at + TRACE_OPEN.length, -2)
}

/**
 * @param {string} raw a quote as published
 * @returns {string} the same without its trace (itself when untraced)
 */
export function untraced (raw) {
  const at = traceAt(raw)
  return at < 0 ? raw : `${raw.slice(0, at)}}`
}
