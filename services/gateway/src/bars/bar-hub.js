// The bar series of one timeline of the process (real-time or delayed),
// ref-counted: a series (bar-series.js) exists while a connection
// subscribes to it, one per symbol and interval, whatever the number of
// subscribers.
//
// A series reads its ticks from the hub of its timeline as a tap of the
// symbol's feed (hub.tap()): the real-time hub's feed is fed by the
// broker channel the hub holds anyway, the delayed hub's by its pump, so
// bars cost no second Redis subscription, and a delayed series only ever
// sees quotes the delay old. Its backfill comes from the symbol's history,
// read by time: the tick before the oldest bar kept (found by a binary
// search on seq, history-timeline.js) and every tick after it, through the
// timeline's own history reader (the delayed one stops at what its pump
// released).
//
// Flushes: the ticks of every series between two flushes are coalesced
// into one `bar` frame of the open bar per series (plus one per bar
// closed), once per WSPS_BATCH_MS window (0: on the next event-loop turn),
// like the quotes' fan-out. A clock closes the open bar of a quiet series
// once its end passed (by the series' clock: wall clock, minus the delay
// on the delayed timeline) plus CLOSE_GRACE_MS.

import { BAR_INTERVALS, Limits } from '@wsps/protocol'
import { parsePublished } from '@wsps/shared/published'
import { BarSeries } from './bar-series.js'
import { HistoryTimeline } from '../history-timeline.js'

/**
 * @typedef {import('../connection.js').Connection} Client
 * @typedef {import('../delta.js').Quote} Quote
 */

/**
 * How long after its end an open bar waits for a late tick before the clock
 * closes it: more than a tick takes from the fetcher's stamp to a feed
 * (and a delayed pump's release, at most about 100 ms late), so every
 * gateway closes a bar with the same ticks in it.
 */
export const CLOSE_GRACE_MS = 1000
/** How often the clock looks for bars to close. */
const CLOSE_CHECK_MS = 250
/** History entries per read of a series' load. */
const READ_CHUNK = 1000
/** How long a load waits for a symbol this process does not hold yet to go live. */
const LIVE_WAIT_MS = 5000

export class BarHub {
  #hub
  #reader
  #search
  #delayMs
  #delayed
  #batchMs
  #now
  #log
  #gauges
  /** @type {Map<string, BarSeries>} `${symbol} ${interval}` -> its series */
  #series = new Map()
  /** @type {BarSeries[]} series to flush */
  #dirty = []
  /** @type {NodeJS.Timeout | NodeJS.Immediate | null} */
  #flushTimer = null
  /** @type {NodeJS.Timeout | null} runs only while a series exists */
  #clock = null
  #subscriptions = 0

  /**
   * @param {object} options
   * @param {import('../hub.js').Hub} options.hub the timeline's hub: its feeds feed the series
   * @param {Pick<import('../broker.js').Broker, 'history'>} options.reader the
   *   timeline's history (the delayed broker on the delayed timeline)
   * @param {Pick<import('../broker.js').Broker, 'history' | 'latest'>} options.broker the
   *   real-time broker: where the tick before a series' first bar is looked
   *   up (older than any delay, so safe to read on either timeline)
   * @param {number} [options.delayMs] the timeline's delay (0: real-time)
   * @param {number} options.batchMs the flush window (WSPS_BATCH_MS)
   * @param {{series: {set: (n: number) => void}, subscriptions: {set: (n: number) => void}}} options.gauges series and
   *   subscriptions held (wsps_gateway_bar_series, wsps_gateway_bar_subscriptions)
   * @param {import('pino').Logger} options.logger
   * @param {() => number} [options.now] the wall clock (tests)
   */
  constructor ({ hub, reader, broker, delayMs = 0, batchMs, gauges, logger, now = Date.now }) {
    this.#hub = hub
    this.#reader = reader
    this.#search = new HistoryTimeline(broker)
    this.#delayMs = delayMs
    this.#delayed = delayMs > 0
    this.#batchMs = batchMs
    this.#gauges = gauges
    this.#now = now
    this.#log = logger.child({ component: 'bars' })
  }

