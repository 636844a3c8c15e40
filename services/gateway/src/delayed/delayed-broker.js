// The delayed timeline: a Broker (broker.js) whose quotes are those of
// the real-time one as they were WSPS_DELAY_MS ago, for the hub that
// serves delayed grants (auth.js). The gateway runs a second Hub on it, so
// a delayed subscription gets the same protocol as a real-time one (snap,
// q, modes, maxRate, deltas, recovery) from feeds that never hold a newer
// quote: a delta is always taken between two delayed quotes.
//
// Where the delay comes from: Redis, not this process. Every quote is in
// its symbol's history stream (the publish script appends it, entry ID =
// seq, the quote with its `ts`); a pump per symbol that delayed
// subscribers watch here reads the stream in seq order (history-timeline.js)
// and releases each entry once its `ts` is WSPS_DELAY_MS old, at most one
// pump tick (TICK_MS) later. The snapshot is the newest entry at or before
// now - delay. So any gateway serves the same delayed timeline, one that
// restarted included; what it needs is history reaching back the delay,
// which the pumps ask the fetchers for by pinning it (#pin).
//
// Guarantee: a quote is handed on (onQuote, latest(), history()) only when
// its `ts` is at least the delay old on this gateway's clock: never newer.
// Every quote handed on carries `"delayed":true`.
//
// A pump that has released all it read and cannot read on (its read fails,
// or hangs for STALL_MS: Redis gone or silent) stops its feed: onInterrupted
// says so (its subscribers are told `stale`), onResumed when a read answers
// again. Nothing is lost meanwhile: the pump goes on from its seq.

import { delayedCopy, seqOf } from '@wsps/shared/published'
import { HistoryTimeline } from '../history-timeline.js'

/** How often due entries are released: the delay is served this much late at most. */
const TICK_MS = 100
/** Entries read ahead per pump and read. */
const CHUNK = 200
/** A pump that read everything there is reads again after this. */
const IDLE_POLL_MS = 1000
/** After a failed read (Redis away), a pump waits this long. */
const ERROR_BACKOFF_MS = 1000
/**
 * How often the pumps' positions are written as history pins (keys.js
 * historyPin), and how long a pin lives unless written again: a gateway
 * that stops holds no history back for longer than that.
 */
const PIN_EVERY_MS = 2000
const PIN_TTL_MS = 10000
/** Reads in a row that found nothing before a pump checks whether its history started over. */
const REWIND_CHECK_EVERY = 10
/** A read of a pump with nothing left to release that has not answered after this interrupts its feed. */
const STALL_MS = 2000

/**
 * @typedef {import('@wsps/shared/published').Entry} Entry
 * @typedef {object} Pump one symbol's read position in its history
 * @property {number | null} after the seq of the last entry released (null:
 *   not started: latest() sets it from the snapshot it reads)
 * @property {Entry[]} ahead entries read but not due yet, in seq order
 * @property {unknown} epoch of the last entry read (undefined: none yet)
 * @property {number} empty reads in a row that found nothing
 * @property {boolean} reading
 * @property {number} readSince when the read in progress began (ms)
 * @property {number} readAt no read before this (ms)
 * @property {boolean} interrupted told onInterrupted, not onResumed yet
 */

export class DelayedBroker {
  #broker
  #timeline
  #delayMs
  #now
  #log
  /** @type {Pick<import('../broker.js').BrokerHandlers, 'onQuote' | 'onInterrupted' | 'onResumed'> | null} */
  #handlers = null
  /** @type {Map<string, Pump>} */
  #pumps = new Map()
  /** @type {NodeJS.Timeout | null} runs only while a pump exists */
  #timer = null
  #onHole
  /** Symbols whose history was found short of the delay (warned once each). */
  #short = new Set()
  /** No pins written before this (ms); 0: at the next tick. */
  #pinAt = 0

  /**
   * @param {object} options
   * @param {import('../broker.js').Broker} options.broker the real-time broker: its history and demand
   * @param {number} options.delayMs WSPS_DELAY_MS
   * @param {import('pino').Logger} options.logger
   * @param {() => number} [options.now] the clock (tests)
   * @param {(symbol: string) => void} [options.onHole] entries were trimmed
   *   from a symbol's history before they were due: it does not reach back
   *   the delay (counted: wsps_gateway_delayed_holes_total)
   */
  constructor ({ broker, delayMs, logger, now = Date.now, onHole = () => {} }) {
    this.#onHole = onHole
    this.#broker = broker
    this.#timeline = new HistoryTimeline(broker)
    this.#delayMs = delayMs
    this.#now = now
    this.#log = logger.child({ component: 'delayed' })
  }

