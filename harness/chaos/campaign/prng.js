// A tiny seeded PRNG (mulberry32): the same seed gives the same campaign,
// so a bug report names its seed and anyone can replay the schedule.

/**
 * @param {number} seed any integer
 * @returns {() => number} a float in [0, 1) per call
 */
export function mulberry32 (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

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
