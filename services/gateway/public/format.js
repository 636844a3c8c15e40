// Number and time formatting for the quote table: fixed decimals so columns
// do not jump, explicit signs so direction does not rely on colour alone.

const price2 = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 })
const price4 = new Intl.NumberFormat(undefined, { minimumFractionDigits: 4, maximumFractionDigits: 4 })
const signed2 = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2, signDisplay: 'exceptZero' })
const signed4 = new Intl.NumberFormat(undefined, { minimumFractionDigits: 4, maximumFractionDigits: 4, signDisplay: 'exceptZero' })
const time = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false })

/** Sub-dollar prices trade in 1/100 cents. @param {number} ref */
const small = (ref) => Math.abs(ref) < 1

/** @param {number | undefined} p */
export function formatPrice (p) {
  if (typeof p !== 'number' || !Number.isFinite(p)) return '—'
  return (small(p) ? price4 : price2).format(p)
}

/**
 * @param {number} change
 * @param {number} ref the price it is a change of (picks the decimals)
 */
export function formatChange (change, ref) {
  if (!Number.isFinite(change)) return '—'
  return (small(ref) ? signed4 : signed2).format(change)
}

/** @param {number} pct */
export function formatPercent (pct) {
  if (!Number.isFinite(pct)) return '—'
  return `${signed2.format(pct)}%`
}

/** @param {number} ts ms since the epoch */
export function formatTime (ts) {
  return time.format(ts)
}

/**
 * What a stale row says: "stale since 14:03:07" (local time).
 * @param {number} since ms since the epoch: what the row shows is from then or before
 */
export function formatStale (since) {
  return `stale since ${formatTime(since)}`
}

/** @param {number | null} ms */
export function formatLatency (ms) {
  if (ms === null || !Number.isFinite(ms)) return '—'
  return ms >= 10_000 ? `${(ms / 1000).toFixed(0)} s` : `${Math.round(ms)} ms`
}

/**
 * Change and % change against the previous close.
 * @param {{last?: number, prevClose?: number}} q
 */
export function changeOf (q) {
  const last = q.last ?? NaN
  const prev = q.prevClose ?? NaN
  const change = last - prev
  return { change, pct: prev ? (change / prev) * 100 : NaN }
}

/**
 * How old delayed quotes are, as the page says it: "delayed 15 min".
 * Whole minutes or hours when the delay is one; seconds below a minute.
 * @param {number} ms the gateway's delay (an ack's `delayMs`)
 */
export function formatDelay (ms) {
  if (!Number.isFinite(ms) || ms <= 0) return 'delayed'
  if (ms % 3_600_000 === 0) return `delayed ${ms / 3_600_000} h`
  if (ms >= 60_000) return `delayed ${+(ms / 60_000).toFixed(1)} min`
  return `delayed ${+(ms / 1000).toFixed(1)} s`
}
