// One bar series of the process: a symbol's bars of one interval on one
// timeline (real-time or delayed), and the connections that subscribe to
// it. It owns its bars (a BarBuilder, the closed ones kept for backfill)
// and writes its frames; connections only know which series they hold.
//
// Life: created by its timeline's BarHub (bars.js) for the first
// subscriber; loading until the history read (the ticks since the start
// of the oldest bar it keeps) is merged with the ticks its tap took in
// meanwhile, by seq, so nothing is counted twice or missed; then ready:
// every tick updates the open bar, and once per flush its subscribers get
// the bars it closed (`"closed":true`, each once) and the open bar's
// latest value (coalesced). Subscribers waiting for the load get their
// backfill when it is done; later ones at once.

import { Limits, ServerOp } from '@wsps/protocol'
import { BarBuilder } from './bar-builder.js'
import { encodeBar, encodeBars } from '../protocol.js'
import { TextFrame } from '../text-frame.js'
import { removeFrom } from '../unordered.js'

/**
 * @typedef {import('./bar-builder.js').Bar} Bar
 * @typedef {import('../delta.js').Quote} Quote
 * @typedef {import('../connection.js').Connection} Client
 */

export class BarSeries {
  #symbol
  #interval
  #delayed
  #builder
  /** @type {(series: BarSeries) => void} asks the BarHub for a flush */
  #queue
  /** @type {Bar[]} closed bars, oldest first, at most Limits.MAX_BACKFILL */
  #closed = []
  /** @type {Client[]} subscribers sent their backfill */
  #clients = []
  /** @type {Map<Client, number> | null} subscribers waiting for the load, with the backfill each asked for (null: loaded) */
  #waiting = new Map()
  /** @type {Quote[] | null} ticks the tap took in while loading (null: loaded) */
  #buffer = []
  /** History reached back before the oldest bar kept: fewer bars than asked means there were no more. */
  #whole = false
  /** @type {{seq: number, epoch: unknown} | null} the last tick counted */
  #last = null
  /** @type {Bar[]} closed since the last flush */
  #justClosed = []
  /** The open bar changed since the last flush. */
  #dirty = false
  #queued = false

  /**
   * @param {object} options
   * @param {string} options.symbol
   * @param {string} options.interval a key of BAR_INTERVALS
   * @param {number} options.intervalMs
   * @param {boolean} options.delayed its frames say `"delayed":true`
   * @param {(series: BarSeries) => void} options.queue asks for a flush
   */
  constructor ({ symbol, interval, intervalMs, delayed, queue }) {
    this.#symbol = symbol
    this.#interval = interval
    this.#delayed = delayed
    this.#builder = new BarBuilder(intervalMs)
    this.#queue = queue
  }

  get symbol () { return this.#symbol }
  get interval () { return this.#interval }
  get intervalMs () { return this.#builder.intervalMs }
  /** Subscribers, waiting or not. */
  get size () { return this.#clients.length + (this.#waiting?.size ?? 0) }
  get loaded () { return this.#buffer === null }

  /**
   * A quote the symbol's feed held (its tap), in seq order.
   *
   * @param {Quote} quote
   */
  onTick (quote) {
    if (this.#buffer !== null) {
      this.#buffer.push(quote)
      return
    }
    this.#count(quote)
  }

  /**
   * The history read is done: the ticks from the start of the oldest bar
   * kept, then those the tap took in meanwhile (the ones read already
   * skipped by seq). Waiting subscribers get their backfill.
   *
   * @param {Quote[]} history in seq order
   * @param {Quote | null} before the tick before the first (null: history
   *   did not reach back so far, or could not be read)
   */
  load (history, before) {
    const buffer = this.#buffer
    if (buffer === null) return
    if (before !== null) {
      this.#builder.prime(before)
      this.#last = { seq: before.seq, epoch: before.epoch }
    }
    this.#whole = before !== null
    for (const q of history) this.#count(q)
    for (const q of buffer) this.#count(q)
    this.#buffer = null
    // What the load closed is in every backfill: nothing to announce.
    this.#justClosed = []
    this.#dirty = false
    const waiting = /** @type {Map<Client, number>} */ (this.#waiting)
    this.#waiting = null
    for (const [client, backfill] of waiting) this.#welcome(client, backfill)
  }

  /**
   * @param {Quote} quote
   */
  #count (quote) {
    const last = this.#last
    // History and the tap overlap by a few ticks: each counts once.
    if (last !== null && quote.epoch === last.epoch && quote.seq <= last.seq) return
    this.#last = { seq: quote.seq, epoch: quote.epoch }
    const closed = this.#builder.tick(quote)
    if (closed !== null) this.#close(closed)
    this.#dirty = true
    this.#request()
  }

  /** @param {Bar} bar */
  #close (bar) {
    this.#closed.push(bar)
    if (this.#closed.length > Limits.MAX_BACKFILL) this.#closed.shift()
    this.#justClosed.push(bar)
  }

  #request () {
    if (this.#queued || this.#buffer !== null) return
    this.#queued = true
    this.#queue(this)
  }

  /**
   * Closes the open bar when the series' clock passed its end.
   *
   * @param {number} now the series' clock (wall clock, minus the delay on
   *   the delayed timeline), minus the grace a late tick gets
   */
  closeDue (now) {
    if (this.#buffer !== null) return
    const closed = this.#builder.closeDue(now)
    if (closed === null) return
    this.#close(closed)
    this.#request()
  }

  /**
   * Adds a subscriber: its backfill now, or once the series is loaded.
   *
   * @param {Client} client
   * @param {number} backfill closed bars to send first
   */
  add (client, backfill) {
    if (this.#waiting !== null) {
      this.#waiting.set(client, backfill)
      return
    }
    // What is pending goes to the others first: the backfill holds it.
    this.flush()
    this.#welcome(client, backfill)
  }

  /**
   * @param {Client} client
   * @returns {boolean} whether it was a subscriber
   */
  remove (client) {
    if (this.#waiting !== null && this.#waiting.delete(client)) return true
    return removeFrom(this.#clients, client)
  }

  /**
   * @param {Client} client
   * @param {number} backfill
   */
  #welcome (client, backfill) {
    if (client.closed) return
    const bars = backfill === 0 ? [] : this.#closed.slice(-backfill)
    const complete = this.#whole || bars.length === backfill
    client.send(encodeBars(this.#symbol, this.#interval, bars, this.#builder.open, complete, this.#delayed), ServerOp.BARS)
    this.#clients.push(client)
  }

  /**
   * Writes what changed since the last flush: each bar closed (once), then
   * the open bar's latest value. One frame each, shared by every subscriber.
   */
  flush () {
    this.#queued = false
    /** @type {TextFrame[]} */
    const frames = this.#justClosed.map((b) => new TextFrame(encodeBar(this.#symbol, this.#interval, b, true, this.#delayed)))
    this.#justClosed = []
    const open = this.#builder.open
    if (this.#dirty && open !== null) frames.push(new TextFrame(encodeBar(this.#symbol, this.#interval, open, false, this.#delayed)))
    this.#dirty = false
    if (frames.length === 0) return
    // A copy: a send that closes a slow reader removes it from the list.
    for (const c of [...this.#clients]) for (const f of frames) c.send(f, ServerOp.BAR)
  }
}
