// The usage records exchanges ask for in their monthly usage reports: per
// session, its access to each venue at each service level (real-time or
// delayed), who (user and class), from when to when, through which
// gateway. Kept in Redis, under the {usage} hash tag (keys.js):
//
// - a record opens when its session first reaches the venue at that level:
//   a field of its gateway process's open records (usageOpen);
// - it closes when the session ends: removed from there and appended to the
//   stream of every UTC month it overlaps (usageMonth), by one script
//   (scripts.js, USAGE_CLOSE) that only the one who removed it runs on;
// - a gateway process says it is alive every few seconds (usageAlive); the
//   open records of one silent for longer than the lease are closed by
//   whichever gateway sweeps first, ending when it was last alive.
//
// The report of a month (aggregate()) reads that month's stream and the
// records still open, and sums per user, venue and level.
//
// A record is never written twice: a gateway that was only paused past the
// lease finds its records closed by the sweep (the close script removes
// nothing), and what its sessions did after it woke is not recorded.

/**
 * @typedef {'realtime' | 'delayed'} Level
 * @typedef {object} UsageRecord
 * @property {string} id unique: `<instance>:<connection>:<n>`
 * @property {string} user the token's `sub`
 * @property {string} class `pro` or `nonpro`
 * @property {string} venue a MIC (`XXXX`: a symbol no venue lists)
 * @property {Level} level
 * @property {number} start ms since the epoch (the gateway's clock)
 * @property {number | null} end ms; null: still open
 * @property {string} gateway the node that served it
 */

/** The MIC ISO 10383 gives for "no market": a symbol of no venue in WSPS_VENUES. */
export const NO_VENUE = 'XXXX'
/** A month as the report names it. */
export const MONTH_PATTERN = /^(\d{4})-(0[1-9]|1[0-2])$/
/** A record over more months than this is written to the last ones only (a session that never ended). */
const MAX_MONTHS = 13
/** Stream entries read per XRANGE. */
const READ_COUNT = 1000

/**
 * @param {number} ms
 * @returns {string} its UTC month, `YYYY-MM`
 */
export function monthOf (ms) {
  return new Date(ms).toISOString().slice(0, 7)
}

/**
 * @param {string} month `YYYY-MM`
 * @returns {[number, number]} its first ms and the first ms of the next (UTC)
 */
export function monthSpan (month) {
  const m = MONTH_PATTERN.exec(month)
  if (m === null) throw new RangeError(`not a month: ${month}`)
  const [y, mo] = [Number(m[1]), Number(m[2])]
  return [Date.UTC(y, mo - 1, 1), Date.UTC(y, mo, 1)]
}

/**
 * @param {number} start
 * @param {number} end
 * @returns {string[]} the UTC months from start's to end's, oldest first (the last MAX_MONTHS)
 */
export function monthsOf (start, end) {
  const out = [monthOf(end)]
  while (out.length < MAX_MONTHS) {
    const [first] = monthSpan(out[0])
    if (first <= start) break
    out.unshift(monthOf(first - 1))
  }
  return out
}

/**
 * @param {import('./scripts.js').ScriptedRedis} redis
 * @param {import('./keys.js').RedisKeys} keys
 */
export function usageRecords (redis, keys) {
  /**
   * @param {string} instance
   * @param {UsageRecord} record with its end
   * @returns {Promise<boolean>} whether it was closed now (false: closed before)
   */
  const close = async (instance, record) => {
    const months = monthsOf(record.start, /** @type {number} */ (record.end)).map((m) => keys.usageMonth(m))
    return await redis.wspsUsageClose(keys.usageOpen(instance), months[0], record.id, JSON.stringify(record), ...months.slice(1)) === 1
  }
  return {
    close,
    /**
     * @param {string} instance
     * @param {UsageRecord} record without its end
     */
    async open (instance, record) {
      await redis.hset(keys.usageOpen(instance), record.id, JSON.stringify(record))
    },
    /**
     * @param {string} instance
     * @param {number} at now (ms)
     */
    async alive (instance, at) {
      await redis.hset(keys.usageAlive, instance, at)
    },
    /**
     * Closes the open records of every gateway process silent for longer
     * than leaseMs, each ending when its process was last alive.
     *
     * @param {number} now ms
     * @param {number} leaseMs
     * @returns {Promise<number>} records closed
     */
    async sweep (now, leaseMs) {
      let closed = 0
      for (const [instance, at] of Object.entries(await redis.hgetall(keys.usageAlive))) {
        if (Number(at) >= now - leaseMs) continue
        // Whoever removes it sweeps it; the others leave it.
        if (await redis.hdel(keys.usageAlive, instance) === 0) continue
        for (const text of Object.values(await redis.hgetall(keys.usageOpen(instance)))) {
          /** @type {UsageRecord} */
          const record = JSON.parse(text)
          if (await close(instance, { ...record, end: Math.max(record.start, Number(at)) })) closed++
        }
      }
      return closed
    },
    /**
     * @param {string} month `YYYY-MM`
     * @returns {Promise<UsageRecord[]>} the month's closed records and those open now
     */
    async read (month) {
      /** @type {UsageRecord[]} */
      const out = []
      let from = '-'
      for (;;) {
        const entries = await redis.xrange(keys.usageMonth(month), from, '+', 'COUNT', READ_COUNT)
        for (const [, fields] of entries) out.push(JSON.parse(fields[fields.indexOf('r') + 1]))
        if (entries.length < READ_COUNT) break
        from = `(${entries[entries.length - 1][0]}`
      }
      for (const instance of Object.keys(await redis.hgetall(keys.usageAlive))) {
        for (const text of Object.values(await redis.hgetall(keys.usageOpen(instance)))) out.push({ ...JSON.parse(text), end: null })
      }
      return out
    }
  }
}