  /** The series' clock: what "now" is on this timeline. */
  #clockNow () {
    return this.#now() - this.#delayMs
  }

  /**
   * Subscribes a connection to a series (created, and loaded, for its
   * first subscriber). The caller sent the ack; the backfill follows it.
   *
   * @param {Client} client
   * @param {string} symbol
   * @param {string} interval a key of BAR_INTERVALS
   * @param {number} backfill closed bars to send first
   */
  add (client, symbol, interval, backfill) {
    const key = `${symbol} ${interval}`
    let series = this.#series.get(key)
    if (series === undefined) {
      series = new BarSeries({
        symbol,
        interval,
        intervalMs: BAR_INTERVALS[/** @type {keyof typeof BAR_INTERVALS} */ (interval)],
        delayed: this.#delayed,
        queue: (s) => this.#queue(s)
      })
      this.#series.set(key, series)
      this.#gauges.series.set(this.#series.size)
      this.#load(series)
      this.#clock ??= setInterval(() => this.#closeDue(), CLOSE_CHECK_MS)
      this.#clock.unref()
    }
    series.add(client, backfill)
    this.#gauges.subscriptions.set(++this.#subscriptions)
  }

  /**
   * @param {Client} client
   * @param {string} symbol
   * @param {string} interval
   */
  remove (client, symbol, interval) {
    const key = `${symbol} ${interval}`
    const series = this.#series.get(key)
    if (series === undefined || !series.remove(client)) return
    this.#gauges.subscriptions.set(--this.#subscriptions)
    if (series.size > 0) return
    this.#series.delete(key)
    this.#hub.untap(symbol, series)
    this.#gauges.series.set(this.#series.size)
    if (this.#series.size === 0) this.#stopClock()
  }

  /**
   * Taps the symbol's feed, then reads history: every tick the read does
   * not hold arrives through the tap (load() merges them by seq).
   *
   * @param {BarSeries} series
   */
  async #load (series) {
    const { symbol } = series
    const gone = () => this.#series.get(`${symbol} ${series.interval}`) !== series
    await this.#hub.whenLive([symbol], LIVE_WAIT_MS)
    try {
      if (gone()) return
      this.#hub.tap(symbol, series)
    } finally {
      this.#hub.unpin([symbol])
    }
    /** @type {Quote[]} */
    let history = []
    /** @type {Quote | null} */
    let before = null
    try {
      const ms = series.intervalMs
      const oldest = Math.floor(this.#clockNow() / ms) * ms - Limits.MAX_BACKFILL * ms
      const { entry, after } = await this.#search.at(symbol, oldest - 1)
      before = entry === null ? null : parsePublished(entry.raw)
      history = await this.#readAfter(symbol, after)
    } catch (err) {
      // The bars go on from the live ticks; the backfill says it is short.
      this.#log.warn({ err: /** @type {Error} */ (err).message, symbol }, 'bar history read failed: the series starts from live ticks')
      before = null
    }
    if (!gone()) series.load(history, before)
  }

  /**
   * Every tick of the timeline's history after a seq, in seq order.
   *
   * @param {string} symbol
   * @param {number} after
   * @returns {Promise<Quote[]>}
   */
  async #readAfter (symbol, after) {
    /** @type {Quote[]} */
    const out = []
    let from = after + 1
    for (;;) {
      const raws = await this.#reader.history(symbol, from, null, READ_CHUNK)
      for (const raw of raws) {
        const q = parsePublished(raw)
        // As before: a bad entry fails the load (the series starts from live
        // ticks), and a chunk of them cannot hold `from` back forever.
        if (q === null) throw new Error(`unparsable history entry of ${symbol}`)
        out.push(q)
      }
      if (raws.length < READ_CHUNK) return out
      from = /** @type {Quote} */ (out.at(-1)).seq + 1
    }
  }

  /** @param {BarSeries} series */
  #queue (series) {
    this.#dirty.push(series)
    if (this.#flushTimer !== null) return
    this.#flushTimer = this.#batchMs > 0 ? setTimeout(this.#flush, this.#batchMs) : setImmediate(this.#flush)
  }

  #flush = () => {
    this.#flushTimer = null
    const dirty = this.#dirty
    this.#dirty = []
    for (const s of dirty) s.flush()
  }

  #closeDue () {
    const now = this.#clockNow() - CLOSE_GRACE_MS
    for (const s of this.#series.values()) s.closeDue(now)
  }

  #stopClock () {
    if (this.#clock !== null) clearInterval(this.#clock)
    this.#clock = null
  }

  stop () {
    this.#stopClock()
    if (this.#flushTimer !== null) {
      clearTimeout(/** @type {NodeJS.Timeout} */ (this.#flushTimer))
      clearImmediate(/** @type {NodeJS.Immediate} */ (this.#flushTimer))
    }
    this.#flushTimer = null
    this.#dirty = []
  }
}
