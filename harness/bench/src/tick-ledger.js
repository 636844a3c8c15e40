// One client's account of the ticks of its symbols, by the receiver rules
// of docs/protocol.md (services/protocol/receiver.js), the way the Go load
// generator counts them (loadgen/internal/account, Subs.Apply): what it
// holds per symbol (seq and epoch: its `since` on a reconnect), gaps, ticks
// lost and duplicates.
//
// A `q` entry of seq s with base b (s - 1 when it has none: always so in
// distinct mode) continues a held seq h only when b === h. Any other b > h
// is a gap that loses the b - h ticks h+1..b (the entry delivers (b, s]). A
// `snap` quote of seq s > h + 1 for a held symbol loses the s - h - 1 ticks
// it jumps over (a `"recovered":false` snap, a resubscribe). Entries at or
// below h are duplicates; before a symbol's first quote nothing is held and
// nothing counts. So in distinct mode every seq must arrive.

import { Outcome, QuoteReceiver } from '@wsps/protocol'

/** @typedef {{symbol: string, seq: number, base?: number, epoch?: string}} LedgerQuote */

export class TickLedger {
  /** What the client holds (seq and epoch only), by the receiver's own rules. */
  #held = new QuoteReceiver({ fields: false })
  gaps = 0
  ticksLost = 0
  dups = 0

  /**
   * A `snap` quote (rule 1: it replaces the held one).
   * @param {LedgerQuote} q
   */
  snap (q) {
    const h = this.#held.seq(q.symbol)
    if (h !== undefined && q.seq > h + 1) this.ticksLost += q.seq - h - 1
    // A new epoch is a new history: its seq replaces the held one even if lower.
    if (h === undefined || q.seq > h || (typeof q.epoch === 'string' && q.epoch !== this.cursor(q.symbol)?.epoch)) this.#held.snap(q)
  }

  /**
   * A `q` entry (rules 2 and 3). One that does not continue the held seq
   * is held anyway once its loss is counted (the next entries are measured
   * from it), with the epoch held so far unless it names one.
   *
   * @param {LedgerQuote} d
   * @returns {boolean} it continued the held seq (nothing lost before it)
   */
  delta (d) {
    const h = this.#held.seq(d.symbol)
    if (h === undefined) {
      this.#held.snap(d)
      return false
    }
    if (d.seq <= h) {
      this.dups++
      return false
    }
    if (this.#held.delta(d) === Outcome.APPLIED) return true
    const base = d.base ?? d.seq - 1
    this.gaps++
    if (base > h) this.ticksLost += base - h
    const epoch = d.epoch ?? this.cursor(d.symbol)?.epoch
    this.#held.snap(epoch === undefined ? d : { ...d, epoch })
    return false
  }

  /**
   * @param {string} symbol
   * @returns {number | undefined} the held seq
   */
  seq (symbol) {
    return this.#held.seq(symbol)
  }

  /**
   * The `since` entry of a symbol (QuoteReceiver#cursor): its held seq and
   * epoch, undefined when either is unknown (history off: no epoch).
   *
   * @param {string} symbol
   */
  cursor (symbol) {
    return this.#held.cursor(symbol)
  }
}