  /** @param {Pick<import('../broker.js').BrokerHandlers, 'onQuote' | 'onInterrupted' | 'onResumed'>} handlers */
  start (handlers) {
    this.#handlers = handlers
  }

  /** The newest `ts` a quote handed on now may have. */
  #cutoff () {
    return this.#now() - this.#delayMs
  }

  /**
   * @param {string[]} symbols
   * @returns {Promise<string[]>} none refused: a pump needs no channel
   */
  async subscribe (symbols) {
    for (const s of symbols) {
      if (this.#pumps.has(s)) continue
      this.#pumps.set(s, { after: null, epoch: undefined, ahead: [], empty: 0, reading: false, readSince: 0, readAt: 0, interrupted: false })
      // Pinned at once: history is kept for it from now on.
      this.#pinAt = 0
    }
    if (this.#timer === null && this.#pumps.size) {
      this.#timer = setInterval(() => this.#tick(), TICK_MS)
      this.#timer.unref()
    }
    return []
  }

  /** @param {string[]} symbols */
  async unsubscribe (symbols) {
    for (const s of symbols) this.#pumps.delete(s)
    if (this.#pumps.size === 0 && this.#timer !== null) {
      clearInterval(this.#timer)
      this.#timer = null
    }
  }

  /**
   * The snapshot of each symbol: its newest quote at or before now - delay
   * (null: history holds none so old). A pump not started starts after it.
   *
   * @param {string[]} symbols
   * @returns {Promise<(string | null | Error)[]>}
   */
  latest (symbols) {
    const cutoff = this.#cutoff()
    return Promise.all(symbols.map(async (symbol) => {
      try {
        const { entry, after } = await this.#timeline.at(symbol, cutoff)
        const pump = this.#pumps.get(symbol)
        if (pump !== undefined && pump.after === null) {
          pump.after = after
          pump.epoch = entry?.epoch
        }
        return entry === null ? null : delayedCopy(entry.raw)
      } catch (err) {
        return /** @type {Error} */ (err)
      }
    }))
  }

  /**
   * History as the delayed timeline has it: the entries from..to, cut at the
   * first one not yet due or not yet released by the symbol's pump.
   *
   * @param {string} symbol
   * @param {number} fromSeq
   * @param {number | null} toSeq
   * @param {number} max
   * @returns {Promise<string[]>}
   */
  async history (symbol, fromSeq, toSeq, max) {
    const entries = await this.#timeline.range(symbol, fromSeq, toSeq, max)
    const cutoff = this.#cutoff()
    const released = this.#pumps.get(symbol)?.after ?? null
    /** @type {string[]} */
    const out = []
    for (const e of entries) {
      if (e.ts > cutoff || (released !== null && e.seq > released)) break
      out.push(delayedCopy(e.raw))
    }
    return out
  }

  /**
   * Delayed subscribers need the symbol fetched like real-time ones.
   *
   * @param {string[]} symbols
   * @param {number} leaseMs
   */
  renewDemand (symbols, leaseMs) {
    return this.#broker.renewDemand(symbols, leaseMs)
  }

  /**
   * @param {[string, number][]} pins
   * @param {number} ttlMs
   */
  keepHistory (pins, ttlMs) {
    return this.#broker.keepHistory(pins, ttlMs)
  }

  ready () {
    return this.#broker.ready()
  }

  /** @param {string[]} symbols @returns {string[][]} one group: pumps read history, which fails per symbol */
  partition (symbols) {
    return [symbols]
  }

  /** Symbols pumped (the delayed hub's "channels"). */
  channelCount () {
    return this.#pumps.size
  }

  async close () {
    await this.unsubscribe([...this.#pumps.keys()])
  }

  /** Releases what is due, and reads ahead for pumps that ran dry. */
  #tick () {
    const cutoff = this.#cutoff()
    const now = this.#now()
    if (now >= this.#pinAt) {
      this.#pinAt = now + PIN_EVERY_MS
      this.#pin()
    }
    for (const [symbol, pump] of this.#pumps) {
      if (pump.after === null) continue
      this.#release(symbol, pump, cutoff)
      if (pump.ahead.length === 0 && !pump.reading && now >= pump.readAt) this.#read(symbol, pump)
      else if (pump.ahead.length === 0 && pump.reading && now - pump.readSince >= STALL_MS) this.#interrupt(symbol, pump)
    }
  }

  /**
   * Tells the fetchers how far back each pumped symbol's history must
   * reach: from the last entry released on (what is read ahead and not yet
   * due included). Without, history is trimmed to WSPS_HISTORY_SIZE, which
   * for most symbols is far short of the delay. A pump not started yet pins
   * everything from now on (0): its first entries old enough are still to come.
   */
  #pin () {
    const pins = /** @type {[string, number][]} */ ([...this.#pumps].map(([symbol, pump]) => [symbol, pump.after ?? 0]))
    this.#broker.keepHistory(pins, PIN_TTL_MS).catch((err) => {
      this.#log.debug({ err: err.message }, 'history pins not written; again at the next pass')
    })
  }

  /**
   * Hands on, in seq order, the entries read ahead that are due.
   *
   * @param {string} symbol
   * @param {Pump} pump
   * @param {number} cutoff
   */
  #release (symbol, pump, cutoff) {
    let n = 0
    const ahead = pump.ahead
    while (n < ahead.length && ahead[n].ts <= cutoff) {
      pump.after = ahead[n].seq
      this.#handlers?.onQuote(symbol, delayedCopy(ahead[n].raw))
      n++
      // A handler may have unsubscribed the symbol (its last client closed).
      if (this.#pumps.get(symbol) !== pump) return
    }
    if (n) pump.ahead = ahead.slice(n)
  }

  /**
   * @param {string} symbol
   * @param {Pump} pump
   */
  #read (symbol, pump) {
    pump.reading = true
    pump.readSince = this.#now()
    const after = /** @type {number} */ (pump.after)
    this.#timeline.after(symbol, after, CHUNK).then(async (entries) => {
      if (this.#pumps.get(symbol) !== pump) return
      if (pump.interrupted) {
        pump.interrupted = false
        this.#handlers?.onResumed?.([symbol])
      }
      if (entries.length === 0) {
        pump.readAt = this.#now() + IDLE_POLL_MS
        if (++pump.empty % REWIND_CHECK_EVERY === 0) await this.#rewound(symbol, pump, after)
        return
      }
      pump.empty = 0
      // Entries of this history between what was released and what is
      // there now were trimmed before they were due.
      if (entries[0].seq > after + 1 && after > 0 && entries[0].epoch === pump.epoch) this.#hole(symbol, after, entries[0].seq)
      pump.epoch = entries[entries.length - 1].epoch
      pump.ahead = entries
      pump.readAt = 0
      this.#release(symbol, pump, this.#cutoff())
    }).catch((err) => {
      pump.readAt = this.#now() + ERROR_BACKOFF_MS
      // (A pump reads only once it released all it had read.)
      if (this.#pumps.get(symbol) === pump) this.#interrupt(symbol, pump)
      this.#log.debug({ err: err.message, symbol }, 'delayed history read failed; retrying')
    }).finally(() => {
      pump.reading = false
    })
  }

  /**
   * The pump released all it had and cannot read on: its feed stands still
   * from when the read began.
   *
   * @param {string} symbol
   * @param {Pump} pump
   */
  #interrupt (symbol, pump) {
    if (pump.interrupted) return
    pump.interrupted = true
    this.#handlers?.onInterrupted?.([symbol], pump.readSince, false)
  }

  /**
   * @param {string} symbol
   * @param {number} after the last seq released
   * @param {number} next the oldest seq history still has
   */
  #hole (symbol, after, next) {
    this.#onHole(symbol)
    if (this.#short.has(symbol)) return
    this.#short.add(symbol)
    this.#log.warn({ symbol, released: after, oldest: next, delayMs: this.#delayMs },
      'history does not reach back the delay (entries were trimmed before they were due): it is kept for delayed readers from when a gateway first pins the symbol, up to 200000 entries')
  }

  /**
   * Nothing after the pump's seq: either nothing newer was published, or
   * the symbol's seqs started over below it (Redis lost them; a new epoch).
   * In the second case the pump starts over from the stream's beginning;
   * the feed takes the new epoch's first quote as a snapshot.
   *
   * @param {string} symbol
   * @param {Pump} pump
   * @param {number} after
   */
  async #rewound (symbol, pump, after) {
    const [latest] = await this.#broker.latest([symbol])
    if (typeof latest !== 'string' || this.#pumps.get(symbol) !== pump || pump.after !== after) return
    const seq = seqOf(latest)
    if (seq < after) {
      this.#log.info({ symbol, after, newest: seq }, 'history started over: the delayed pump reads it from its beginning')
      pump.after = 0
      pump.readAt = 0
    }
  }
}
