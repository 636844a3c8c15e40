// `wsps tail`: live quotes (and bars), or order books (--book,
// book-view.js), of some symbols through the JS client (@wsps/client), so
// it resumes after a reconnect, marks stale symbols and follows token
// refreshes as any application does. On a terminal a table redrawn in
// place; piped (or --json) one JSON record a line.

import { AUTH_CLOSE_CODES, BAR_INTERVALS, BOOK_DEPTHS, DeliveryMode, EPOCH_PATTERN, WspsClient } from '@wsps/client'
import { BookLines, Ladders } from './book-view.js'
import { CliError, CliErrorCode, Exit, usage } from './errors.js'
import { emit, readFile } from './io.js'
import { Screen } from './screen.js'

/**
 * @typedef {import('./io.js').Io} Io
 * @typedef {import('./verbs.js').Parsed} Parsed
 * @typedef {import('@wsps/client').Quote} Quote
 */

/** A terminal is redrawn at most this often. */

/** @type {import('./verbs.js').Verb} */
export const tail = {
  name: 'tail',
  summary: 'live quotes (and bars, or order books) in the terminal, JSON lines when piped',
  usage: `wsps tail [--url URL]... [--token JWT | --token-file FILE] [--mode merge|distinct]
          [--since SYMBOL:SEQ:EPOCH[,...]]... [--max-rate N] [--bars 1s|1m|5m]
          [--book 10|25|100|500] [--count N] [--wait SECONDS] [--json] SYMBOL...

  Streams the SYMBOLs from a gateway (default ws://127.0.0.1:8080/ws, what
  \`make up\` serves; several --url are tried in turn on reconnects). On a
  terminal: a table of the latest quote per symbol, stale ones marked with
  the time they stopped. Piped or --json: one record a line, {"type":
  "quote"|"bar"|"bars"|"stale"|"fresh"|"recovery"|"status"|"error", ...}.
  --since (with --mode distinct) starts a symbol at a cursor, e.g. one a
  client logged (seq and epoch of a quote record): the quote at SEQ first,
  then every tick after it from the gateway's history, then live ones; a
  recovery record says recovered:false when history no longer holds them
  (the symbol then starts from its latest quote). --book N shows the order
  books of the SYMBOLs at depth N instead of their quotes: on a terminal
  the top levels, bids and asks side by side, updated in place; piped one
  {"type":"book", symbol, seq, epoch, sync, snapshot, depth, bids, asks}
  record per change (the whole window held); it takes no --mode, --since,
  --max-rate or --bars. --count N stops after N quotes (or book records);
  --wait (default 10) is how long the first connection may take
  (then UNREACHABLE). Ctrl-C stops.`,
  options: {
    url: { type: 'string', multiple: true },
    token: { type: 'string' },
    'token-file': { type: 'string' },
    mode: { type: 'string' },
    since: { type: 'string', multiple: true },
    'max-rate': { type: 'string' },
    bars: { type: 'string' },
    book: { type: 'string' },
    count: { type: 'string', default: '0' },
    wait: { type: 'string', default: '10' }
  },
  /**
   * @param {Parsed} args
   * @param {Io} io
   */
  async run ({ values, positionals }, io) {
    const symbols = positionals.map((s) => s.toUpperCase())
    if (symbols.length === 0) throw usage('name at least one symbol')
    const depth = bookDepth(values)
    const mode = String(values.mode ?? DeliveryMode.MERGE)
    if (mode !== DeliveryMode.MERGE && mode !== DeliveryMode.DISTINCT) throw usage(`--mode is merge or distinct, got ${mode}`)
    const maxRate = values['max-rate'] === undefined ? undefined : Number(values['max-rate'])
    if (maxRate !== undefined && !(maxRate > 0)) throw usage(`--max-rate is a number of updates per second, got ${values['max-rate']}`)
    const interval = values.bars === undefined ? null : String(values.bars)
    if (interval !== null && !Object.hasOwn(BAR_INTERVALS, interval)) throw usage(`--bars is one of ${Object.keys(BAR_INTERVALS).join(', ')}, got ${interval}`)
    const since = cursors(/** @type {string[] | undefined} */ (values.since) ?? [], symbols)
    if (Object.keys(since).length && mode !== DeliveryMode.DISTINCT) throw usage('--since replays every tick: it needs --mode distinct')
    const count = wholeNumber(values.count, '--count')
    const waitS = wholeNumber(values.wait, '--wait')
    if (values.token !== undefined && values['token-file'] !== undefined) throw usage('give --token or --token-file, not both')
    const tokenFile = values['token-file']
    const token = values.token !== undefined ? String(values.token) : tokenFile !== undefined ? readFile(String(tokenFile)).trim() : null

    const json = Boolean(values.json) || !io.out.isTTY
    const client = new WspsClient({
      url: /** @type {string[] | undefined} */ (values.url) ?? 'ws://127.0.0.1:8080/ws',
      ...(token === null ? {} : { getToken: async () => token })
    })
    const quoteView = depth !== null ? null : json ? new JsonLines(io) : new Table(io, symbols)
    const bookView = depth === null ? null : json ? new BookLines(io) : new Ladders(io, symbols)
    const view = /** @type {NonNullable<typeof quoteView | typeof bookView>} */ (quoteView ?? bookView)
    let quotes = 0
    let live = false
    const done = new AbortController()
    /** @type {CliError | null} */
    let failure = null
    const fail = (/** @type {CliError} */ err) => { failure ??= err; done.abort() }

    // Nothing after the stop is shown: the close's own status and stale notice are ours, not news.
    const offs = [client.on('status', (s) => {
      if (s.state === 'live') live = true
      if (s.state === 'offline' && s.closeCode !== 1000) fail(new CliError(CliErrorCode.REFUSED, `the gateway closed the connection with ${s.closeCode} ${s.closeReason} and asked not to reconnect`))
      // The client asks its token source again after an auth close; ours has one token only.
      if (s.closeCode !== null && /** @type {readonly number[]} */ (AUTH_CLOSE_CODES).includes(s.closeCode)) fail(new CliError(CliErrorCode.REFUSED, `the gateway closed the connection with ${s.closeCode} ${s.closeReason}: the token was refused`))
      view.status(s)
    }),
    client.on('book', (e) => {
      bookView?.book(e)
      if (count && ++quotes >= count) done.abort()
    })]
    if (quoteView !== null) {
      offs.push(client.on('quote', (e) => {
        quoteView.quote(e)
        if (count && ++quotes >= count) done.abort()
      }),
      client.on('rejected', ({ symbols: refused, error }) => {
        quoteView.error({ ...error, symbols: error.symbols ?? refused })
        if (client.symbols.length === 0 && interval === null) fail(new CliError(CliErrorCode.REFUSED, `every symbol was refused: ${error.code} ${error.message}`, { error }))
      }),
      client.on('stale', (e) => quoteView.marks('stale', e.symbols, e.since)),
      client.on('fresh', (e) => quoteView.marks('fresh', e.symbols, null)),
      client.on('recovery', (e) => quoteView.record({ type: 'recovery', ...e })),
      client.on('bars', (e) => quoteView.record({ type: 'bars', symbol: e.symbol, interval: e.interval, bars: e.series.bars, current: e.series.current, complete: e.series.complete, delayed: e.delayed })),
      client.on('bar', (e) => quoteView.record({ type: 'bar', symbol: e.symbol, interval: e.interval, bar: e.bar, closed: e.closed, delayed: e.delayed })))
    }

    const stop = () => done.abort()
    io.signal.addEventListener('abort', stop)
    const waiting = waitS === 0 ? null : setTimeout(() => { if (!live) fail(new CliError(CliErrorCode.UNREACHABLE, `no connection to ${client.status.url} within ${waitS} s`)) }, waitS * 1000)
    client.connect()
    const delivery = mode === DeliveryMode.DISTINCT ? { mode } : maxRate !== undefined ? { maxRate } : undefined
    if (depth !== null) {
      client.subscribeBook(symbols, depth).then(({ symbols: held, noBook }) => {
        if (noBook.length) view.error({ code: 'NO_BOOK', message: 'the gateway has no book of these', symbols: noBook })
        if (held.length === 0) fail(new CliError(CliErrorCode.REFUSED, `no book of ${noBook.join(', ')}`))
      }, (/** @type {Error & import('@wsps/client').ErrorInfo} */ err) => {
        fail(new CliError(CliErrorCode.REFUSED, `the books were refused: ${err.code} ${err.message}`, { error: { code: err.code, message: err.message } }))
      })
    } else {
      client.subscribe(symbols, delivery, { since })
      if (interval !== null) client.subscribeBars(symbols, interval)
    }
    if (!done.signal.aborted) await new Promise((resolve) => done.signal.addEventListener('abort', resolve, { once: true }))
    if (waiting !== null) clearTimeout(waiting)
    io.signal.removeEventListener('abort', stop)
    for (const off of offs) off()
    client.close()
    view.end()
    if (failure !== null) throw failure
    return Exit.OK
  }
}

