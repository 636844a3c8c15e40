// The fleet in one place: every process (gateway, fetcher) writes a small
// record of itself into one hash in Redis every WSPS_STATUS_INTERVAL_MS,
// and anyone with a Redis connection reads them all in one round trip
// (a gateway's GET /admin/fleet, `wsps top`). Nothing scrapes pods.
//
// A record says when it was written (`at`, by Redis's clock, as the reader
// reads its age: hosts' clocks do not agree). One older than LATE_AFTER
// intervals is shown as late: its process is alive or not, but it cannot
// reach Redis (a silent link, a pause), which is itself what an operator
// is looking for. Past `expiresAt` (KEEP_INTERVALS intervals) the reader
// deletes it: the process is gone.

import { monitorEventLoopDelay } from 'node:perf_hooks'

/** A record this many intervals old is late (its writer missed two turns). */
export const LATE_AFTER = 3
/** A record is kept this many intervals after it was written, then dropped. */
const KEEP_INTERVALS = 15
/** A stop waits this long at most for its record's removal. */
const REMOVE_WAIT_MS = 500
/** The event-loop delay monitor samples this often. */
const RESOLUTION_MS = 10

/**
 * @typedef {{role: 'gateway' | 'fetcher', node: string} & Record<string, unknown>} StatusRecord
 * @typedef {StatusRecord & {at: number, intervalMs: number, expiresAt: number}} WrittenRecord
 * @typedef {WrittenRecord & {ageMs: number, late: boolean}} FleetEntry
 */

/**
 * Writes this process's record, stamped by Redis (scripts.js).
 *
 * @param {import('./scripts.js').ScriptedRedis} redis
 * @param {import('./keys.js').RedisKeys} keys
 * @param {StatusRecord} record
 * @param {number} intervalMs how often it is written
 */
export async function writeStatus (redis, keys, record, intervalMs) {
  await redis.wspsStatusWrite(keys.status, fieldOf(record), JSON.stringify(record), intervalMs, KEEP_INTERVALS * intervalMs)
}

/**
 * Removes this process's record (a clean stop: it is gone, not late).
 *
 * @param {import('ioredis').Redis | import('ioredis').Cluster} redis
 * @param {import('./keys.js').RedisKeys} keys
 * @param {Pick<StatusRecord, 'role' | 'node'>} record
 */
export async function removeStatus (redis, keys, record) {
  await redis.hdel(keys.status, fieldOf(record))
}

/**
 * Every process's record, gateways first, then by node, each with its age
 * by Redis's clock; expired ones are deleted on the way (whoever reads
 * first).
 *
 * @param {import('./scripts.js').ScriptedRedis} redis
 * @param {import('./keys.js').RedisKeys} keys
 * @returns {Promise<FleetEntry[]>}
 */
export async function readFleet (redis, keys) {
  const [now, flat] = await redis.wspsStatusRead(keys.status)
  /** @type {FleetEntry[]} */
  const out = []
  /** @type {string[]} */
  const expired = []
  for (let i = 0; i < flat.length; i += 2) {
    const field = flat[i]
    const text = flat[i + 1]
    let r
    try { r = /** @type {WrittenRecord} */ (JSON.parse(text)) } catch { expired.push(field); continue }
    if (!(r.expiresAt > now)) { expired.push(field); continue }
    const ageMs = Math.max(0, now - r.at)
    out.push({ ...r, ageMs, late: ageMs > LATE_AFTER * r.intervalMs })
  }
  if (expired.length) await redis.hdel(keys.status, ...expired)
  return out.sort((a, b) => (a.role === b.role ? a.node.localeCompare(b.node) : a.role === 'gateway' ? -1 : 1))
}

/**
 * Writes a record every intervalMs until stopped; a write that fails (Redis
 * away) is skipped: the next one says it all again. Stopped, the record is
 * removed.
 *
 * @param {object} options
 * @param {number} options.intervalMs 0: never
 * @param {() => Promise<StatusRecord>} options.snapshot this process now
 * @param {(record: StatusRecord, intervalMs: number) => Promise<void>} options.write writeStatus on the process's connection
 * @param {(record: StatusRecord) => Promise<void>} options.remove removeStatus likewise
 * @returns {{stop: () => Promise<void>}}
 */
export function reportStatus ({ intervalMs, snapshot, write, remove }) {
  if (intervalMs === 0) return { stop: async () => {} }
  let last = /** @type {StatusRecord | null} */ (null)
  const tick = () => {
    snapshot().then((record) => {
      last = record
      return write(record, intervalMs)
    }).catch(() => {})
  }
  const timer = setInterval(tick, intervalMs)
  timer.unref()
  setImmediate(tick)
  return {
    async stop () {
      clearInterval(timer)
      if (last === null) return
      // With Redis away the removal would wait for it (a shutdown must not):
      // the record then expires by itself.
      /** @type {NodeJS.Timeout | undefined} */
      let give
      await Promise.race([remove(last).catch(() => {}), new Promise((resolve) => { give = setTimeout(resolve, REMOVE_WAIT_MS) })])
      clearTimeout(give)
    }
  }
}

/** @param {Pick<StatusRecord, 'role' | 'node'>} record */
function fieldOf ({ role, node }) {
  return `${role}/${node}`
}

/**
 * The event loop's delay, p99 in ms since the previous call: how long a
 * ready quote may have waited for this process to run at all.
 *
 * @returns {() => number}
 */
export function loopDelayP99 () {
  const h = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  h.enable()
  return () => {
    // The sampling timer itself fires every RESOLUTION_MS: only what is beyond is delay.
    const p99 = h.count ? Math.max(0, h.percentile(99) / 1e6 - RESOLUTION_MS) : 0
    h.reset()
    return Math.round(p99 * 10) / 10
  }
}

/**
 * Per second since the previous call, of a counter read by `read`.
 *
 * @param {() => Promise<number>} read
 * @returns {() => Promise<number>}
 */
export function ratePerSecond (read) {
  let last = /** @type {{value: number, at: number} | null} */ (null)
  return async () => {
    const value = await read()
    const at = performance.now()
    const rate = last === null || at === last.at ? 0 : ((value - last.value) * 1000) / (at - last.at)
    last = { value, at }
    return Math.round(rate * 10) / 10
  }
}

/**
 * @param {import('prom-client').Counter<string> | import('prom-client').Gauge<string>} metric
 * @returns {Promise<number>} its value, summed over its series
 */
export async function valueOf (metric) {
  return (await metric.get()).values.reduce((sum, v) => sum + v.value, 0)
}
