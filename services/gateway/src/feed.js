// One symbol the process holds a channel for: its subscribers by delivery,
// the quotes it holds and what waits for the next fan-out pass. The hub
// decides when it goes live and when it is dropped; the fanout reads its
// subscriber lists and calls take() and takeTicks().
//
// Subscribers are kept by delivery: `clients` get the update merged since
// the last pass (merge mode at full rate), `distinct` get every tick
// (distinct mode), and each lane serves the merge subscribers of one
// maxRate. Lists and lanes a symbol does not use stay null.

import { diffQuotes, mergeUpdates } from './delta.js'
import { Lane } from './lane.js'
import { DISTINCT, FULL_RATE } from './outbox.js'
import { encodeSnap } from './protocol.js'
import { TextFrame } from './text-frame.js'
import { removeFrom } from './unordered.js'

/**
 * @typedef {import('./delta.js').Quote} Quote
 * @typedef {import('./delta.js').Update} Update
 * @typedef {import('./outbox.js').Outbox} Outbox
 */

export class Feed {
  #symbol
  #fanout
  /** Generation of the subscribe pass that makes it live. */
  #gen
  /** @type {Outbox[]} merge-mode subscribers at full rate, in no order (unordered.js) */
  #clients = []
  /** @type {Outbox[] | null} distinct-mode subscribers */
  #distinct = null
  /** @type {Map<number, Lane> | null} merge subscribers with a maxRate, by rate */
  #lanes = null
  /** Subscribers in all lists. */
  #count = 0
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

  /**
   * @param {string} symbol
   * @param {number} gen generation of the subscribe pass that makes it live
   * @param {import('./fanout.js').Fanout} fanout
   */
  constructor (symbol, gen, fanout) {
    this.#symbol = symbol
    this.#gen = gen
    this.#fanout = fanout
  }

  /** @returns {readonly Outbox[]} merge-mode subscribers at full rate (the fanout reads them) */
  get clients () {
    return this.#clients
  }

  /** @returns {readonly Outbox[] | null} distinct-mode subscribers (the fanout reads them) */
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
    return this.#count === 0 && this.#idleSince !== 0 && now - this.#idleSince >= delayMs
  }

  /**
   * Adds a subscriber (Sessions adds a symbol to a client at most once).
   *
   * @param {Outbox} client
   * @param {number} delivery FULL_RATE, DISTINCT or a maxRate (outbox.js)
   * @returns {string | null} when live, the full quote it must start from
   *   (the caller sends it as the snapshot); otherwise it gets its snapshot
   *   when the symbol goes live or quotes first
   */
  add (client, delivery) {
    this.#idleSince = 0
    this.#count++
    // Not lastRaw: quotes newer than sentRaw wait in #update (or a lane's,
    // or the ticks), which the next pass hands to this client too.
    let base = this.#sentRaw
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
      base = this.#ticksFrom
    } else {
      const lanes = this.#lanes ??= new Map()
      let lane = lanes.get(delivery)
      if (lane === undefined) lanes.set(delivery, lane = new Lane(delivery, this.#fanout, this.#lastRaw))
      lane.add(client)
      base = lane.sentRaw
    }
    return this.#live ? base : null
  }

  /**
   * @param {Outbox} client
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
    if (this.#count === 0) this.#idleSince = Date.now()
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
   * The subscribe pass of this generation finished: live from now on, and
   * every subscriber gets the held quote as its snapshot.
   *
   * @param {Quote | null} quote the latest quote read from the broker
   * @param {string | null} raw the same, serialized
   */
  goLive (quote, raw) {
    if (quote !== null && raw !== null) this.#hold(quote, raw)
    this.#live = true
    if (this.#lastRaw !== null) this.#snapAll()
  }

  /**
   * The broker reconnected: not live until the subscribe pass of `gen`
   * finishes, and nothing held (Redis may have restarted empty, its seq
   * counters rewound: the re-read value wins over what was held, whatever
   * its seq).
   *
   * @param {number} gen
   */
  restart (gen) {
    this.#live = false
    this.#gen = gen
    this.#resyncing = true
    this.#last = null
    this.#lastRaw = null
    this.#settle()
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
   * @returns {boolean} false when it was not newer than the held one
   */
  onQuote (quote, raw) {
    const prev = this.#last
    if (!this.#hold(quote, raw)) return false
    if (!this.#live) return true
    if (this.#count === 0) {
      // Nobody holds anything: a reader returning before the channel is
      // dropped starts from the latest quote.
      this.#settle()
      return true
    }
    if (prev === null) {
      this.#snapAll()
      return true
    }
    // O(1) per quote: subscribers are touched once per fan-out pass, and
    // several quotes of a symbol within one window merge into one update
    // (applying on top of the seq the subscribers hold: `base`).
    const update = diffQuotes(prev, quote)
    this.#update = this.#update === null ? update : mergeUpdates(this.#update, update)
    if (this.#distinct !== null) (this.#ticks ??= []).push(update)
    if (this.#lanes !== null) for (const lane of this.#lanes.values()) lane.offer(update, this.#lastRaw)
    if (!this.#queued) {
      this.#queued = true
      this.#fanout.queue(this)
    }
    return true
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
    if (this.#last !== null && quote.seq <= this.#last.seq) return false
    this.#last = quote
    this.#lastRaw = raw
    return true
  }

  #snapAll () {
    // Everyone now holds the latest: nothing older may follow.
    this.#settle()
    if (this.#count === 0 || this.#lastRaw === null) return
    // One frame for every subscriber, framed once (text-frame.js).
    const frame = new TextFrame(encodeSnap([this.#lastRaw]))
    const symbols = [this.#symbol]
    // A copy: a send that closes a slow reader must not reorder the list
    // under the loop (removal swaps in the last element).
    for (const c of this.#everyone()) c.sendSnap(symbols, frame)
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
