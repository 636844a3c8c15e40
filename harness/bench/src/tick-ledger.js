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

/** @typedef {{symbol: string, seq: number, base?: number, epoch?: string}} LedgerQuote */

export class TickLedger {
  /** @type {Map<string, number>} symbol -> held seq */
  #seqs = new Map()
  /** @type {Map<string, string>} symbol -> epoch of the held seq */
  #epochs = new Map()
  gaps = 0
  ticksLost = 0
  dups = 0

  /**
   * A `snap` quote (rule 1: it replaces the held one).
   * @param {LedgerQuote} q
   */
  snap (q) {
    const h = this.#seqs.get(q.symbol)
    if (h !== undefined && q.seq > h + 1) this.ticksLost += q.seq - h - 1
    // A new epoch is a new history: its seq replaces the held one even if lower.
    if (h === undefined || q.seq > h || (typeof q.epoch === 'string' && q.epoch !== this.#epochs.get(q.symbol))) this.#hold(q)
  }

  /**
   * A `q` entry (rules 2 and 3).
   * @param {LedgerQuote} d
   * @returns {boolean} it continued the held seq (nothing lost before it)
   */
  delta (d) {
    const h = this.#seqs.get(d.symbol)
    if (h === undefined) {
      this.#hold(d)
      return false
    }
    if (d.seq <= h) {
      this.dups++
      return false
    }
    const base = d.base ?? d.seq - 1
    if (base !== h) this.gaps++
    if (base > h) this.ticksLost += base - h
    this.#hold(d)
    return base === h
  }

  /** @param {LedgerQuote} q */
  #hold (q) {
    this.#seqs.set(q.symbol, q.seq)
    if (typeof q.epoch === 'string') this.#epochs.set(q.symbol, q.epoch)
  }

  /**
   * @param {string} symbol
   * @returns {number | undefined} the held seq
   */
  seq (symbol) {
    return this.#seqs.get(symbol)
  }

  /**
   * The `since` entry of a symbol: its held seq and epoch, undefined when
   * either is unknown (a gateway without history sends no epoch).
   *
   * @param {string} symbol
   * @returns {{seq: number, epoch: string} | undefined}
   */
  cursor (symbol) {
    const seq = this.#seqs.get(symbol)
    const epoch = this.#epochs.get(symbol)
    return seq === undefined || epoch === undefined ? undefined : { seq, epoch }
  }
}