/**
 * `--book N`: the depth, one of BOOK_DEPTHS; books have no delivery
 * modes, cursors nor bars (the gateway says BAD_BOOK to them too).
 *
 * @param {Parsed['values']} values
 * @returns {number | null} null: no --book
 */
function bookDepth (values) {
  if (values.book === undefined) return null
  const depth = Number(values.book)
  if (!BOOK_DEPTHS.includes(depth)) throw usage(`--book is one of ${BOOK_DEPTHS.join(', ')}, got ${values.book}`)
  const others = ['mode', 'since', 'max-rate', 'bars'].filter((k) => values[k] !== undefined)
  if (others.length) throw usage(`--book shows order books: it takes no ${others.map((k) => `--${k}`).join(', ')}`)
  return depth
}

/**
 * @param {unknown} value
 * @param {string} name
 */
function wholeNumber (value, name) {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) throw usage(`${name} is a whole number, got ${value}`)
  return n
}

/**
 * `--since` values: SYMBOL:SEQ:EPOCH, comma-separated, as in an SSE URL
 * (docs/protocol.md), each of a symbol tailed.
 *
 * @param {string[]} values
 * @param {string[]} symbols
 * @returns {Record<string, {seq: number, epoch: string}>}
 */
function cursors (values, symbols) {
  /** @type {Record<string, {seq: number, epoch: string}>} */
  const out = {}
  for (const part of values.flatMap((v) => v.split(',')).filter(Boolean)) {
    const [name = '', seqText = '', epoch = '', extra] = part.split(':')
    const symbol = name.toUpperCase()
    const seq = Number(seqText)
    if (extra !== undefined || !/^\d+$/.test(seqText) || !Number.isSafeInteger(seq) || !EPOCH_PATTERN.test(epoch)) throw usage(`--since is SYMBOL:SEQ:EPOCH (e.g. AAPL:1042:hohrttbiv1), got ${part}`)
    if (!symbols.includes(symbol)) throw usage(`--since names ${symbol}, which is not tailed`)
    if (Object.hasOwn(out, symbol)) throw usage(`--since names ${symbol} twice`)
    out[symbol] = { seq, epoch }
  }
  return out
}

