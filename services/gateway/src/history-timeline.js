// A symbol's history read by time: the stream the publish script appends
// every quote to (entry ID = seq, the quote as published, which carries
// its `ts`), read through the broker's history() and latest() so this
// module knows no Redis key nor command. The delayed timeline
// (delayed-broker.js) asks two things of it: the quote as it was at a
// moment (the newest entry at or before it), and the entries after a seq.

import { entryOf } from '@wsps/shared/published'

/**
 * @typedef {import('@wsps/shared/published').Entry} Entry
 * @typedef {Pick<import('./broker.js').Broker, 'history' | 'latest'>} HistorySource
 */

export class HistoryTimeline {
  #source

  /** @param {HistorySource} source the real-time broker */
  constructor (source) {
    this.#source = source
  }

  /**
   * The entries after a seq, in seq order.
   *
   * @param {string} symbol
   * @param {number} seq
   * @param {number} max
   * @returns {Promise<Entry[]>}
   */
  async after (symbol, seq, max) {
    return this.#entries(await this.#source.history(symbol, seq + 1, null, max))
  }

  /**
   * The entries from..to (to null: the newest), in seq order, at most max.
   *
   * @param {string} symbol
   * @param {number} from
   * @param {number | null} to
   * @param {number} max
   * @returns {Promise<Entry[]>}
   */
  async range (symbol, from, to, max) {
    return this.#entries(await this.#source.history(symbol, from, to, max))
  }

  /**
   * The newest quote published at or before `cutoff` (by its `ts`), and
   * where reading on from it starts.
   *
   * The newest quote is the latest one (broker.latest()); the oldest is
   * the stream's first entry. Between them a binary search on seq finds
   * the newest entry not after the cutoff: about log2(history size) reads,
   * made once per symbol a gateway starts serving delayed.
   *
   * @param {string} symbol
   * @param {number} cutoff ms since the epoch
   * @returns {Promise<{entry: Entry | null, after: number}>} entry: that
   *   quote (null: history holds none so old); after: the seq after which
   *   the entries still to come are (the entry's own, or the one before the
   *   oldest held)
   */
  async at (symbol, cutoff) {
    const [latest] = await this.#source.latest([symbol])
    if (latest instanceof Error) throw latest
    const newest = latest === null ? null : entryOf(latest)
    if (newest !== null && newest.ts <= cutoff) return { entry: newest, after: newest.seq }
    const [first] = await this.range(symbol, 0, null, 1)
    if (first === undefined) return { entry: null, after: newest === null ? 0 : newest.seq }
    if (first.ts > cutoff) return { entry: null, after: first.seq - 1 }
    let lo = first
    // The newest entry is after the cutoff (or unknown: its latest key
    // expired; then the stream is read forward from lo instead).
    if (newest === null) return this.#scan(symbol, lo, cutoff)
    let hi = newest.seq
    while (hi - lo.seq > 1) {
      const mid = Math.floor((lo.seq + hi) / 2)
      const [e] = await this.range(symbol, mid, hi - 1, 1)
      if (e === undefined || e.ts > cutoff) hi = e === undefined ? mid : e.seq
      else lo = e
    }
    return { entry: lo, after: lo.seq }
  }

  /**
   * Reads forward from `from` (at or before the cutoff) to the last entry
   * at or before the cutoff.
   *
   * @param {string} symbol
   * @param {Entry} from
   * @param {number} cutoff
   * @returns {Promise<{entry: Entry, after: number}>}
   */
  async #scan (symbol, from, cutoff) {
    let best = from
    for (;;) {
      const next = await this.after(symbol, best.seq, 1000)
      const i = next.findIndex((e) => e.ts > cutoff)
      const due = i < 0 ? next : next.slice(0, i)
      if (due.length) best = due[due.length - 1]
      if (i >= 0 || next.length < 1000) return { entry: best, after: best.seq }
    }
  }

  /**
   * @param {string[]} raws
   * @returns {Entry[]} those that parse
   */
  #entries (raws) {
    /** @type {Entry[]} */
    const out = []
    for (const raw of raws) {
      const e = entryOf(raw)
      if (e !== null) out.push(e)
    }
    return out
  }
}
