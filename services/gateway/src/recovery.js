// Recovery: a distinct `sub` that carries `since` (the seq and epoch the
// client holds) gets the ticks it missed, read from the symbol's history in
// Redis, and then the live ticks, with no gap and no duplicate between them.
//
// The history reads are asynchronous; the live stream is not. What joins
// them is one synchronous moment: the reads go on until, in one turn, every
// symbol's reads reach the tick its live stream would continue from for a
// joiner (hub.peek()); in that same turn the caller adds the subscriber and
// writes the replay. Ticks after that moment reach it through the fan-out.

import { cursorOf } from '@wsps/shared/published'

/**
 * @typedef {import('./protocol.js').Cursor} Cursor
 *
 * @typedef {object} HistoryReader what recovery needs of the broker
 * @property {(symbol: string, fromSeq: number, toSeq: number | null, max: number) => Promise<string[]>} history
 */

/**
 * Where the read for a resumed symbol starts. A client that holds a cursor
 * but not the quote at it (`held: false`, e.g. a position saved elsewhere)
 * needs that quote too under distinct delivery: the read then starts one
 * tick earlier, and the first quote read goes out as its `snap`.
 *
 * @param {Cursor} cursor
 * @param {boolean} replays distinct delivery
 * @returns {Cursor} the quote the read continues from
 */
export function readFrom (cursor, replays) {
  return replays && cursor.held === false ? { seq: Math.max(cursor.seq - 1, 0), epoch: cursor.epoch } : cursor
}

/** Reads per symbol before a moving target counts as not recoverable (each read only covers the ticks of the read before). */
const MAX_ROUNDS = 4

export class Recovery {
  #hub
  #broker
  #max
  #liveWaitMs
  #log

  /**
   * @param {object} options
   * @param {import('./hub.js').Hub} options.hub
   * @param {HistoryReader} options.broker
   * @param {number} options.max most ticks replayed per symbol (WSPS_RECOVERY_MAX); a longer gap gets a snap
   * @param {number} [options.liveWaitMs] how long a recovery waits for a symbol this gateway does not hold yet to go live
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ hub, broker, max, liveWaitMs = 5000, logger }) {
    this.#hub = hub
    this.#broker = broker
    this.#max = max
    this.#liveWaitMs = liveWaitMs
    this.#log = logger.child({ component: 'recovery' })
  }

  /**
   * Makes the symbols live here, then (distinct delivery) reads what each
   * missed after its cursor, and calls `apply` in the turn in which every
   * read reaches the tick the symbol's live stream continues from.
   *
   * @param {Map<string, Cursor>} cursors the symbols resumed
   * @param {number} delivery DISTINCT, FULL_RATE or a maxRate (delivery.js)
   * @param {boolean} replays whether the delivery gets every tick (distinct):
   *   merge deliveries recover to the latest state, nothing is read for them
   * @returns {Promise<Map<string, string[] | null>>} resolved in that turn:
   *   per symbol, the quotes to replay in order (what the live stream
   *   continues from is the last of them, or the cursor itself when empty),
   *   or null where history cannot cover the gap (epoch changed, out of
   *   window, ahead of the newest, longer than WSPS_RECOVERY_MAX)
   */
  async plan (cursors, delivery, replays) {
    const symbols = [...cursors.keys()]
    await this.#hub.whenLive(symbols, this.#liveWaitMs)
    try {
      return await this.#read(cursors, delivery, replays)
    } finally {
      // Runs in the turn the plan resolves in, before the caller's apply:
      // feeds without a subscriber by then are idle from now on.
      this.#hub.unpin(symbols)
    }
  }

  /**
   * @param {Map<string, Cursor>} cursors
   * @param {number} delivery
   * @param {boolean} replays
   * @returns {Promise<Map<string, string[] | null>>}
   */
  async #read (cursors, delivery, replays) {
    /** @type {Map<string, string[] | null>} */
    const plan = new Map()
    /** @type {Map<string, string[]>} contiguous from the cursor on */
    const read = new Map()
    for (let round = 0; ; round++) {
      /** @type {Promise<void>[]} */
      const reads = []
      for (const [symbol, cursor] of cursors) {
        if (plan.has(symbol)) continue
        const base = cursorOf(this.#hub.peek(symbol, delivery))
        if (base === null || base.epoch !== cursor.epoch || cursor.seq > base.seq || base.seq - cursor.seq > this.#max) {
          plan.set(symbol, null)
          continue
        }
        if (!replays) continue
        let have = read.get(symbol) ?? []
        let reached = cursor.seq + have.length
        if (reached < base.seq && round > 0) {
          // What the feed took in while history was read: no read again.
          const recent = this.#hub.recent(symbol, reached + 1, base.seq)
          if (recent !== null) {
            read.set(symbol, have = have.concat(recent))
            reached = base.seq
          }
        }
        if (reached >= base.seq) continue
        if (round === MAX_ROUNDS) {
          plan.set(symbol, null)
          continue
        }
        reads.push(this.#range(symbol, reached + 1, base.seq, cursor.epoch).then((raws) => {
          if (raws === null) plan.set(symbol, null)
          else read.set(symbol, have.concat(raws))
        }))
      }
      if (reads.length === 0) break
      await Promise.all(reads)
    }
    // This turn: every symbol not refused is covered up to its live stream.
    for (const symbol of cursors.keys()) if (!plan.has(symbol)) plan.set(symbol, read.get(symbol) ?? [])
    return plan
  }

  /**
   * @param {string} symbol
   * @param {number} from
   * @param {number} to
   * @param {unknown} epoch
   * @returns {Promise<string[] | null>} exactly the ticks from..to of this
   *   epoch, or null (trimmed, expired, a new epoch, a failed read)
   */
  async #range (symbol, from, to, epoch) {
    try {
      const raws = await this.#broker.history(symbol, from, to, to - from + 1)
      if (raws.length !== to - from + 1) return null
      for (let i = 0; i < raws.length; i++) {
        const c = cursorOf(raws[i])
        if (c === null || c.seq !== from + i || c.epoch !== epoch) return null
      }
      return raws
    } catch (err) {
      this.#log.warn({ err: /** @type {Error} */ (err).message, symbol }, 'history read failed; the symbol gets a snapshot')
      return null
    }
  }
}
