// A quote as published: the one layout the publish script
// (scripts.js, PUBLISH) writes to the symbol's channel, its history stream
// and its latest quote, and the readers of it. Nobody else reads a
// published quote's bytes.
//
//   {"seq":<N>,"epoch":"<E>","symbol":"<S>",...the quote's fields, "ts" among them}
//
// seq first and epoch second, spliced in front of the quote by the script
// (with history off there is no epoch: `{"seq":<N>,"symbol":...`); the
// rest is the fetcher's JSON of the quote without seq and epoch
// (publishArgs). A delayed copy ends with `,"delayed":true}`
// (delayedCopy, for the gateway's delayed timeline).

/** What every published quote starts with. */
export const PREFIX = '{"seq":'

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
