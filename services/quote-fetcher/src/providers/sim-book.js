// The `sim` provider's order books: each simulated quote moves its
// symbol's book. The best levels are the quote's bid and ask (with its
// sizes); below them a level per price tick, some missing, whose sizes
// drift (orders added and cancelled) and vanish when the price moves
// through them (trades take the liquidity). Like the quotes, every step is
// a pure function of (seed, symbol, seq, previous book), so whichever
// replica publishes the quote continues the same book.

import { decimal } from '@wsps/protocol/book'
import { prng, hash } from './sim.js'

/**
 * @typedef {import('@wsps/protocol/book').Level} Level
 * @typedef {{bids: Level[], asks: Level[]}} Levels best first
 */

/** Levels per side of a simulated book. */
export const SIM_BOOK_LEVELS = 40

/**
 * The book after a quote: its whole, best first.
 *
 * @param {{seed: number, symbol: string, seq: number, quote: {bid?: number, ask?: number, bidSize?: number, askSize?: number}, previous: Levels | null, levels?: number}} step
 * @returns {Levels | null} null when the quote has no bid and ask
 */
export function simBook ({ seed, symbol, seq, quote, previous, levels = SIM_BOOK_LEVELS }) {
  const { bid, ask } = quote
  if (bid === undefined || ask === undefined || !(bid < ask)) return null
  const rand = prng(hash(`${seed}:${symbol}:book:${seq}`))
  const tick = bid < 1 ? 0.0001 : 0.01
  const digits = tick < 0.01 ? 4 : 2
  /**
   * @param {number} best
   * @param {-1 | 1} dir away from the spread
   * @param {number | undefined} topSize
   * @param {Level[]} before
   */
  const side = (best, dir, topSize, before) => {
    const held = new Map(before)
    /** @type {Level[]} */
    const out = []
    for (let k = 0; k < levels; k++) {
      const value = best + dir * k * tick
      if (value < tick) break
      const price = /** @type {string} */ (decimal(value.toFixed(digits)))
      if (k === 0) {
        out.push([price, String(topSize ?? 100)])
        continue
      }
      const was = held.get(price)
      // A level a quarter of the time absent; a held one changes a third of the time.
      if (was !== undefined && rand() > 0.33) out.push([price, was])
      else if (rand() > 0.25) out.push([price, String(100 * (1 + Math.floor(rand() * 30 * (1 + k / 10))))])
    }
    return out
  }
  return {
    bids: side(bid, -1, quote.bidSize, previous?.bids ?? []),
    asks: side(ask, 1, quote.askSize, previous?.asks ?? [])
  }
}
