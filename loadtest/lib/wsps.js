// The wsps client side of one connection, as the load test checks it:
// requests, and the receiver rules of docs/protocol.md (the protocol's
// QuoteReceiver). Plain ESM without k6 APIs; ramp.js turns the outcomes into
// metrics.

import { ClientOp, CloseCode, ErrorCode, Limits, NO_RECONNECT_CODES, Outcome, QuoteReceiver } from '../../services/protocol/index.js'

/** Most symbols one sub/unsub request may carry (docs/protocol.md). */
export const { MAX_SYMBOLS_PER_REQUEST } = Limits

/** Outcome of one delta. */
export const Delta = Object.freeze({
  /** continues the held quote */
  OK: 0,
  /** its base is past the held seq: updates were lost */
  GAP: 1,
  /** its base is before the held seq: a duplicate or out of order */
  STALE: 2,
  /** no snapshot held for the symbol yet */
  NO_SNAPSHOT: 3,
  /** a symbol this connection did not subscribe to */
  WRONG_SYMBOL: 4,
  /** the symbol is being resubscribed or unsubscribed: dropped, not counted */
  IGNORED: 5
})

export const DELTA_KIND = Object.freeze(['ok', 'gap', 'stale', 'no_snapshot', 'wrong_symbol', 'ignored'])

/** The receiver's outcome as a Delta value. */
const FROM_OUTCOME = Object.freeze({
  [Outcome.APPLIED]: Delta.OK,
  [Outcome.GAP]: Delta.GAP,
  [Outcome.STALE]: Delta.STALE,
  [Outcome.NO_SNAPSHOT]: Delta.NO_SNAPSHOT,
  [Outcome.RESYNCING]: Delta.IGNORED
})

/**
 * Requests for `symbols`, split to the per-request limit.
 *
 * @param {'sub' | 'unsub'} op
 * @param {string[]} symbols
 * @param {() => number} nextId
 * @param {{mode?: 'merge' | 'distinct', since?: Map<string, {seq: number, epoch: string}>}} [sub] a sub's
 *   delivery mode, and the cursors of the symbols it resumes
 * @returns {string[]} JSON frames
 */
export function requests (op, symbols, nextId, { mode, since } = {}) {
  const out = []
  for (let i = 0; i < symbols.length; i += MAX_SYMBOLS_PER_REQUEST) {
    const part = symbols.slice(i, i + MAX_SYMBOLS_PER_REQUEST)
    /** @type {Record<string, unknown>} */
    const frame = { op: op === 'sub' ? ClientOp.SUB : ClientOp.UNSUB, symbols: part, id: nextId() }
    if (op === 'sub' && mode !== undefined && mode !== 'merge') frame.mode = mode
    if (op === 'sub' && since !== undefined) {
      /** @type {Record<string, {seq: number, epoch: string}>} */
      const cursors = {}
      for (const s of part) {
        const c = since.get(s)
        if (c !== undefined) cursors[s] = c
      }
      if (Object.keys(cursors).length) frame.since = cursors
    }
    out.push(JSON.stringify(frame))
  }
  return out
}

