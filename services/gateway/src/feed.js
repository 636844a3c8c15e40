// One symbol the process holds a channel for: its subscribers by delivery,
// the quotes it holds and what waits for the next fan-out pass. The hub
// decides when it goes live and when it is dropped; the fanout reads its
// subscriber lists and calls take() and takeTicks().
//
// Subscribers are kept by delivery: `clients` get the update merged since
// the last pass (merge mode at full rate), `distinct` get every tick
// (distinct mode), and each lane serves the merge subscribers of one
// maxRate. Lists and lanes a symbol does not use stay null.
//
// Two state machines of a feed have rooms of their own, each held only
// while in use (null otherwise): the gap fill after a broker reconnect or a
// live gap (gap-fill.js: the quotes buffered meanwhile, and whether what
// history and buffer hold continues the held quote), and the recovery pins
// (recovery-pins.js: recoveries waiting for a subscriber they will add, and
// the quotes held since).

import { diffQuotes, mergeUpdates } from './delta.js'
import { GapFill } from './gap-fill.js'
import { Lane } from './lane.js'
import { DISTINCT, FULL_RATE } from './delivery.js'
import { encodeSnap } from './protocol.js'
import { RecoveryPins } from './recovery-pins.js'
import { TextFrame } from './text-frame.js'
import { removeFrom } from './unordered.js'

/**
 * @typedef {import('./delta.js').Quote} Quote
 * @typedef {import('./delta.js').Update} Update
 * @typedef {import('./gap-fill.js').Entry} Entry
 * @typedef {import('./connection.js').Connection} Client
 */

/** What Feed#onQuote did with a quote. */
export const Taken = Object.freeze({
  /** Not newer than the held quote: dropped. */
  STALE: 0,
  /** Held (and handed on when live), or buffered while resuming. */
  HELD: 1,
  /** The first quote of a new epoch: every subscriber got it as a snapshot marked lost. */
  NEW_EPOCH: 2,
  /**
   * It skips ticks (a pub/sub message Redis dropped, or delivered out of
   * order) of a symbol with distinct subscribers: held back with what
   * follows until fill() gets the missing ones from history.
   */
  GAP: 3
})

/**
 * @typedef {object} Tap a reader of every quote a feed holds, in seq order
 *   (a bar series, bar-series.js): it keeps the feed open like a subscriber
 * @property {(quote: Quote) => void} onTick
 */

export class Feed {
  #symbol
  #fanout
  /** Generation of the subscribe pass that makes it live. */
  #gen
  /** @type {Client[]} merge-mode subscribers at full rate, in no order (unordered.js) */
  #clients = []
  /** @type {Client[] | null} distinct-mode subscribers */
  #distinct = null
  /** @type {Map<number, Lane> | null} merge subscribers with a maxRate, by rate */
  #lanes = null
  /** Subscribers in all lists. */
  #count = 0
  /** @type {Tap[] | null} readers of every held quote (bar series) */
  #taps = null
  /** @type {Update | null} merged update waiting for the next fan-out pass */
  #update = null
  /** @type {Update[] | null} every tick since the last pass, while distinct subscribers exist */
  #ticks = null
  /** @type {string | null} the full quote `ticks` start from: a distinct joiner's snapshot */
  #ticksFrom = null
  /** Queued in the fanout for its next pass. */
  #queued = false
  /** @type {Quote | null} latest full quote held */
  #last = null
  /** @type {string | null} the same, serialized as published */
  #lastRaw = null
  /**
   * The full quote every subscriber holds after the last fan-out pass: the
   * base of the next update, so the only correct snapshot for a reader
   * joining (or catching up) between passes.
   * @type {string | null}
   */
  #sentRaw = null
  #live = false
  /** Counted in the hub's resyncing symbols until it goes live. */
  #resyncing = false
  /** When the last subscriber left (0: has subscribers). */
  #idleSince = 0
  /** When it last stopped being live (created, or a broker reconnect). */
  #pendingSince = Date.now()
  /**
   * @type {RecoveryPins | null} recoveries reading for a subscriber that is
   * not added yet (it is not idle meanwhile), and the quotes held since
   */
  #pins = null
  /**
   * @type {GapFill | null} while resuming after a broker reconnect, or
   * holding a live gap back: the quotes that arrived since, for goLive() or fill()
   */
  #gapFill = null
  /** Most quotes a gap fill buffers, and pins keep (WSPS_RECOVERY_MAX). */
  #bufferMax

