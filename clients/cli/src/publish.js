// `wsps publish`: quotes from a file or stdin (JSON, NDJSON or CSV with a
// header row) to a fetcher's publish API (docs/feeding.md). Every row is
// checked first, by the API's own rules (validQuote), so a bad row sends
// nothing; then batches go out in order, each under an Idempotency-Key so
// that a retry after 503 or a timeout never publishes a batch twice, and a
// 429 or 409 is waited out as Retry-After says.

import { randomUUID } from 'node:crypto'
import { PUBLISH_PATH, validQuote } from '@wsps/quote-fetcher/publish-api'
import { CliError, CliErrorCode, Exit, usage } from './errors.js'
import { emit, progress, progressDone, readAll, readFile } from './io.js'

/**
 * @typedef {import('./io.js').Io} Io
 * @typedef {import('./verbs.js').Parsed} Parsed
 * @typedef {{quote: Record<string, unknown>, row: string}} Row a quote and where it was read (for messages)
 */

/** Answers worth a retry of the same batch (same key): nothing of it was published twice. */
const RETRY = new Set([409, 429, 502, 503, 504])
const TIMEOUT_MS = 10_000

/** @type {import('./verbs.js').Verb} */
export const publish = {
  name: 'publish',
  summary: 'send quotes (JSON, NDJSON or CSV) to the publish API',
  usage: `wsps publish [--url URL] [--token TOKEN | --token-file FILE] [--format auto|json|ndjson|csv]
             [--batch N] [--tries N] [FILE|-]

  Publishes the quotes in FILE (default: stdin) through POST ${PUBLISH_PATH} of a
  fetcher (default http://127.0.0.1:9091, \`make up\`'s; token from
  .run/publish-token when neither --token nor --token-file is given).
  Formats: {"quotes":[...]} or an array (json), one quote a line (ndjson), or
  CSV whose header names the fields (symbol,bid,ask,last,...; empty cells are
  left out). Every row is checked before anything is sent (BAD_INPUT names
  the row). Batches of --batch quotes (default 500), each tried --tries times
  (default 8) on 409, 429, 503 and no answer, under its Idempotency-Key. Prints what was accepted and refused
  (old, pushed: docs/feeding.md); --json prints it as one record.`,
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:9091' },
    token: { type: 'string' },
    'token-file': { type: 'string' },
    format: { type: 'string', default: 'auto' },
    batch: { type: 'string', default: '500' },
    tries: { type: 'string', default: '8' }
  },
  /**
   * @param {Parsed} args
   * @param {Io} io
   */
  async run ({ values, positionals }, io) {
    if (positionals.length > 1) throw usage('give one file (or - or nothing for stdin)')
    const batch = Number(values.batch)
    if (!Number.isInteger(batch) || batch < 1) throw usage(`--batch is a whole number above 0, got ${values.batch}`)
    const tries = Number(values.tries)
    if (!Number.isInteger(tries) || tries < 1) throw usage(`--tries is a whole number above 0, got ${values.tries}`)
    const format = String(values.format)
    if (!['auto', 'json', 'ndjson', 'csv'].includes(format)) throw usage(`--format is auto, json, ndjson or csv, got ${format}`)
    if (values.token !== undefined && values['token-file'] !== undefined) throw usage('give --token or --token-file, not both')
    const token = values.token !== undefined ? String(values.token) : readFile(String(values['token-file'] ?? '.run/publish-token')).trim()
    const file = positionals[0] ?? '-'
    const text = file === '-' ? await readAll(io.in) : readFile(file)

    const rows = parseRows(text, format, file === '-' ? 'stdin' : file)
    const now = Date.now()
    for (const { quote, row } of rows) {
      try {
        validQuote(quote, 0, now)
      } catch (err) {
        throw new CliError(CliErrorCode.BAD_INPUT, `${row}: ${/** @type {Error} */ (err).message.replace(/^quote 0: /, '')}; nothing was sent`)
      }
    }
    const url = new URL(PUBLISH_PATH, String(values.url)).toString()
    const runId = randomUUID()
    const total = { quotes: rows.length, accepted: 0, refused: /** @type {Record<string, number>} */ ({}), requests: 0 }
    for (let i = 0; i < rows.length; i += batch) {
      progress(io, `published ${total.accepted} of ${rows.length} quotes`)
      const part = rows.slice(i, i + batch)
      const answer = await send(url, token, `${runId}-${i}`, part, tries, io.signal)
      total.requests++
      total.accepted += answer.accepted ?? 0
      for (const [why, n] of Object.entries(answer.refused ?? {})) total.refused[why] = (total.refused[why] ?? 0) + n
    }
    progressDone(io)
    if (values.json) {
      emit(io, { ok: true, ...total })
    } else {
      const refused = Object.entries(total.refused).map(([why, n]) => `${n} ${why}`).join(', ')
      emit(io, `published ${total.accepted} of ${total.quotes} quotes in ${total.requests} request${total.requests === 1 ? '' : 's'}${refused ? `; refused: ${refused}` : ''}`)
    }
    return Exit.OK
  }
}