/** One record a line, for scripts. */
class JsonLines {
  /** @param {Io} io */
  constructor (io) { this.io = io }
  /** @param {import('@wsps/client').QuoteEvent} e */
  quote (e) { this.record({ type: 'quote', symbol: e.symbol, snapshot: e.snapshot, delayed: e.delayed, quote: e.quote }) }
  /** @param {import('@wsps/client').StatusInfo} s */
  status (s) { this.record({ type: 'status', state: s.state, url: s.url, transport: s.transport, node: s.node, closeCode: s.closeCode }) }
  /** @param {import('@wsps/client').ErrorInfo} e */
  error (e) { this.record({ type: 'error', ...e }) }
  /**
   * @param {'stale' | 'fresh'} type
   * @param {string[]} symbols
   * @param {number | null} since
   */
  marks (type, symbols, since) { this.record(since === null ? { type, symbols } : { type, symbols, since }) }
  /** @param {Record<string, unknown>} r */
  record (r) { emit(this.io, r) }
  end () {}
}

/** The latest quote per symbol, redrawn in place, for people. */
class Table {
  #symbols
  /** @type {Map<string, Quote>} */
  #quotes = new Map()
  /** @type {Map<string, number>} stale symbols: since when */
  #stale = new Map()
  #delayed = new Set()
  #screen

