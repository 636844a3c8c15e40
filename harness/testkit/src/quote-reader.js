// The quote-checking loop every harness client shares (the TestClient, the
// chaos LeanClient and fleet worker, the e2e fleet): `snap` and `q` frames
// through the protocol's QuoteReceiver, a quote for a symbol not
// subscribed noted as stray, and a delta that does not apply handled by
// docs/protocol.md rule 3 (resync, and resubscribe when the client wants
// it). What each client counts or records stays in its own hooks.

import { ClientOp, Outcome, ServerOp } from '@wsps/protocol'

/**
 * @typedef {import('@wsps/protocol').QuoteReceiver} QuoteReceiver
 * @typedef {{symbol: string, seq: number, base?: number, ts?: number, [field: string]: any}} WireQuote
 * @typedef {typeof Outcome[keyof typeof Outcome]} OutcomeValue
 */

/**
 * @typedef {object} QuoteReaderOptions
 * @property {(symbol: string) => boolean} [wants] false: the quote is stray (default: every symbol is wanted)
 * @property {boolean} [readStrays] read a stray quote anyway after `stray` (default: skip it)
 * @property {((frame: string) => void) | null} [send] rule 3's resubscribe (`unsub` + `sub`) goes
 *   through it; null (default): no resubscribe, the next snapshot of the symbol continues
 * @property {Record<string, unknown>} [delivery] fields of that `sub` naming the client's delivery (e.g. `{mode: 'distinct'}`)
 * @property {(kind: 'snap' | 'delta', quote: WireQuote, now: number) => void} [stray]
 * @property {(quote: WireQuote, heldBefore: number | undefined, now: number) => void} [snap] after the receiver took it
 * @property {(delta: WireQuote, now: number) => void} [applied] after the receiver merged it
 * @property {(delta: WireQuote, outcome: OutcomeValue, held: number | undefined, now: number) => void} [broken]
 *   a delta that did not apply (GAP, STALE, NO_SNAPSHOT); called before the resync
 */

export class QuoteReader {
  #receiver
  #options

  /**
   * @param {QuoteReceiver} receiver the client's held quotes
   * @param {QuoteReaderOptions} [options]
   */
  constructor (receiver, options = {}) {
    this.#receiver = receiver
    this.#options = options
  }

  /**
   * Reads one frame; anything but `snap` and `q` is left to the caller.
   *
   * @param {any} msg a parsed server frame
   * @param {number} [now] the frame's receive time, handed to the hooks
   * @returns {boolean} it was a quote frame
   */
  read (msg, now = Date.now()) {
    if (msg.op === ServerOp.SNAP) {
      for (const q of msg.quotes) {
        if (!this.#wanted('snap', q, now)) continue
        const before = this.#receiver.seq(q.symbol)
        this.#receiver.snap(q)
        this.#options.snap?.(q, before, now)
      }
      return true
    }
    if (msg.op === ServerOp.QUOTES) {
      for (const d of msg.quotes) {
        if (!this.#wanted('delta', d, now)) continue
        const held = this.#receiver.seq(d.symbol)
        const outcome = this.#receiver.delta(d)
        if (outcome === Outcome.APPLIED) {
          this.#options.applied?.(d, now)
        } else if (outcome !== Outcome.RESYNCING) {
          this.#options.broken?.(d, outcome, held, now)
          // Rule 3: drop it, and resubscribe: the `sub` answers with a fresh snapshot.
          this.#receiver.resync(d.symbol)
          const send = this.#options.send
          if (send) {
            send(JSON.stringify({ op: ClientOp.UNSUB, symbols: [d.symbol] }))
            send(JSON.stringify({ op: ClientOp.SUB, symbols: [d.symbol], ...this.#options.delivery }))
          }
        }
      }
      return true
    }
    return false
  }

  /**
   * @param {'snap' | 'delta'} kind
   * @param {WireQuote} q
   * @param {number} now
   * @returns {boolean} read it
   */
  #wanted (kind, q, now) {
    const { wants, readStrays = false, stray } = this.#options
    if (!wants || wants(q.symbol)) return true
    stray?.(kind, q, now)
    return readStrays
  }
}