  /**
   * @param {string} symbol
   * @param {number} gen generation of the subscribe pass that makes it live
   * @param {import('./fanout.js').Fanout} fanout
   * @param {number} bufferMax quotes held while resuming after a broker
   *   reconnect (WSPS_RECOVERY_MAX); more and the gap is not filled. A
   *   pinned feed keeps as many for its recoveries.
   * @param {boolean} [idle] created before its first subscriber (a client's
   *   recovery waits for it to go live): dropped like an idle one if none comes
   */
  constructor (symbol, gen, fanout, bufferMax, idle = false) {
    this.#symbol = symbol
    this.#gen = gen
    this.#fanout = fanout
    this.#bufferMax = bufferMax
    if (idle) this.#idleSince = Date.now()
  }

  /** @returns {readonly Client[]} merge-mode subscribers at full rate (the fanout reads them) */
  get clients () {
    return this.#clients
  }

  /** @returns {readonly Client[] | null} distinct-mode subscribers (the fanout reads them) */
  get distinct () {
    return this.#distinct
  }

  /** Subscribers, whatever their delivery. */
  get count () {
    return this.#count
  }

  get live () {
    return this.#live
  }

  get gen () {
    return this.#gen
  }

  /**
   * @param {number} now
   * @param {number} delayMs
   * @returns {boolean} whether it has had no subscriber for delayMs
   */
  idleFor (now, delayMs) {
    return this.#count === 0 && this.#taps === null && this.#pins === null && this.#idleSince !== 0 && now - this.#idleSince >= delayMs
  }

  /** Whether a tap reads it (its symbol stays wanted, like one with subscribers). */
  get tapped () {
    return this.#taps !== null
  }

