// The nemesis's schedule: which fault, on what, when and for how long, drawn
// from a seeded PRNG (prng.js). Pure: faults.js applies what this plans.
//
// Each fault has a bounded duration and is healed after it; at most
// `maxConcurrent` are in force at once, never two on one target, and never
// two in one lane (a lane is the target's role: both gateways, or both
// fetchers, are never down together: a campaign about what clients are
// told, not about an outage nobody could serve). A clock skew has a lane of
// its own: a skewed fetcher only publishes once it holds leases, which it
// gets when the other fetcher is killed or paused meanwhile.

import { draw, mulberry32 } from './prng.js'

/**
 * @typedef {'gateway' | 'fetcher' | 'redis'} Role
 * @typedef {'links' | 'sentinel'} Variant
 *   links: a standalone Redis, each service's link through its own Toxiproxy proxy;
 *   sentinel: a primary with replicas and Sentinels (failovers), no proxies
 * @typedef {object} FaultKind
 * @property {string} title
 * @property {readonly ('gateway' | 'fetcher' | 'redis')[]} on the roles it can target
 * @property {readonly Variant[]} variants where it applies
 * @property {[number, number]} durationMs bounds of how long it lasts before it is healed
 * @property {boolean} [link] it cuts its target's Redis link off (readiness should drop)
 * @property {number} [settleMs] after the heal, its lane stays busy this long (a restart to become ready;
 *   Sentinels take ~20 s to agree again and see every replica in sync after a failover)
 * @property {number} [weight] relative frequency (default 1)
 * @property {string} [lane] what it excludes at the same time (default: its role)
 */

/** @type {Readonly<Record<string, FaultKind>>} */
export const FAULTS = Object.freeze({
  kill: { title: 'kill -9, restarted after', on: ['gateway', 'fetcher'], variants: ['links', 'sentinel'], durationMs: [1000, 8000], settleMs: 5000 },
  pause: { title: 'SIGSTOP, SIGCONT after', on: ['gateway', 'fetcher'], variants: ['links', 'sentinel'], durationMs: [1000, 5000] },
  drain: { title: 'SIGTERM (drain), a new one on the same port', on: ['gateway'], variants: ['links', 'sentinel'], durationMs: [0, 0], settleMs: 5000 },
  silence: { title: 'Redis link silent (Toxiproxy timeout 0)', on: ['gateway', 'fetcher'], variants: ['links'], durationMs: [3000, 15000], link: true, settleMs: 3000 },
  slow: { title: 'Redis link slow (250 ms latency)', on: ['gateway', 'fetcher'], variants: ['links'], durationMs: [5000, 20000] },
  reset: { title: 'Redis link reset (reset_peer)', on: ['gateway', 'fetcher'], variants: ['links'], durationMs: [2000, 10000], link: true, settleMs: 3000 },
  pubsub: { title: 'CLIENT KILL TYPE pubsub', on: ['redis'], variants: ['links', 'sentinel'], durationMs: [0, 0], settleMs: 2000 },
  failover: { title: 'kill -9 of the Redis primary (Sentinel failover), old primary back as a replica after', on: ['redis'], variants: ['sentinel'], durationMs: [5000, 15000], settleMs: 20_000, weight: 2 },
  switchover: { title: 'SENTINEL FAILOVER', on: ['redis'], variants: ['sentinel'], durationMs: [0, 0], settleMs: 20_000 },
  skew: { title: 'fetcher restarted under libfaketime (clock off), restarted right after', on: ['fetcher'], variants: ['links', 'sentinel'], durationMs: [10000, 30000], settleMs: 5000, lane: 'clock' }
})

/** Clock offsets the skew fault draws from. */
export const SKEWS_MS = Object.freeze([-8000, -5000, -3000, 3000, 5000, 8000])

/**
 * @typedef {object} PlannedFault
 * @property {number} id
 * @property {number} at ms after the campaign's start
 * @property {string} kind a key of FAULTS
 * @property {string} target a service name (gw1, gw2, f1, f2) or 'redis'
 * @property {Role} role
 * @property {string} lane no two faults of one lane at once
 * @property {number} durationMs
 * @property {{skewMs?: number}} params
 */

/**
 * @typedef {object} PlanOptions
 * @property {number} seed
 * @property {number} durationMs the whole campaign
 * @property {Variant} variant
 * @property {Record<'gateway' | 'fetcher', string[]>} services names by role
 * @property {number} [warmupMs] no fault before this
 * @property {number} [cooldownMs] every fault healed this long before the end
 * @property {[number, number]} [gapMs] pause between two faults starting
 * @property {number} [maxConcurrent]
 * @property {string[]} [kinds] only these (default: every kind of the variant)
 */

/**
 * The campaign's schedule, the same for the same options.
 *
 * @param {PlanOptions} options
 * @returns {PlannedFault[]} in the order they start
 */
export function plan ({ seed, durationMs, variant, services, warmupMs = 15_000, cooldownMs = 20_000, gapMs = [2000, 10_000], maxConcurrent = 2, kinds }) {
  const rnd = draw(mulberry32(seed))
  const names = kinds ?? Object.keys(FAULTS).filter((k) => FAULTS[k].variants.includes(variant))
  for (const k of names) if (!FAULTS[k]?.variants.includes(variant)) throw new TypeError(`fault ${k} does not apply to the ${variant} variant`)
  /** @type {string[]} weighted bag */
  const bag = names.flatMap((k) => Array(FAULTS[k].weight ?? 1).fill(k))
  /** @type {PlannedFault[]} */
  const out = []
  /** @type {{lane: string, target: string, until: number}[]} faults in force (until: healed and settled) */
  let busy = []
  let t = warmupMs
  const end = durationMs - cooldownMs
  for (let id = 1; ; id++) {
    t += rnd.int(gapMs[0], gapMs[1])
    const kind = rnd.pick(bag)
    const f = FAULTS[kind]
    const role = rnd.pick(f.on)
    const target = role === 'redis' ? 'redis' : rnd.pick(services[role])
    const dur = rnd.int(f.durationMs[0], f.durationMs[1])
    /** @type {{skewMs?: number}} */
    const params = kind === 'skew' ? { skewMs: rnd.pick(SKEWS_MS) } : {}
    const lane = f.lane ?? role
    // Wait for a free slot, lane and target ('busiest' may be either gateway).
    for (;;) {
      busy = busy.filter((b) => b.until > t)
      const same = busy.find((b) => b.lane === lane || b.target === target || (role === 'gateway' && (b.target === 'busiest' || target === 'busiest') && b.target !== 'redis'))
      if (same) { t = same.until + 1000; continue }
      if (busy.length >= maxConcurrent) { t = Math.min(...busy.map((b) => b.until)) + 1000; continue }
      break
    }
    if (t + dur + (f.settleMs ?? 0) > end) break
    out.push({ id, at: t, kind, target, role, lane, durationMs: dur, params })
    busy.push({ lane, target, until: t + dur + (f.settleMs ?? 0) })
  }
  return out
}
