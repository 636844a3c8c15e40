// The bar subscriptions a client wants (docs/protocol.md, Bars) and the
// series it holds of each: per (symbol, interval), its backfill and
// timeline as asked, what the server holds from the latest ack of each
// interval, the subscribeBars() calls waiting for it, and the bars from the
// `bars` and `bar` frames. A bar subscription is apart from the quote
// subscription of the same symbol.

import { HeldKeys } from './held-keys.js'

/**
 * @typedef {import('./types.js').Bar} Bar
 * @typedef {import('./types.js').BarSeries} BarSeries
 * @typedef {import('./types.js').BarOptions} BarOptions
 * @typedef {import('./types.js').ErrorInfo} ErrorInfo
 * @typedef {import('./held-keys.js').HeldResult} HeldResult
 * @typedef {{backfill: number, delayed?: boolean}} Wanted
 */

/** Most closed bars held per series: the largest backfill the protocol allows. */
const MAX_HELD = 500

/**
 * @param {string} symbol
 * @param {string} interval
 */
const keyOf = (symbol, interval) => `${symbol} ${interval}`

export class BarSubscriptions {
  /** @type {Map<string, Wanted & {symbol: string, interval: string}>} `${symbol} ${interval}` -> as asked, in the order added */
  #wanted = new Map()
  /** what the server holds, from the latest ack of each interval, and who waits for it */
  #held = new HeldKeys()
  /** @type {Map<string, BarSeries>} the series held, from the frames */
  #series = new Map()

  /** Whether any bar subscription is wanted. */
  get size () {
    return this.#wanted.size
  }

  /**
   * @param {string} symbol
   * @param {string} interval
   */
  wants (symbol, interval) {
    return this.#wanted.has(keyOf(symbol, interval))
  }

  /**
   * @param {string} symbol
   * @param {string} interval
   * @returns {BarSeries | undefined} the series held
   */
  series (symbol, interval) {
    return this.#series.get(keyOf(symbol, interval))
  }

  /**
   * Adds to the wanted set (or changes how a wanted one is asked for).
   *
   * @param {string[]} symbols distinct
   * @param {string} interval
   * @param {Wanted} wanted
   * @returns {string[]} those to ask the server for: new, or on another timeline
   */
  watch (symbols, interval, wanted) {
    const send = []
    for (const symbol of symbols) {
      const key = keyOf(symbol, interval)
      const was = this.#wanted.get(key)
      if (was === undefined || was.delayed !== wanted.delayed) send.push(symbol)
      this.#wanted.set(key, { symbol, interval, ...wanted })
    }
    return send
  }