/**
 * One batch, retried under its key while the answer says to.
 *
 * @param {string} url
 * @param {string} token
 * @param {string} key
 * @param {Row[]} part
 * @param {number} tries
 * @param {AbortSignal} signal
 * @returns {Promise<{accepted?: number, refused?: Record<string, number>}>}
 */
async function send (url, token, key, part, tries, signal) {
  const body = JSON.stringify({ quotes: part.map((r) => r.quote) })
  for (let attempt = 1; ; attempt++) {
    let res
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
        body,
        signal: AbortSignal.any([signal, AbortSignal.timeout(TIMEOUT_MS)])
      })
    } catch (err) {
      if (signal.aborted) throw new CliError(CliErrorCode.UNREACHABLE, 'stopped')
      if (attempt >= tries) throw new CliError(CliErrorCode.UNREACHABLE, `${url}: ${/** @type {Error} */ (err).cause ?? /** @type {Error} */ (err).message}`)
      await wait(backoff(attempt), signal)
      continue
    }
    const answer = await res.json().catch(() => ({}))
    if (res.ok) return answer
    if (RETRY.has(res.status) && attempt < tries) {
      const after = Number(res.headers.get('retry-after'))
      await wait(Number.isFinite(after) && after > 0 ? after * 1000 : backoff(attempt), signal)
      continue
    }
    const where = answer.code === 'BAD_QUOTE' && Number.isInteger(answer.index) ? ` (${part[answer.index]?.row})` : ''
    throw new CliError(CliErrorCode.REFUSED, `${res.status} ${answer.code ?? ''}: ${answer.message ?? res.statusText}${where}`, { status: res.status, answer })
  }
}

/** @param {number} attempt */
function backoff (attempt) {
  return Math.min(5000, 100 * 2 ** attempt)
}

/**
 * @param {number} ms
 * @param {AbortSignal} signal
 */
function wait (ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => { clearTimeout(t); reject(new CliError(CliErrorCode.UNREACHABLE, 'stopped')) }, { once: true })
  })
}

/**
 * The quotes of the input, each with where it was read.
 *
 * @param {string} text
 * @param {string} format auto, json, ndjson or csv
 * @param {string} source for messages
 * @returns {Row[]}
 */
export function parseRows (text, format, source) {
  const start = text.trimStart()[0]
  if (format === 'csv' || (format === 'auto' && start !== '[' && start !== '{')) return parseCsv(text, source)
  if (format !== 'ndjson') {
    // One JSON document, parsed once: an array of quotes or {"quotes":[...]};
    // in auto mode anything else (one quote alone, several lines) is NDJSON.
    let doc
    try {
      doc = JSON.parse(text)
    } catch (err) {
      if (format === 'json') throw new CliError(CliErrorCode.BAD_INPUT, `${source}: ${/** @type {Error} */ (err).message}`)
    }
    const quotes = Array.isArray(doc) ? doc : doc?.quotes
    if (Array.isArray(quotes)) return quotes.map((quote, i) => ({ quote, row: `${source}: quote ${i}` }))
    if (format === 'json') throw new CliError(CliErrorCode.BAD_INPUT, `${source}: must be {"quotes":[...]} or an array of quotes`)
  }
  /** @type {Row[]} */
  const rows = []
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === '') continue
    const row = `${source}:${i + 1}`
    try {
      rows.push({ quote: JSON.parse(lines[i]), row })
    } catch (err) {
      throw new CliError(CliErrorCode.BAD_INPUT, `${row}: not JSON (${/** @type {Error} */ (err).message})`)
    }
  }
  return rows
}

/**
 * CSV with a header row of field names. Quoted cells ("a,b", "" for a
 * quote) are understood; numbers stay numbers, the symbol a string.
 *
 * @param {string} text
 * @param {string} source
 * @returns {Row[]}
 */
function parseCsv (text, source) {
  const lines = text.split(/\r?\n/)
  const header = lines.findIndex((l) => l.trim() !== '')
  if (header === -1) return []
  const names = cells(lines[header]).map((n) => n.trim())
  /** @type {Row[]} */
  const rows = []
  for (let i = header + 1; i < lines.length; i++) {
    if (lines[i].trim() === '') continue
    const row = `${source}:${i + 1}`
    const values = cells(lines[i])
    if (values.length !== names.length) throw new CliError(CliErrorCode.BAD_INPUT, `${row}: ${values.length} cells, the header has ${names.length}`)
    /** @type {Record<string, unknown>} */
    const quote = {}
    names.forEach((name, j) => {
      const v = values[j].trim()
      if (v === '') return
      quote[name] = name === 'symbol' ? v : Number(v)
    })
    rows.push({ quote, row })
  }
  return rows
}

/** @param {string} line */
function cells (line) {
  /** @type {string[]} */
  const out = []
  let cur = ''
  let quoted = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') { cur += '"'; i++ } else if (c === '"') quoted = false
      else cur += c
    } else if (c === '"') {
      quoted = true
    } else if (c === ',') {
      out.push(cur)
      cur = ''
    } else {
      cur += c
    }
  }
  out.push(cur)
  return out
}