  /**
   * Adds a reader of every quote the feed holds from now on, in seq order:
   * ticks a live quote skips are read from history first (as for distinct
   * subscribers).
   *
   * @param {Tap} tap
   */
  tap (tap) {
    (this.#taps ??= []).push(tap)
    this.#idleSince = 0
  }

  /** @param {Tap} tap */
  untap (tap) {
    if (this.#taps === null || !removeFrom(this.#taps, tap)) return
    if (this.#taps.length) return
    this.#taps = null
    if (this.#count === 0 && this.#pins === null) this.#idleSince = Date.now()
  }

  /**
   * A recovery waits on this feed for a subscriber it will add (or give up):
   * the idle sweep must not drop it meanwhile, however long the reads take.
   *
   * @param {1 | -1} delta pin or unpin
   */
  pin (delta) {
    if (delta > 0) {
      if (this.#pins === null) this.#pins = new RecoveryPins(this.#bufferMax)
      else this.#pins.pin()
      return
    }
    // An unpin without its pin (none is made: whenLive() and unpin() pair) changes nothing.
    if (this.#pins === null || this.#pins.unpin()) return
    this.#pins = null
    if (this.#count === 0 && this.#taps === null) this.#idleSince = Date.now()
  }

  /**
   * The quotes held since the feed was pinned with seq from..to, in order;
   * null unless every one of them is there.
   *
   * @param {number} from
   * @param {number} to
   * @returns {string[] | null}
   */
  recent (from, to) {
    if (this.#pins === null) return to < from ? [] : null
    return this.#pins.recent(from, to)
  }

  /**
   * Adds a subscriber (Sessions adds a symbol to a client at most once).
   *
   * @param {Client} client
   * @param {number} delivery FULL_RATE, DISTINCT or a maxRate (delivery.js)
   * @returns {string | null} when live, the full quote it must start from
   *   (the caller sends it as the snapshot); otherwise it gets its snapshot
   *   when the symbol goes live or quotes first
   */
  add (client, delivery) {
    const base = this.peek(delivery)
    this.#idleSince = 0
    this.#count++
    if (delivery === FULL_RATE) {
      this.#clients.push(client)
    } else if (delivery === DISTINCT) {
      if (this.#distinct === null) {
        // Ticks are kept only while someone reads them: they start now.
        this.#distinct = []
        this.#ticks = null
        this.#ticksFrom = this.#lastRaw
      }
      this.#distinct.push(client)
    } else {
      const lanes = this.#lanes ??= new Map()
      let lane = lanes.get(delivery)
      if (lane === undefined) lanes.set(delivery, lane = new Lane(delivery, this.#fanout, this.#lastRaw))
      lane.add(client)
    }
    return base
  }

  /**
   * What add() would return now: the full quote a subscriber joining with
   * this delivery starts from (the next pass hands it everything newer),
   * when live.
   *
   * @param {number} delivery
   * @returns {string | null}
   */
  peek (delivery) {
    if (!this.#live) return null
    // Not lastRaw: quotes newer than sentRaw wait in #update (or a lane's,
    // or the ticks), which the next pass hands to a joiner too.
    if (delivery === FULL_RATE) return this.#sentRaw
    if (delivery === DISTINCT) return this.#distinct === null ? this.#lastRaw : this.#ticksFrom
    return this.#lanes?.get(delivery)?.sentRaw ?? this.#lastRaw
  }

  /**
   * @param {Client} client
   * @param {number} delivery as it was added with
   * @returns {boolean} whether it was a subscriber
   */
  remove (client, delivery) {
    if (delivery === FULL_RATE) {
      if (!removeFrom(this.#clients, client)) return false
    } else if (delivery === DISTINCT) {
      if (this.#distinct === null || !removeFrom(this.#distinct, client)) return false
      if (this.#distinct.length === 0) {
        this.#distinct = null
        this.#ticks = null
      }
    } else {
      const lane = this.#lanes?.get(delivery)
      if (lane === undefined || !lane.remove(client)) return false
      if (lane.size === 0) {
        lane.stop()
        this.#lanes?.delete(delivery)
        if (this.#lanes?.size === 0) this.#lanes = null
      }
    }
    this.#count--
    if (this.#count === 0 && this.#taps === null) this.#idleSince = Date.now()
    return true
  }

  /**
   * The full quote a merge reader catching up must get (the base of the
   * next update it will be handed), when live.
   *
   * @param {number} delivery FULL_RATE or a maxRate
   * @returns {string | null}
   */
  latest (delivery) {
    if (!this.#live) return null
    if (delivery === FULL_RATE) return this.#sentRaw
    return this.#lanes?.get(delivery)?.sentRaw ?? null
  }

  /**
   * The seq from which the subscribe pass must read history for goLive():
   * the one after what the subscribers hold, while resuming after a broker
   * reconnect; null when there is nothing to fill (a new feed, or quotes
   * without history).
   *
   * @returns {number | null}
   */
  resumeFrom () {
    return this.#gapFill === null || this.#last === null ? null : this.#last.seq + 1
  }

  /**
   * The subscribe pass of this generation finished: live from now on. A
   * new feed gives every subscriber the held quote as its snapshot; a feed
   * resuming after a broker reconnect continues from what its subscribers
   * hold with the ticks it missed (`missed`, read from history from
   * resumeFrom() on), or, where they cannot continue it, snapshots marked lost.
   *
   * @param {Quote | null} quote the latest quote read from the broker
   * @param {string | null} raw the same, serialized
   * @param {Entry[] | null} [missed] history from resumeFrom() to its
   *   newest entry, in seq order; null: not read, or more than may be filled
   * @returns {number | null} null: it was not resuming; else the ticks
   *   filled in (0: none were missed), or -1: not fillable, snapshots sent
   */
  goLive (quote, raw, missed = null) {
    const gap = this.#gapFill
    if (gap !== null) {
      this.#gapFill = null
      this.#live = true
      return this.#resume(gap, quote, raw, missed)
    }
    if (quote !== null && raw !== null) this.#hold(quote, raw)
    this.#live = true
    if (this.#lastRaw !== null) this.#snapAll()
    return null
  }

  /**
   * The ticks a live gap (Taken.GAP) skipped, read from history from
   * resumeFrom() on: delivered in order with what was held back, or, where
   * they do not continue the held quote, everyone's snapshot marked lost.
   *
   * @param {Entry[] | null} missed null: not read
   * @param {number} gen the feed's generation when the read began (a
   *   broker reconnect since has its own pass)
   * @returns {number | null} as goLive(); null when there was nothing to fill
   */
  fill (missed, gen) {
    const gap = this.#gapFill
    if (gap === null || !this.#live || gen !== this.#gen) return null
    this.#gapFill = null
    return this.#resume(gap, null, null, missed)
  }

  /**
   * Ends a gap fill (already taken off the feed): what continues the held
   * quote is handed on as if it had never been missed, or everyone starts
   * over from the newest quote known.
   *
   * @param {GapFill} gap
   * @param {Quote | null} latest
   * @param {string | null} latestRaw
   * @param {Entry[] | null} missed
   * @returns {number}
   */
  #resume (gap, latest, latestRaw, missed) {
    const fill = gap.continuation(/** @type {Quote} */ (this.#last), latest, missed)
    if (fill !== null) {
      for (const e of fill) this.onQuote(e.quote, e.raw)
      return fill.length
    }
    // Start over from the newest quote known: everyone's snapshot, marked lost.
    const newest = gap.newest(missed, latest, latestRaw)
    if (newest !== null) {
      this.#last = newest.quote
      this.#lastRaw = newest.raw
    }
    this.#snapAll(true)
    return -1
  }

  /**
   * The broker reconnected: not live until the subscribe pass of `gen`
   * finishes. With history (its quotes carry an epoch) the held quote is
   * kept, as what the subscribers hold, and quotes arriving meanwhile are
   * buffered for goLive(). Without, nothing is held (Redis may have
   * restarted empty, its seq counters rewound: the re-read value wins over
   * what was held, whatever its seq).
   *
   * @param {number} gen
   * @returns {boolean} whether it was not resyncing yet (the hub counts those)
   */
  restart (gen) {
    const was = this.#resyncing
    if (this.#live) this.#pendingSince = Date.now()
    this.#live = false
    this.#gen = gen
    this.#resyncing = true
    if (this.#last !== null && typeof this.#last.epoch === 'string') {
      // Already resuming (a second reconnect before the first pass ended):
      // what it buffered is in history from the held seq on.
      this.#gapFill = new GapFill(this.#bufferMax)
      return !was
    }
    this.#gapFill = null
    this.#last = null
    this.#lastRaw = null
    this.#settle()
    return !was
  }

  /** @returns {boolean} whether it was resyncing (it no longer is) */
  resynced () {
    const was = this.#resyncing
    this.#resyncing = false
    return was
  }

  /**
   * A full quote from the broker.
   *
   * @param {Quote} quote
   * @param {string} raw the same, serialized as published
   * @param {import('./quote-trace.js').QuoteTrace | null} [trace] its spans, when it is traced
   * @returns {number} a Taken value
   */
  onQuote (quote, raw, trace = null) {
    if (this.#gapFill !== null) {
      this.#gapFill.offer(quote, raw)
      return Taken.HELD
    }
    const prev = this.#last
    if (this.#live && (this.#distinct !== null || this.#taps !== null) && prev !== null && typeof prev.epoch === 'string' &&
        quote.epoch === prev.epoch && quote.seq > prev.seq + 1) {
      // Distinct readers get every tick: hold this one (and what follows)
      // back until the hub has read the ones in between from history. Merge
      // readers would do with a delta on `base`; they wait the same read.
      this.#gapFill = new GapFill(this.#bufferMax, { quote, raw })
      return Taken.GAP
    }
    if (!this.#hold(quote, raw)) return Taken.STALE
    if (!this.#live) return Taken.HELD
    if (prev !== null && prev.epoch !== quote.epoch) {
      // A new history (Redis lost it: restarted empty, flushed, evicted):
      // nothing says the subscribers missed nothing. Everyone starts over
      // from this quote, told so when they held one of a known epoch.
      const lost = typeof prev.epoch === 'string'
      this.#snapAll(lost, trace)
      return lost ? Taken.NEW_EPOCH : Taken.HELD
    }
    if (this.#count === 0) {
      // Nobody holds anything: a reader returning before the channel is
      // dropped starts from the latest quote.
      this.#settle()
      return Taken.HELD
    }
    if (prev === null) {
      this.#snapAll(false, trace)
      return Taken.HELD
    }
    // O(1) per quote: subscribers are touched once per fan-out pass, and
    // several quotes of a symbol within one window merge into one update
    // (applying on top of the seq the subscribers hold: `base`).
    const update = diffQuotes(prev, quote, trace)
    this.#update = this.#update === null ? update : mergeUpdates(this.#update, update)
    if (this.#distinct !== null) (this.#ticks ??= []).push(update)
    if (this.#lanes !== null) for (const lane of this.#lanes.values()) lane.offer(update, this.#lastRaw)
    if (!this.#queued) {
      this.#queued = true
      this.#fanout.queue(this)
    }
    return Taken.HELD
  }

  /**
   * Called by the fanout at the start of a pass: hands over the merged
   * update, which every subscriber holds once the pass is written.
   *
   * @returns {Update | null}
   */
  take () {
    this.#queued = false
    const u = this.#update
    this.#update = null
    if (u !== null) this.#sentRaw = this.#lastRaw
    return u
  }

  /**
   * Called by the fanout after take(): every tick since the last pass, in
   * seq order, for the distinct subscribers.
   *
   * @returns {Update[] | null}
   */
  takeTicks () {
    const ticks = this.#ticks
    this.#ticks = null
    this.#ticksFrom = this.#lastRaw
    return ticks
  }

  /**
   * Keeps `quote` as the held quote if it is newer than the held one.
   *
   * @param {Quote} quote
   * @param {string} raw
   * @returns {boolean} whether it was newer
   */
  #hold (quote, raw) {
    // A quote of another epoch starts a new history: it wins whatever its seq.
    if (this.#last !== null && quote.seq <= this.#last.seq && quote.epoch === this.#last.epoch) return false
    this.#last = quote
    this.#lastRaw = raw
    this.#pins?.held(raw)
    if (this.#taps !== null) for (const t of this.#taps) t.onTick(quote)
    return true
  }

  /**
   * @param {boolean} [lost] it replaces ticks that could not be recovered
   * @param {import('./quote-trace.js').QuoteTrace | null} [trace] the held quote's, when it is traced and just arrived
   */
  #snapAll (lost = false, trace = null) {
    // Everyone now holds the latest: nothing older may follow.
    this.#settle()
    if (this.#count === 0 || this.#lastRaw === null) return
    // One frame for every subscriber, framed once (text-frame.js).
    const frame = new TextFrame(encodeSnap([this.#lastRaw], lost))
    const symbols = [this.#symbol]
    trace?.snapshot()
    // A copy: a send that closes a slow reader must not reorder the list
    // under the loop (removal swaps in the last element).
    for (const c of this.#everyone()) {
      const start = trace === null ? 0 : Date.now()
      c.sendSnap(symbols, frame)
      trace?.wrote(c.id, frame.length, start)
    }
    trace?.passed(Date.now())
  }

  /**
   * @param {number} now
   * @returns {number} how long it has waited to go live (0: live)
   */
  pendingFor (now) {
    return this.#live ? 0 : now - this.#pendingSince
  }

  /**
   * Closes every subscriber (they reconnect elsewhere and resume).
   *
   * @param {import('@wsps/protocol').Disconnect} disconnect
   * @returns {number} how many were open (a closed one leaves its feeds when its close completes)
   */
  closeAll (disconnect) {
    let n = 0
    for (const c of this.#everyone()) {
      if (c.closed) continue
      c.close(disconnect)
      n++
    }
    return n
  }

  /** @returns {Client[]} every subscriber, whatever its delivery (a copy) */
  subscribers () {
    return this.#everyone()
  }

  /** Every subscriber, whatever its delivery (a copy: sends may close and remove). */
  #everyone () {
    const all = [...this.#clients]
    if (this.#distinct !== null) all.push(...this.#distinct)
    if (this.#lanes !== null) for (const lane of this.#lanes.values()) all.push(...lane.clients)
    return all
  }

  /** Nothing is pending: every subscriber is to hold the latest quote (it was just sent). */
  #settle () {
    this.#update = null
    this.#ticks = null
    this.#sentRaw = this.#ticksFrom = this.#lastRaw
    if (this.#lanes !== null) for (const lane of this.#lanes.values()) lane.settle(this.#lastRaw)
  }
}