// A `q` frame holding exactly one delta, as the gateway writes it: symbol,
// seq and ts first (delta.js builds them in that order), then `base` and the
// changed fields, all flat. Anchored at both ends, so a frame with several
// deltas or any other shape does not match.
const SINGLE_DELTA_RE = /^\{"op":"q","quotes":\[\{"symbol":"([^"]*)","seq":(\d+),"ts":(\d+)([^{}]*)\}\]\}$/
const BASE_RE = /"base":(\d+)/

/**
 * Reads the deltas of a `q` frame. JSON.parse in k6's JavaScript engine is
 * the most expensive step per frame (~30 us for one delta on the test VM),
 * and most frames carry one delta: those are read with one anchored regular
 * expression (~2x faster); everything else goes through JSON.parse (a regular
 * expression loop is slower than JSON.parse once a frame holds several).
 *
 * @param {string} text a whole frame
 * @returns {{symbol: string, seq: number, ts: number, base?: number}[] | null} null: not a `q` frame
 */
export function parseQuotesFrame (text) {
  if (!text.startsWith('{"op":"q",')) return null
  const m = SINGLE_DELTA_RE.exec(text)
  if (m !== null) {
    /** @type {{symbol: string, seq: number, ts: number, base?: number}} */
    const q = { symbol: m[1], seq: Number(m[2]), ts: Number(m[3]) }
    if (m[4].length > 0 && m[4].indexOf('"base":') >= 0) {
      const b = BASE_RE.exec(m[4])
      if (b) q.base = Number(b[1])
    }
    return [q]
  }
  const msg = JSON.parse(text)
  return msg.op === 'q' ? msg.quotes : null
}

/**
 * What a close code means for the load test.
 *
 * @param {number | undefined} code from the close event (undefined: no close frame, 1006)
 * @param {{reconnect: boolean, byClient: boolean}} ctx
 * @returns {{code: number, expected: boolean, reconnect: boolean, delayMs: (attempt: number, rand: () => number) => number}}
 */
export function classifyClose (code, { reconnect, byClient }) {
  const c = code ?? 1006
  if (byClient) return { code: c, expected: true, reconnect: false, delayMs: () => 0 }
  // 1012: the gateway drains (rolling update). Expected only when the run
  // is set up for it; reconnect at once, jittered, so a drained pod's
  // clients do not all land in the same instant.
  if (c === CloseCode.SERVICE_RESTART) {
    return { code: c, expected: reconnect, reconnect, delayMs: (_a, rand) => Math.floor(rand() * 250) }
  }
  const retry = reconnect && !/** @type {readonly number[]} */ (NO_RECONNECT_CODES).includes(c)
  return {
    code: c,
    expected: false,
    reconnect: retry,
    // backoff: 0.5 s, 1 s, 2 s ... capped at 10 s, with full jitter on top half
    delayMs: (attempt, rand) => {
      const base = Math.min(10000, 500 * Math.pow(2, Math.max(0, attempt - 1)))
      return Math.floor(base / 2 + rand() * base / 2)
    }
  }
}

/**
 * Error codes the gateway may send that are not a fault when the run
 * expects restarts (DRAINING precedes a 1012 close).
 *
 * @param {string} code
 * @param {boolean} reconnect
 */
export function errorExpected (code, reconnect) {
  return reconnect && code === ErrorCode.DRAINING
}

/**
 * Per-connection quote state: what is subscribed, the seq held per symbol,
 * and symbols being resubscribed after a gap.
 */
export class QuoteTracker {
  constructor () {
    /** @type {Set<string>} symbols asked for (acked or not) */
    this.subscribed = new Set()
    /** held seqs and resyncs (deltas dropped until the next snapshot) */
    this.held = new QuoteReceiver({ fields: false })
    /** @type {Map<number | string, string[]>} unsub request id -> symbols, until acked */
    this.leaving = new Map()
    /** @type {Set<string>} union of the leaving lists */
    this.leavingSet = new Set()
  }

  /** @param {string[]} symbols */
  subscribe (symbols) {
    for (const s of symbols) this.subscribed.add(s)
  }

  /**
   * A new connection of the same client: nothing is subscribed on it yet,
   * but the held quotes stay, to resume from.
   *
   * @param {string[]} symbols what it will subscribe
   * @returns {Map<string, {seq: number, epoch: string}>} the cursors to send as `since`;
   *   symbols without one wait for a snapshot (their deltas are dropped until it)
   */
  reconnected (symbols) {
    this.subscribed.clear()
    this.leaving.clear()
    this.leavingSet.clear()
    /** @type {Map<string, {seq: number, epoch: string}>} */
    const since = new Map()
    for (const s of symbols) {
      const c = this.held.cursor(s)
      if (c === undefined) this.held.resync(s)
      else since.set(s, c)
    }
    return since
  }

  /**
   * Records an unsubscribe: quotes for these symbols already on the wire
   * are allowed until the server acks the request.
   *
   * @param {string[]} symbols
   * @param {number | string} id
   */
  unsubscribe (symbols, id) {
    for (const s of symbols) {
      this.subscribed.delete(s)
      this.held.forget(s)
      this.leavingSet.add(s)
    }
    this.leaving.set(id, symbols)
  }

  /** @param {number | string | undefined} id */
  onAck (id) {
    if (id === undefined) return
    const gone = this.leaving.get(id)
    if (!gone) return
    this.leaving.delete(id)
    this.leavingSet.clear()
    for (const list of this.leaving.values()) for (const s of list) this.leavingSet.add(s)
    // a symbol unsubscribed and subscribed again is expected once more
  }

  /**
   * Starts a resubscription of `symbol` (after a gap): its deltas are
   * dropped until the fresh snapshot.
   *
   * @param {string} symbol
   */
  resync (symbol) {
    this.held.resync(symbol)
  }

  /**
   * A snapshot quote: replaces the held quote.
   *
   * @param {{symbol: string, seq: number, epoch?: string}} q
   * @returns {number} ticks it skipped over the quote held (same epoch: the
   *   seqs between; 0 for a first snapshot or another epoch, where nothing can
   *   be counted), or -1 when the symbol was not subscribed
   */
  onSnapQuote (q) {
    if (!this.subscribed.has(q.symbol)) return this.leavingSet.has(q.symbol) ? 0 : -1
    const held = this.held.cursor(q.symbol)
    const heldSeq = this.held.seq(q.symbol)
    this.held.snap(q)
    if (heldSeq === undefined) return 0
    if (held !== undefined && q.epoch !== undefined && held.epoch !== q.epoch) return 0
    return Math.max(0, q.seq - heldSeq - 1)
  }

  /**
   * A delta: checks and applies it.
   *
   * @param {{symbol: string, seq: number, base?: number}} q
   * @returns {number} a Delta value
   */
  onDelta (q) {
    const s = q.symbol
    if (!this.subscribed.has(s)) return this.leavingSet.has(s) ? Delta.IGNORED : Delta.WRONG_SYMBOL
    return FROM_OUTCOME[this.held.delta(q)]
  }

  /** Subscribed symbols with no snapshot yet. */
  unsnapped () {
    let n = 0
    for (const s of this.subscribed) if (this.held.seq(s) === undefined) n++
    return n
  }
}
