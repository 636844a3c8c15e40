// An operator's actions on connections, through a gateway's admin API
// (which reaches every gateway through Redis): `wsps conn` shows one
// connection or every connection of a user, `wsps disconnect` closes them
// (close code 4010, OPERATOR_DISCONNECT: the client does not come back on
// its own), `wsps drain` stops one gateway as a SIGTERM would.

import { ADMIN_OPTIONS, ADMIN_USAGE, adminApi } from './admin-api.js'
import { Exit, usage } from './errors.js'
import { emit } from './io.js'

const TARGET_OPTIONS = Object.freeze({
  ...ADMIN_OPTIONS,
  user: { type: /** @type {const} */ ('string') },
  node: { type: /** @type {const} */ ('string') },
  id: { type: /** @type {const} */ ('string') }
})

const TARGET_USAGE = `  --user SUB        every connection of the user (its token's sub), on every gateway
  --node NODE --id N one connection: its id on the gateway that holds it
                    (wsps conn --user shows both); --node alone with --user: that gateway only`

/**
 * @param {import('./verbs.js').Parsed} args
 * @param {string} verb
 * @returns {{node?: string, connection?: number, user?: string}}
 */
function targetOf ({ values, positionals }, verb) {
  if (positionals.length) throw usage(`${verb} takes options only (--user, or --node and --id)`)
  const target = {}
  if (values.user !== undefined) Object.assign(target, { user: String(values.user) })
  if (values.node !== undefined) Object.assign(target, { node: String(values.node) })
  if (values.id !== undefined) {
    if (!/^[1-9][0-9]{0,14}$/.test(String(values.id))) throw usage(`--id is a connection id (a positive integer), not ${JSON.stringify(values.id)}`)
    Object.assign(target, { connection: Number(values.id) })
  }
  if (values.user === undefined && values.id === undefined) throw usage(`${verb} needs --user, or --node and --id`)
  if (values.id !== undefined && values.node === undefined) throw usage('--id is per gateway: give --node too')
  return target
}

/**
 * Gateways that did not answer in time: late in the fleet view, so what they hold is not known.
 *
 * @param {import('./io.js').Io} io
 * @param {string[]} missing
 */
function warnMissing (io, missing) {
  if (missing.length) io.err.write(`not answered in time (late or gone; their connections are not counted): ${missing.join(', ')}\n`)
}

/** @type {import('./verbs.js').Verb} */
export const conn = {
  name: 'conn',
  summary: 'one connection, or every connection of a user: where, what it watches, how far behind',
  usage: `wsps conn (--user SUB | --node NODE --id N) [--url URL] [--token ...] [--json]

${TARGET_USAGE}

  Every gateway that holds a match answers (GET /admin/connections): its
  node, and per connection its id, user, IP, symbols with their mode and
  timeline, buffered bytes and how long it has been over the slow-reader
  mark. --json: the answer as one record.
  ${ADMIN_USAGE}`,
  options: TARGET_OPTIONS,
  /**
   * @param {import('./verbs.js').Parsed} args
   * @param {import('./io.js').Io} io
   */
  async run (args, io) {
    const target = targetOf(args, 'conn')
    const query = new URLSearchParams(Object.entries(target).map(([k, v]) => [k, String(v)]))
    const answer = await adminApi(args.values)(`/admin/connections?${query}`)
    if (args.values.json) {
      emit(io, answer)
      return Exit.OK
    }
    warnMissing(io, answer.missing)
    const rows = answer.answers.flatMap((/** @type {any} */ a) => (a.connections ?? []).map((/** @type {any} */ c) => ({ node: a.node, ...c })))
    if (!rows.length) emit(io, 'no such connection')
    for (const c of rows) {
      const symbols = c.symbols.map((/** @type {any} */ s) => `${s.symbol}${s.mode === 'merge' ? '' : ` (${s.mode})`}${s.delayed ? ' delayed' : ''}`).join(', ')
      emit(io, `${c.node} #${c.id}  user ${c.user ?? '-'}${c.class ? ` (${c.class})` : ''}  ${c.ip}  buffered ${c.bufferedBytes} B  resumed ${c.resumes.recovered} recovered, ${c.resumes.notRecovered} not${c.slowForMs ? `  SLOW for ${Math.round(c.slowForMs / 1000)} s, ${c.skipped} symbols skipped` : ''}`)
      emit(io, `  ${c.symbols.length} symbols${c.bars ? `, ${c.bars} bar series` : ''}: ${symbols || '-'}`)
    }
    return Exit.OK
  }
}

/** @type {import('./verbs.js').Verb} */
export const disconnect = {
  name: 'disconnect',
  summary: 'close a connection or every connection of a user (code 4010: no reconnect on its own)',
  usage: `wsps disconnect (--user SUB | --node NODE --id N) [--url URL] [--token ...] [--json]

${TARGET_USAGE}

  Closes what matches with close code 4010 (OPERATOR_DISCONNECT,
  docs/protocol.md): the SDKs do not reconnect on their own. Prints how
  many were closed, per gateway (POST /admin/disconnect).
  ${ADMIN_USAGE}`,
  options: TARGET_OPTIONS,
  /**
   * @param {import('./verbs.js').Parsed} args
   * @param {import('./io.js').Io} io
   */
  async run (args, io) {
    const answer = await adminApi(args.values)('/admin/disconnect', { method: 'POST', body: targetOf(args, 'disconnect') })
    if (args.values.json) {
      emit(io, answer)
      return Exit.OK
    }
    warnMissing(io, answer.missing)
    const where = answer.answers.filter((/** @type {any} */ a) => a.matched).map((/** @type {any} */ a) => `${a.node}: ${a.matched}`)
    emit(io, `disconnected ${answer.matched}${where.length ? ` (${where.join(', ')})` : ''}`)
    return Exit.OK
  }
}

/** @type {import('./verbs.js').Verb} */
export const drain = {
  name: 'drain',
  summary: 'stop one gateway as SIGTERM would: not ready, clients moved off over its drain window',
  usage: `wsps drain NODE [--url URL] [--token ...] [--json]

  NODE as \`wsps top\` shows it. The gateway turns not ready, closes its
  clients with 1012 over WSPS_DRAIN_MS (they reconnect elsewhere and
  resume) and exits; its orchestrator starts another (POST /admin/drain).
  With WSPS_WORKERS each worker is a node of its own: draining one
  restarts that worker.
  ${ADMIN_USAGE}`,
  options: ADMIN_OPTIONS,
  /**
   * @param {import('./verbs.js').Parsed} args
   * @param {import('./io.js').Io} io
   */
  async run ({ values, positionals }, io) {
    if (positionals.length !== 1) throw usage('drain takes one NODE (wsps top lists them)')
    const answer = await adminApi(values)('/admin/drain', { method: 'POST', body: { node: positionals[0] } })
    if (values.json) {
      emit(io, answer)
      return Exit.OK
    }
    if (answer.matched) emit(io, `${positionals[0]}: draining`)
    else emit(io, `${positionals[0]}: did not answer in time (late in the fleet view?); it drains when it reads the command`)
    return Exit.OK
  }
}
