// `wsps usage --month YYYY-MM` prints the monthly usage report of the
// gateways' usage records (GET /admin/usage; docs/operations.md, "Usage
// report"): per user, venue and service level, and the distinct users an
// exchange bills per venue, level and class. --csv writes the rows as CSV.

import { USAGE_COLUMNS } from '@wsps/shared/usage-records'
import { ADMIN_OPTIONS, ADMIN_USAGE, adminApi } from './admin-api.js'
import { Exit, usage as usageError } from './errors.js'
import { emit } from './io.js'

/** @param {unknown} v */
const csvCell = (v) => {
  const text = Array.isArray(v) ? v.join(' ') : String(v)
  return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/** @type {import('./verbs.js').Verb} */
export const usage = {
  name: 'usage',
  summary: 'the monthly usage report: users per venue and service level, for the exchanges',
  usage: `wsps usage --month YYYY-MM [--csv] [--url URL] [--token ...] [--json]

  The gateways' usage records (WSPS_USAGE_RECORDS) of a UTC month: per user,
  venue and level (realtime or delayed) its class, sessions, first and last
  access and access time in the month, then per venue, level and class the
  distinct users. --csv: the rows as CSV (${USAGE_COLUMNS.join(',')});
  --json: the report as one record.
  ${ADMIN_USAGE}`,
  options: {
    month: { type: 'string' },
    csv: { type: 'boolean', default: false },
    ...ADMIN_OPTIONS
  },
  /**
   * @param {import('./verbs.js').Parsed} args
   * @param {import('./io.js').Io} io
   */
  async run ({ values, positionals }, io) {
    if (positionals.length) throw usageError('usage takes options only (--month YYYY-MM)')
    const month = values.month
    if (typeof month !== 'string' || !/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) throw usageError('give --month YYYY-MM (a UTC month)')
    const report = await adminApi(values)(`/admin/usage?month=${month}`)
    if (values.json) {
      emit(io, report)
      return Exit.OK
    }
    if (values.csv) {
      emit(io, USAGE_COLUMNS.join(','))
      for (const row of report.rows) emit(io, USAGE_COLUMNS.map((c) => csvCell(row[c])).join(','))
      return Exit.OK
    }
    emit(io, `usage ${report.month}: ${report.rows.length} rows`)
    for (const r of report.rows) {
      emit(io, `  ${r.venue} ${r.level.padEnd(8)} ${r.user} (${r.class})  ${r.sessions} sessions  ${r.firstAccess} .. ${r.lastAccess}  ${r.accessSeconds} s`)
    }
    emit(io, 'users per venue, level and class:')
    for (const t of report.totals) emit(io, `  ${t.venue} ${t.level.padEnd(8)} ${t.class.padEnd(6)} ${t.users}`)
    return Exit.OK
  }
}
