// Bar series as a client holds them from `bars` and `bar` frames
// (docs/protocol.md, Bars), with every break of the rules noted as a
// problem: a live bar before its series' backfill, a closed bar that is
// not after the last one closed (a duplicate or out of order), a backfill
// not oldest first, a frame whose `delayed` differs from the series'.

/**
 * @typedef {{t: number, o: number, h: number, l: number, c: number, v: number, n: number}} Bar
 * @typedef {{closed: Bar[], open: Bar | null, complete: boolean, delayed: boolean, backfilled: number}} Series
 *   backfilled: how many closed bars came in the backfill (the rest came live)
 */

export class BarReader {
  /** @type {Map<string, Series>} `${symbol} ${interval}` -> what is held */
  #series = new Map()
  /** @type {string[]} */
  problems = []

  /**
   * Reads one server frame; frames other than bars are ignored.
   *
   * @param {any} msg
   */
  read (msg) {
    if (msg.op === 'bars') this.#backfill(msg)
    else if (msg.op === 'bar') this.#bar(msg)
  }

  /**
   * @param {string} symbol
   * @param {string} interval
   * @returns {Series | undefined}
   */
  series (symbol, interval) {
    return this.#series.get(`${symbol} ${interval}`)
  }

  /**
   * Forgets a series (unsubscribed).
   *
   * @param {string} symbol
   * @param {string} interval
   */
  forget (symbol, interval) {
    this.#series.delete(`${symbol} ${interval}`)
  }

  /** @param {any} msg */
  #backfill (msg) {
    const key = `${msg.symbol} ${msg.interval}`
    /** @type {Bar[]} */
    const bars = msg.bars
    for (let i = 1; i < bars.length; i++) {
      if (!(bars[i].t > bars[i - 1].t)) this.problems.push(`${key}: backfill not oldest first at ${bars[i].t}`)
    }
    const open = msg.current ?? null
    if (open !== null && bars.length && !(open.t > bars[bars.length - 1].t)) this.problems.push(`${key}: current ${open.t} not after the last closed bar`)
    // A new backfill (a move to the other timeline) replaces the series.
    this.#series.set(key, { closed: [...bars], open, complete: msg.complete, delayed: msg.delayed === true, backfilled: bars.length })
  }

  /** @param {any} msg */
  #bar (msg) {
    const key = `${msg.symbol} ${msg.interval}`
    const s = this.#series.get(key)
    if (s === undefined) {
      this.problems.push(`${key}: a bar before its backfill`)
      return
    }
    if ((msg.delayed === true) !== s.delayed) this.problems.push(`${key}: a bar with delayed ${msg.delayed} in a series with ${s.delayed}`)
    /** @type {Bar} */
    const bar = msg.bar
    const lastClosed = s.closed.at(-1)
    if (lastClosed !== undefined && !(bar.t > lastClosed.t)) {
      this.problems.push(`${key}: bar ${bar.t} (closed ${msg.closed}) not after the last closed ${lastClosed.t}`)
      return
    }
    if (msg.closed) {
      s.closed.push(bar)
      s.open = null
    } else {
      s.open = bar
    }
  }
}
