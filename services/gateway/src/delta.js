// Delta encoding of quotes. The gateway diffs each published quote against
// the previous one of its symbol ONCE per pod, serializes the delta once, and
// every subscriber gets the same string.

import { QUOTE_FIELDS } from '@wsps/protocol'

const DIFFED = QUOTE_FIELDS.filter((f) => f !== 'symbol' && f !== 'seq' && f !== 'ts')

/**
 * @typedef {Record<string, unknown> & {symbol: string, seq: number, ts: number}} Quote
 *
 * @typedef {object} Update One published quote, shared by every subscriber.
 * @property {string} symbol
 * @property {number} seq
 * @property {number} base seq the delta applies on top of
 * @property {number} ts producer timestamp (ms)
 * @property {Record<string, unknown>} fields the delta's fields (symbol, seq, ts and what changed)
 * @property {string | null} json the delta serialized once (null until needed for merged ones)
 * @property {import('./text-frame.js').TextFrame | null} frame lazily
 *   built `q` frame holding only this update, shared by its subscribers
 * @property {number} tick fanout tick that last sent it (for latency metrics)
 */

/**
 * @param {Quote} prev
 * @param {Quote} next
 * @returns {Update}
 */
export function diffQuotes (prev, next) {
  /** @type {Record<string, unknown>} */
  const fields = { symbol: next.symbol, seq: next.seq, ts: next.ts }
  const base = prev.seq
  if (base !== next.seq - 1) fields.base = base
  for (const f of DIFFED) {
    if (next[f] !== prev[f] && next[f] !== undefined) fields[f] = next[f]
  }
  return { symbol: next.symbol, seq: next.seq, base, ts: next.ts, fields, json: JSON.stringify(fields), frame: null, tick: -1 }
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
  return { symbol: newer.symbol, seq: newer.seq, base: older.base, ts: newer.ts, fields, json: null, frame: null, tick: -1 }
}
