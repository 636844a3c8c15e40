// The receiver rules of docs/protocol.md, once for every client: the
// browser's WspsClient, k6, the testkit, chaos and the e2e fleet.
//
// Plain ESM without imports, so a browser loads it as /receiver.js next to
// /protocol.js (which re-exports it) and k6 loads it by relative path.

/**
 * Checks a delta against the seq the receiver holds for its symbol. A delta
 * applies on top of seq `base` when present (the gateway merged several
 * updates for a slow reader), else on top of `seq - 1`.
 *
 * @param {{seq: number, base?: number}} delta
 * @param {number} heldSeq seq of the quote the receiver holds
 * @returns {boolean} true when the delta continues the held quote
 */
export function continues (delta, heldSeq) {
  const base = delta.base ?? delta.seq - 1
  return base === heldSeq
}

/** What QuoteReceiver#delta did with a delta. Only APPLIED changes the held quote. */
export const Outcome = Object.freeze({
  /** It continued the held quote and was merged into it. */
  APPLIED: 'applied',
  /** Its base is past the held seq: updates were lost. Rule 3: resync the symbol. */
  GAP: 'gap',
  /** Its base is before the held seq: a duplicate or out of order. Rule 3 too: it cannot apply. */
  STALE: 'stale',
  /** Nothing is held for the symbol (no snapshot yet). Rule 3 too. */
  NO_SNAPSHOT: 'no_snapshot',
  /** The symbol awaits a fresh snapshot since resync(): deltas are dropped until it arrives. */
  RESYNCING: 'resyncing'
})

/**
 * @typedef {typeof Outcome[keyof typeof Outcome]} OutcomeValue
 * @typedef {{symbol: string, seq: number, base?: number, [field: string]: unknown}} WireQuote a `snap` quote or a `q` delta
 */

/**
 * Held quotes of one connection (or of one client across its
 * reconnections), kept by the receiver rules:
 *
 * 1. snap() replaces the held quote of its symbol.
 * 2. delta() merges a delta whose base equals the held seq.
 * 3. Any other delta is not applied: delta() says why (GAP, STALE,
 *    NO_SNAPSHOT). The caller then calls resync() and resubscribes the
 *    symbol (`unsub` + `sub`); deltas are dropped (RESYNCING) until the
 *    fresh snapshot arrives. Nothing is skipped silently: every delta that
 *    does not apply is reported.
 *
 * With `{fields: false}` only the seq is held (load generators: no object
 * per delta); quote() then returns undefined.
 */
export class QuoteReceiver {
  /** @type {Map<string, WireQuote>} symbol -> held quote (without `base`) */
  #quotes = new Map()
  /** @type {Map<string, number>} symbol -> held seq */
  #seqs = new Map()
  /** @type {Map<string, string>} symbol -> epoch of the held seq (quotes from a gateway whose fetchers keep history) */
  #epochs = new Map()
  /** @type {Map<string, number>} symbol -> when resync() was called (caller's clock) */
  #resyncing = new Map()
  #fields

  /** @param {{fields?: boolean}} [options] fields: hold whole quotes (default), else only seqs */
  constructor ({ fields = true } = {}) {
    this.#fields = fields
  }

