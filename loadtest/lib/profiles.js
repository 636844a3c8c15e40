// Load profiles: the k6 scenario built from the config, the timeline each
// VU follows, and the popularity-skewed symbol picks. Plain ESM, no k6 APIs.

import { formatDuration } from './config.js'

/**
 * @typedef {import('./config.js').Config} Config
 *
 * @typedef {object} Plan
 * @property {number} vus VUs at the peak (each holds connsPerVu sockets)
 * @property {{duration: string, target: number}[]} stages ramping-vus stages, in VUs
 * @property {number} endMs when, from the scenario start, every VU closes its sockets
 * @property {number} holdStartMs start of the final hold (0 when there is none)
 * @property {number} spacingMs gap between two connects of one VU in the first stage
 * @property {number} peakConns connections at the peak (vus * connsPerVu, >= target)
 * @property {number} holdConns connections in the last stage (rounded up the same way)
 */

/**
 * @param {Config} cfg
 * @returns {Plan}
 */
export function buildPlan (cfg) {
  const vusFor = (/** @type {number} */ conns) => Math.ceil(conns / cfg.connsPerVu)
  const stages = cfg.stages.map((s) => ({ duration: formatDuration(s.durationMs), target: vusFor(s.conns) }))
  const endMs = cfg.stages.reduce((t, s) => t + s.durationMs, 0)
  const vus = Math.max(...stages.map((s) => s.target))
  // ramping-vus starts the VUs of a stage evenly over it; each VU spreads its
  // own connects over its share, so connections rise smoothly, not in steps.
  const first = cfg.stages[0]
  const spacingMs = first.conns > 0 ? Math.min(1000, first.durationMs / first.conns) : 0
  return {
    vus,
    stages,
    endMs,
    holdStartMs: cfg.holdMs > 0 ? endMs - cfg.holdMs : 0,
    spacingMs,
    peakConns: vus * cfg.connsPerVu,
    holdConns: stages[stages.length - 1].target * cfg.connsPerVu
  }
}

/**
 * The `options.scenarios` entry: one named scenario (smoke, ramp or soak).
 *
 * @param {Config} cfg
 * @param {Plan} plan
 */
export function scenarios (cfg, plan) {
  return {
    [cfg.scenario]: {
      executor: 'ramping-vus',
      startVUs: 0,
      stages: plan.stages,
      // A falling stage (STAGES) must drop connections when it says so:
      // VUs it removes are stopped at once (k6 closes their sockets with 1000).
      gracefulRampDown: '0s',
      // Each VU closes its sockets at endMs by itself; this is the margin
      // for the close handshakes and the last tally flush.
      gracefulStop: '30s',
      tags: { profile: cfg.scenario }
    }
  }
}

// mulberry32, the seeded PRNG of the fetcher's simulated market (plain ESM,
// no imports): one implementation for both.
export { prng } from '../../services/quote-fetcher/src/providers/sim.js'

/**
 * A Zipf-like picker over `symbols` in order: weight of rank r is 1 / r^skew,
 * so with skew 1 and 200 symbols the top 5 get ~38% of the picks and the
 * top 10 half of them; skew 0 is uniform.
 *
 * @param {string[]} symbols
 * @param {number} skew
 */
export function popularity (symbols, skew) {
  const cdf = new Array(symbols.length)
  let total = 0
  for (let i = 0; i < symbols.length; i++) {
    total += 1 / Math.pow(i + 1, skew)
    cdf[i] = total
  }
  for (let i = 0; i < cdf.length; i++) cdf[i] /= total
  /** @param {number} u in [0, 1) */
  const at = (u) => {
    let lo = 0
    let hi = cdf.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (cdf[mid] > u) hi = mid
      else lo = mid + 1
    }
    return symbols[lo]
  }
  return {
    /** Share of picks that land on rank i (0-based). @param {number} i */
    weight: (i) => cdf[i] - (i > 0 ? cdf[i - 1] : 0),
    /**
     * `n` distinct symbols drawn by popularity.
     *
     * @param {() => number} rand
     * @param {number} n
     * @param {Set<string>} [exclude] symbols not to pick
     * @returns {string[]}
     */
    pick (rand, n, exclude) {
      const out = new Set()
      const avail = symbols.length - (exclude ? exclude.size : 0)
      const want = Math.min(n, avail)
      let tries = 0
      while (out.size < want) {
        // Rejection sampling stays fast while n is small next to the universe;
        // after many misses fall back to a uniform scan.
        const s = tries++ < 50 * want ? at(rand()) : symbols[Math.floor(rand() * symbols.length)]
        if (!exclude || !exclude.has(s)) out.add(s)
      }
      return [...out]
    }
  }
}