  /**
   * @param {Io} io
   * @param {string[]} symbols
   */
  constructor (io, symbols) {
    this.#symbols = symbols
    this.#screen = new Screen(io, () => [...this.#rows(), ''])
  }

  /** @param {import('@wsps/client').QuoteEvent} e */
  quote (e) {
    this.#quotes.set(e.symbol, e.quote)
    if (e.delayed) this.#delayed.add(e.symbol)
    this.#screen.soon()
  }

  /** @param {import('@wsps/client').StatusInfo} s */
  status (s) {
    this.#screen.status(`${s.state}${s.transport ? ` over ${s.transport}` : ''}${s.url ? ` to ${s.url}` : ''}${s.node ? ` (${s.node})` : ''}`)
  }

  /** @param {import('@wsps/client').ErrorInfo} e */
  error (e) { this.#note(`${e.code}: ${e.message}${e.symbols ? ` (${e.symbols.join(', ')})` : ''}`) }

  /**
   * @param {'stale' | 'fresh'} type
   * @param {string[]} symbols
   * @param {number | null} since
   */
  marks (type, symbols, since) {
    for (const s of symbols) {
      if (type === 'stale') this.#stale.set(s, since ?? Date.now())
      else this.#stale.delete(s)
    }
    this.#screen.soon()
  }

  /** @param {Record<string, unknown>} r */
  record (r) {
    if (r.type === 'recovery') this.#note(`${r.symbol}: ${r.recovered ? 'resumed, nothing lost' : 'resumed with a fresh snapshot (ticks were lost)'}`)
    else if (r.type === 'bar' && r.closed) this.#note(`${r.symbol} ${r.interval} bar closed: ${JSON.stringify(r.bar)}`)
  }

  end () { this.#screen.end() }

  /** @param {string} line */
  #note (line) { this.#screen.note(`${clock(Date.now())} ${line}`) }

  /** @returns {string[]} the table, a row per symbol */
  #rows () {
    const rows = [['SYMBOL', 'LAST', 'BID', 'ASK', 'CHG%', 'SEQ', 'TIME', 'STATE']]
    for (const s of this.#symbols) {
      const q = this.#quotes.get(s)
      const stale = this.#stale.get(s)
      const state = stale !== undefined ? `STALE since ${clock(stale)}` : q === undefined ? 'waiting' : this.#delayed.has(s) ? 'delayed' : 'live'
      const chg = q?.last !== undefined && q.prevClose ? `${(((q.last - q.prevClose) / q.prevClose) * 100).toFixed(2)}` : ''
      rows.push([s, fmt(q?.last), fmt(q?.bid), fmt(q?.ask), chg, q ? String(q.seq) : '', q ? clock(q.ts) : '', state])
    }
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
    return rows.map((r) => r.map((c, i) => (i === 0 || i === 7 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd())
  }
}

/** @param {number | undefined} n */
function fmt (n) {
  return n === undefined ? '' : String(n)
}

/**
 * @param {number} ms since the epoch
 * @returns {string} local time of day, hh:mm:ss
 */
function clock (ms) {
  return new Date(ms).toTimeString().slice(0, 8)
}