  /**
   * Removes from the wanted set; its series is forgotten, and whoever waits
   * for it is told CANCELLED.
   *
   * @param {string[]} symbols
   * @param {string} interval
   * @returns {string[]} those that were wanted
   */
  unwatch (symbols, interval) {
    const removed = symbols.filter((s) => this.#wanted.delete(keyOf(s, interval)))
    for (const s of removed) this.#series.delete(keyOf(s, interval))
    this.settle(removed.map((s) => keyOf(s, interval)), { code: 'CANCELLED', message: 'unsubscribed before the server confirmed' })
    return removed
  }

  /**
   * The server refused (or stopped granting) bars: out of the wanted set,
   * and whoever waits for them gets the error.
   *
   * @param {string[]} symbols
   * @param {string | null} interval null: every interval of these symbols
   * @param {ErrorInfo} error
   * @returns {{symbol: string, interval: string}[]} those that were wanted
   */
  refuse (symbols, interval, error) {
    const named = new Set(symbols)
    const dropped = [...this.#wanted.values()].filter((w) => named.has(w.symbol) && (interval === null || w.interval === interval))
    for (const w of dropped) {
      this.#wanted.delete(keyOf(w.symbol, w.interval))
      this.#series.delete(keyOf(w.symbol, w.interval))
    }
    this.settle(dropped.map((w) => keyOf(w.symbol, w.interval)), error)
    return dropped.map(({ symbol, interval }) => ({ symbol, interval }))
  }

  /**
   * Sub requests for the whole wanted set (a new connection), or for some
   * symbols of one interval: one per interval, backfill and timeline.
   *
   * @param {{symbols: string[], interval: string}} [only]
   * @returns {{symbols: string[], interval: string, backfill: number, delayed?: boolean}[]}
   */
  requests (only) {
    /** @type {Map<string, {symbols: string[], interval: string, backfill: number, delayed?: boolean}>} */
    const groups = new Map()
    const list = only === undefined
      ? [...this.#wanted.values()]
      : only.symbols.map((s) => this.#wanted.get(keyOf(s, only.interval))).filter((w) => w !== undefined)
    for (const w of list) {
      const key = `${w.interval}/${w.backfill}/${w.delayed}`
      const group = groups.get(key)
      if (group) group.symbols.push(w.symbol)
      else groups.set(key, { symbols: [w.symbol], interval: w.interval, backfill: w.backfill, ...(w.delayed === undefined ? {} : { delayed: w.delayed }) })
    }
    return [...groups.values()]
  }

  /**
   * What one SSE stream carries of the wanted set (docs/protocol.md,
   * "Server-Sent Events": the bars of one interval): the series of the
   * interval and timeline of the first one wanted, with the largest
   * backfill asked of them.
   *
   * @returns {{symbols: string[], interval: string, backfill: number, delayed?: boolean} | null} null: none wanted
   */
  forStream () {
    const first = this.#wanted.values().next().value
    if (first === undefined) return null
    const same = [...this.#wanted.values()].filter((w) => w.interval === first.interval && w.delayed === first.delayed)
    const backfill = Math.max(...same.map((w) => w.backfill))
    return { symbols: same.map((w) => w.symbol), interval: first.interval, backfill, ...(first.delayed === undefined ? {} : { delayed: first.delayed }) }
  }

  /**
   * Sub requests for the wanted bars the server does not hold (after
   * RATE_LIMITED or INTERNAL): as requests().
   */
  missing () {
    return this.requests().map((r) => ({ ...r, symbols: r.symbols.filter((s) => !this.#held.has(keyOf(s, r.interval))) })).filter((r) => r.symbols.length)
  }

  /**
   * An ack of a bars request: the connection's bar subscriptions of that
   * interval after it. Resolves the waits it completes.
   *
   * @param {string} interval
   * @param {string[]} symbols
   */
  acked (interval, symbols) {
    this.#held.acked(symbols.map((s) => keyOf(s, interval)), (key) => key.endsWith(` ${interval}`))
  }

  /** A new connection holds nothing (the series held stay until their new backfill). */
  clearHeld () {
    this.#held.clear()
  }

  /**
   * @param {string[]} symbols
   * @param {string} interval
   * @param {boolean} live whether the connection's acks count now
   * @returns {Promise<HeldResult>} once the server holds all of them, or
   *   with the error that made it refuse one
   */
  held (symbols, interval, live) {
    return this.#held.wait(symbols.map((s) => keyOf(s, interval)), live)
  }

  /**
   * Ends the waits that include any of these keys with `error`.
   *
   * @param {string[]} keys
   * @param {ErrorInfo} error
   */
  settle (keys, error) {
    this.#held.settle(keys, error)
  }

  /** @param {ErrorInfo} error ends every wait with it */
  settleAll (error) {
    this.#held.settleAll(error)
  }

  /**
   * A `bars` frame: the series starts over from its backfill.
   *
   * @param {{symbol: string, interval: string, bars: Bar[], current?: Bar, complete: boolean, delayed?: boolean}} msg
   * @returns {BarSeries | null} the series held now (null: not wanted, a late frame)
   */
  backfill (msg) {
    const key = keyOf(msg.symbol, msg.interval)
    if (!this.#wanted.has(key)) return null
    /** @type {BarSeries} */
    const series = { symbol: msg.symbol, interval: msg.interval, bars: msg.bars.slice(-MAX_HELD), current: msg.current ?? null, complete: msg.complete === true, delayed: msg.delayed === true }
    this.#series.set(key, series)
    return series
  }

  /**
   * A `bar` frame: the open bar's update, or its final value.
   *
   * @param {{symbol: string, interval: string, bar: Bar, closed: boolean}} msg
   * @returns {BarSeries | null} the series held now (null: not wanted, or no backfill yet)
   */
  bar (msg) {
    const series = this.#series.get(keyOf(msg.symbol, msg.interval))
    if (series === undefined) return null
    const last = series.bars.at(-1)
    // A bar never goes back (a late frame of a series since replaced).
    if (last !== undefined && msg.bar.t <= last.t) return null
    if (msg.closed) {
      series.bars.push(msg.bar)
      if (series.bars.length > MAX_HELD) series.bars.shift()
      series.current = null
    } else {
      series.current = msg.bar
    }
    return series
  }
}