/** @typedef {ReturnType<typeof usageRecords>} UsageRecords */

/**
 * @typedef {object} UsageRow one user's use of one venue at one level in the month
 * @property {string} user
 * @property {string} class the class of its latest session
 * @property {string} venue
 * @property {Level} level
 * @property {number} sessions
 * @property {string} firstAccess ISO time, within the month
 * @property {string} lastAccess ISO time, within the month (now for a session still open)
 * @property {number} accessSeconds the time its sessions reached the venue, within the month (overlaps counted once per session)
 * @property {string[]} gateways
 * @typedef {{venue: string, level: Level, class: string, users: number}} UsageTotal
 *   the count an exchange bills: distinct users of the venue at the level, by class
 * @typedef {{month: string, rows: UsageRow[], totals: UsageTotal[]}} UsageReport
 */

/**
 * The month's report from its records.
 *
 * @param {string} month
 * @param {UsageRecord[]} records
 * @param {number} now ms: the end of records still open
 * @returns {UsageReport}
 */
export function aggregate (month, records, now) {
  const [first, next] = monthSpan(month)
  /** @type {Map<string, {row: UsageRow, from: number, to: number, latest: number, gateways: Set<string>}>} */
  const rows = new Map()
  const seen = new Set()
  for (const r of records) {
    if (seen.has(r.id)) continue
    seen.add(r.id)
    const from = Math.max(r.start, first)
    const to = Math.min(r.end ?? now, next)
    if (to < from || from >= next) continue
    const key = JSON.stringify([r.user, r.venue, r.level])
    let acc = rows.get(key)
    if (acc === undefined) {
      acc = { row: { user: r.user, class: r.class, venue: r.venue, level: r.level, sessions: 0, firstAccess: '', lastAccess: '', accessSeconds: 0, gateways: [] }, from, to, latest: r.start, gateways: new Set() }
      rows.set(key, acc)
    }
    acc.row.sessions++
    acc.row.accessSeconds += (to - from) / 1000
    acc.from = Math.min(acc.from, from)
    acc.to = Math.max(acc.to, to)
    if (r.start >= acc.latest) {
      acc.latest = r.start
      acc.row.class = r.class
    }
    acc.gateways.add(r.gateway)
  }
  /** @type {UsageRow[]} */
  const out = []
  /** @type {Map<string, UsageTotal>} */
  const totals = new Map()
  for (const { row, from, to, gateways } of rows.values()) {
    out.push({ ...row, firstAccess: new Date(from).toISOString(), lastAccess: new Date(to).toISOString(), accessSeconds: Math.round(row.accessSeconds), gateways: [...gateways].sort() })
    const key = JSON.stringify([row.venue, row.level, row.class])
    const total = totals.get(key) ?? { venue: row.venue, level: row.level, class: row.class, users: 0 }
    total.users++
    totals.set(key, total)
  }
  /** @param {{venue: string, level: string}} a @param {{venue: string, level: string}} b */
  const byVenue = (a, b) => a.venue.localeCompare(b.venue) || a.level.localeCompare(b.level)
  out.sort((a, b) => byVenue(a, b) || a.user.localeCompare(b.user))
  return { month, rows: out, totals: [...totals.values()].sort((a, b) => byVenue(a, b) || a.class.localeCompare(b.class)) }
}

/** The columns of a report's rows, in the order `wsps usage --csv` writes them. */
export const USAGE_COLUMNS = Object.freeze(/** @type {const} */ (['user', 'class', 'venue', 'level', 'sessions', 'firstAccess', 'lastAccess', 'accessSeconds', 'gateways']))
