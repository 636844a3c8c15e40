// A seeded PRNG: the same seed gives the same campaign, so a bug report
// names its seed and anyone can replay the schedule. The generator is the
// fetcher's simulated market's (mulberry32, plain ESM): one implementation.

export { prng as mulberry32 } from '../../../services/quote-fetcher/src/providers/sim.js'

/**
 * Helpers over one generator.
 *
 * @param {() => number} next
 */
export function draw (next) {
  return {
    /** @param {number} lo @param {number} hi @returns {number} an integer in [lo, hi] */
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    /** @template T @param {readonly T[]} list @returns {T} */
    pick: (list) => list[Math.floor(next() * list.length)]
  }
}
