// The timelines a gateway serves a symbol on: real-time, and with delayed
// grants the delayed one (delayed/delayed-timeline.js), each a hub, its
// recovery and its bar series. Sessions, the outbox's catch-up (a slow
// reader asks for the quote of its timeline) and bar requests all ask this
// one owner which timeline a symbol is on.

/**
 * @typedef {object} Timeline
 * @property {import('./hub.js').Hub} hub
 * @property {import('./recovery.js').Recovery} recovery
 * @property {import('./bars/bar-hub.js').BarHub | null} bars null: bars are refused (unit tests)
 */

export class Timelines {
  /**
   * @param {object} options
   * @param {Timeline} options.realtime
   * @param {Timeline | null} [options.delayed] null: no delayed grants served (unit tests)
   * @param {number} [options.delayMs] how old the delayed timeline's quotes are (WSPS_DELAY_MS)
   */
  constructor ({ realtime, delayed = null, delayMs = 0 }) {
    /** @readonly */
    this.realtime = realtime
    /** @readonly */
    this.delayed = delayed
    /** @readonly */
    this.delayMs = delayMs
    Object.freeze(this)
  }

  /**
   * @param {boolean} delayed
   * @returns {Timeline}
   */
  of (delayed) {
    if (!delayed) return this.realtime
    if (this.delayed === null) throw new Error('no delayed timeline')
    return this.delayed
  }
}