  /**
   * Rule 1: a snapshot quote replaces the held one and ends a resync.
   * @param {WireQuote} quote
   */
  snap (quote) {
    const symbol = quote.symbol
    this.#seqs.set(symbol, quote.seq)
    if (typeof quote.epoch === 'string') this.#epochs.set(symbol, quote.epoch)
    else this.#epochs.delete(symbol)
    if (this.#fields) this.#quotes.set(symbol, { ...quote })
    this.#resyncing.delete(symbol)
  }

  /**
   * Holds a cursor without its quote (a position kept elsewhere): cursor()
   * returns it with `held: false`, so a `sub` resuming it asks for the quote
   * at it. Deltas do not apply until a snap() brings a whole quote.
   *
   * @param {string} symbol
   * @param {{seq: number, epoch: string}} cursor
   */
  hold (symbol, { seq, epoch }) {
    this.#seqs.set(symbol, seq)
    this.#epochs.set(symbol, epoch)
    this.#quotes.delete(symbol)
    this.#resyncing.delete(symbol)
  }

  /**
   * Rules 2 and 3: merges the delta when it continues the held quote, else
   * leaves everything as it was and says why not.
   *
   * @param {WireQuote} delta
   * @returns {OutcomeValue}
   */
  delta (delta) {
    const symbol = delta.symbol
    if (this.#resyncing.has(symbol)) return Outcome.RESYNCING
    const held = this.#seqs.get(symbol)
    if (held === undefined || this.#bare(symbol)) return Outcome.NO_SNAPSHOT
    if (!continues(delta, held)) return (delta.base ?? delta.seq - 1) > held ? Outcome.GAP : Outcome.STALE
    this.#seqs.set(symbol, delta.seq)
    if (typeof delta.epoch === 'string') this.#epochs.set(symbol, delta.epoch)
    if (this.#fields) {
      const { base: _base, ...fields } = delta
      // A new object per update: callers may keep the previous one.
      this.#quotes.set(symbol, { .../** @type {WireQuote} */ (this.#quotes.get(symbol)), ...fields })
    }
    return Outcome.APPLIED
  }

  /**
   * Rule 3: the symbol is being resubscribed; its deltas are dropped until
   * the next snap(). The held quote stays readable meanwhile.
   *
   * @param {string} symbol
   * @param {number} [since] when (any clock the caller likes; see resyncingSince)
   */
  resync (symbol, since = 0) {
    this.#resyncing.set(symbol, since)
  }

  /**
   * @param {string} symbol
   * @returns {number | undefined} the `since` of a pending resync, undefined when none
   */
  resyncingSince (symbol) {
    return this.#resyncing.get(symbol)
  }

  /**
   * Forgets a symbol (unsubscribed): its held quote and any pending resync.
   * @param {string} symbol
   */
  forget (symbol) {
    this.#seqs.delete(symbol)
    this.#epochs.delete(symbol)
    this.#quotes.delete(symbol)
    this.#resyncing.delete(symbol)
  }

  /** Forgets every symbol (a new connection that keeps nothing). */
  clear () {
    this.#seqs.clear()
    this.#epochs.clear()
    this.#quotes.clear()
    this.#resyncing.clear()
  }

  /**
   * @param {string} symbol
   * @returns {number | undefined} the held seq
   */
  seq (symbol) {
    return this.#seqs.get(symbol)
  }

  /**
   * Where a resumed subscription picks up (a `sub`'s `since`): the held seq
   * and its epoch. Undefined when either is unknown (nothing held, or a
   * gateway without history): such a symbol resumes with a fresh `snap`.
   * A symbol awaiting a resync has one too: what it holds is exactly where
   * the missed ticks start.
   *
   * A cursor from hold() comes with `held: false`.
   *
   * @param {string} symbol
   * @returns {{seq: number, epoch: string, held?: false} | undefined}
   */
  cursor (symbol) {
    const seq = this.#seqs.get(symbol)
    const epoch = this.#epochs.get(symbol)
    if (seq === undefined || epoch === undefined) return undefined
    return this.#bare(symbol) ? { seq, epoch, held: false } : { seq, epoch }
  }

  /**
   * @param {string} symbol
   * @returns {boolean} a cursor is held without its quote (hold())
   */
  #bare (symbol) {
    return this.#fields && !this.#quotes.has(symbol)
  }

  /**
   * @param {string} symbol
   * @returns {WireQuote | undefined} the held quote (with `{fields: false}`: always undefined)
   */
  quote (symbol) {
    return this.#quotes.get(symbol)
  }

  /** @param {string} symbol true when a quote is held and no resync is pending */
  current (symbol) {
    return this.#seqs.has(symbol) && !this.#resyncing.has(symbol)
  }

  /** Symbols with a held quote. */
  get size () {
    return this.#seqs.size
  }
}
