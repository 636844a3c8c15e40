// `wsps top`: the fleet as every gateway and fetcher last wrote itself into
// Redis, read through a gateway's admin API (GET /admin/fleet): who is
// ready, who is slow or busy, which symbols are stale where, which are
// watched most. A record that stopped being rewritten is shown LATE: that
// process cannot reach Redis, or is paused, which is news in itself.

import { ADMIN_OPTIONS, ADMIN_USAGE, adminApi } from './admin-api.js'
import { Exit, usage } from './errors.js'
import { emit } from './io.js'

/**
 * @typedef {import('./io.js').Io} Io
 * @typedef {import('./verbs.js').Parsed} Parsed
 * @typedef {Record<string, any>} Entry a process's record (@wsps/shared/fleet-status FleetEntry)
 */

const REFRESH_MS = 2000

/** @type {import('./verbs.js').Verb} */
export const top = {
  name: 'top',
  summary: 'the fleet: every gateway and fetcher, stale and most watched symbols',
  usage: `wsps top [--url URL] [--token TOKEN | --token-file FILE] [--json]

  Reads GET /admin/fleet. On a terminal a view redrawn every 2 s until
  Ctrl-C; piped or --json, the fleet once as one JSON record
  ({"at", "processes": [...]}).
  ${ADMIN_USAGE}`,
  options: ADMIN_OPTIONS,
  /**
   * @param {Parsed} args
   * @param {Io} io
   */
  async run ({ values, positionals }, io) {
    if (positionals.length) throw usage('top takes no arguments')
    const api = adminApi(values)
    const fetchFleet = () => /** @type {Promise<{at: number, processes: Entry[]}>} */ (api('/admin/fleet'))
    if (values.json || !io.out.isTTY) {
      emit(io, await fetchFleet())
      return Exit.OK
    }
    let drawn = 0
    while (!io.signal.aborted) {
      const lines = render(await fetchFleet(), Date.now())
      io.out.write((drawn ? `\x1b[${drawn}F` : '') + lines.map((l) => `\x1b[2K${l}\n`).join('') + '\x1b[J')
      drawn = lines.length
      await new Promise((resolve) => {
        const t = setTimeout(resolve, REFRESH_MS)
        io.signal.addEventListener('abort', () => { clearTimeout(t); resolve(undefined) }, { once: true })
      })
    }
    return Exit.OK
  }
}

/**
 * The fleet as lines of text.
 *
 * @param {{at: number, processes: Entry[]}} fleet
 * @param {number} now
 * @returns {string[]}
 */
export function render ({ processes }, now) {
  const gateways = processes.filter((p) => p.role === 'gateway')
  const fetchers = processes.filter((p) => p.role === 'fetcher')
  const age = (/** @type {Entry} */ p) => `${p.late ? 'LATE ' : ''}${Math.round(p.ageMs / 1000)}s`
  const yes = (/** @type {boolean} */ b) => (b ? 'yes' : 'NO')
  const lines = table([
    ['GATEWAY', 'READY', 'CONN', 'CHANNELS', 'SLOW', 'QUOTES/S', 'LOOP p99', 'STALE', 'RSS', 'SEEN'],
    ...gateways.map((g) => [g.node, g.draining ? 'draining' : yes(g.ready), String(g.connections), String(g.channels), String(g.slowClients), String(g.quotesInPerS), `${g.loopDelayP99Ms} ms`, String(g.staleCount), mib(g.rssBytes), age(g)])
  ])
  lines.push('', ...table([
    ['FETCHER', 'READY', 'PROVIDER', 'PUBLISHED/S', 'REFUSED/S', 'LOOP p99', 'RSS', 'SEEN'],
    ...fetchers.map((f) => [f.node, yes(f.ready), String(f.provider), String(f.publishedPerS), String(f.refusedPerS), `${f.loopDelayP99Ms} ms`, mib(f.rssBytes), age(f)])
  ]))
  const stale = gateways.flatMap((g) => (g.stale ?? []).map((/** @type {{symbol: string, since: number}} */ s) => `${s.symbol} on ${g.node} for ${Math.round((now - s.since) / 1000)}s`))
  lines.push('', `STALE: ${stale.length ? stale.join(', ') : 'none'}`)
  /** @type {Map<string, number>} */
  const watched = new Map()
  for (const g of gateways) for (const t of g.top ?? []) watched.set(t.symbol, (watched.get(t.symbol) ?? 0) + t.subscribers)
  const most = [...watched].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([s, n]) => `${s} ${n}`)
  lines.push(`MOST WATCHED: ${most.length ? most.join(', ') : 'none'}`)
  return lines
}

/** @param {string[][]} rows */
function table (rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd())
}

/** @param {number} bytes */
function mib (bytes) {
  return `${Math.round(bytes / 2 ** 20)} MiB`
}
