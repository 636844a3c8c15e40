// A deterministic random source for tests (mulberry32): the same seed, the
// same stream, so a failing random case can be replayed.

/**
 * @param {number} seed
 * @returns {() => number} the next number in [0, 1)
 */
export function random (seed) {
  let a = seed
  return () => {
    a |= 0; a = a + 0x6D2B79F5 | 0
    let t = Math.imul(a ^ a >>> 15, 1 | a)
    t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t
    return ((t ^ t >>> 14) >>> 0) / 4294967296
  }
}
