// Server side of wire protocol v1: parsing and validating client frames, and
// encoding the server's frames. Quote frames are assembled from
// pre-serialized parts (delta.js's Update, outbox.js).

import { BOOK_DEPTHS } from '@wsps/protocol/book'
import { BAR_INTERVALS, ClientOp, DeliveryMode, EPOCH_PATTERN, ErrorCode, Limits, PROTOCOL_VERSION, SYMBOL_PATTERN, ServerOp } from '@wsps/protocol'
import { decodeClientFrame, quotesLength, writeQuotes } from '@wsps/protocol/proto-codec'
import { TextFrame } from './text-frame.js'

/** Symbols accepted in one sub/unsub request. */
const { MAX_SYMBOLS_PER_REQUEST, MIN_RATE, MAX_RATE, MAX_BACKFILL, DEFAULT_BACKFILL } = Limits
/** @type {readonly string[]} */
const INTERVALS = Object.keys(BAR_INTERVALS)
/** @type {readonly string[]} */
const MODES = Object.values(DeliveryMode)
const MAX_ID_LENGTH = 64
/** A JWT longer than this is not one we issue; refuse it before verifying. */
const MAX_TOKEN_LENGTH = 8192

/**
 * @typedef {{seq: number, epoch: string, held?: false}} Cursor where a client's held quote of a symbol
 *   stands; held false: the client holds the cursor only, not the quote at it
 * @typedef {{op: 'sub' | 'unsub', symbols: string[], id?: number | string, mode?: 'merge' | 'distinct', maxRate?: number, since?: Map<string, Cursor>, delayed?: boolean, bars?: string, backfill?: number, book?: number}} SymbolsRequest
 *   mode and maxRate: a sub's delivery, when it named one; since: the
 *   symbols it resumes (docs/protocol.md, Recovery); delayed: true asks
 *   for the delayed timeline, false for real-time only (DELAYED_ONLY where
 *   the token grants delayed only); absent: as the token grants. bars: the
 *   request is about bars of this interval (a key of BAR_INTERVALS), not
 *   quotes; backfill: a bars sub's closed bars to send first; book: the
 *   request is about order books at this depth (one of BOOK_DEPTHS)
 * @typedef {{op: 'ping', id?: number | string}} PingRequest
 * @typedef {{op: 'auth', token: string, id?: number | string}} AuthRequest
 * @typedef {SymbolsRequest | PingRequest | AuthRequest} Request
 * @typedef {{code: string, message: string, id?: number | string, symbols?: string[], bars?: string, book?: number}} ProtocolError
 *   bars: a GET /sse refused for its bars names their interval (docs/protocol.md)
 * @typedef {{ok: true, request: Request} | {ok: false, error: ProtocolError}} ParseResult
 */

/**
 * @param {string} code
 * @param {string} message
 * @param {unknown} [id]
 * @param {string[]} [symbols]
 * @returns {{ok: false, error: ProtocolError}}
 */
function fail (code, message, id, symbols) {
  /** @type {ProtocolError} */
  const error = { code, message }
  if (validId(id)) error.id = /** @type {number | string} */ (id)
  if (symbols) error.symbols = symbols
  return { ok: false, error }
}

/** @param {unknown} id */
function validId (id) {
  return (typeof id === 'number' && Number.isFinite(id)) || (typeof id === 'string' && id.length <= MAX_ID_LENGTH)
}

/**
 * Parses one client frame: a text message is JSON, a binary one (on a
 * connection of the `wsps.v1.proto` subprotocol, `binary`) a Protobuf
 * ClientFrame, read into the object its JSON would be and validated by the
 * same rules, so both encodings get the same codes. Bytes that are no
 * ClientFrame, or a binary message on a JSON connection, are BAD_FRAME.
 * A `wsps.v1.proto` connection may still send JSON text: a client sends it
 * until the gateway's first binary frame shows the gateway speaks
 * Protobuf (a gateway that knows no subprotocol echoes the first one
 * asked, and speaks JSON; docs/protocol.md, Binary encoding). Never
 * throws: every bad input maps to a code.
 *
 * @param {Buffer | ArrayBuffer | Buffer[]} data
 * @param {boolean} isBinary
 * @param {boolean} [binary] the connection speaks the binary encoding
 * @returns {ParseResult}
 */
export function parseClientFrame (data, isBinary, binary = false) {
  if (binary && isBinary) {
    let msg
    try {
      msg = decodeClientFrame(Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? new Uint8Array(data) : data)
    } catch {
      return fail(ErrorCode.BAD_FRAME, 'frame is not a wsps.v1 ClientFrame')
    }
    return parseMessage(msg)
  }
  if (isBinary) return fail(ErrorCode.BAD_FRAME, 'binary frames are not supported on wsps.v1.json; send JSON text')
  let msg
  try {
    msg = JSON.parse(String(data))
  } catch {
    return fail(ErrorCode.BAD_JSON, 'frame is not valid JSON')
  }
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
    return fail(ErrorCode.BAD_REQUEST, 'frame must be a JSON object')
  }
  return parseMessage(msg)
}

/**
 * Validates a client frame's object, whichever encoding it came in.
 *
 * @param {Record<string, any>} msg
 * @returns {ParseResult}
 */
function parseMessage (msg) {
  const { op, id } = msg
  if (id !== undefined && !validId(id)) {
    return fail(ErrorCode.BAD_REQUEST, `id must be a number or a string of at most ${MAX_ID_LENGTH} characters`)
  }
  switch (op) {
    case ClientOp.PING:
      return { ok: true, request: id === undefined ? { op } : { op, id } }
    case ClientOp.AUTH: {
      const { token } = msg
      if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) {
        return fail(ErrorCode.BAD_REQUEST, `token must be a non-empty string of at most ${MAX_TOKEN_LENGTH} characters`, id)
      }
      /** @type {AuthRequest} */
      const request = { op, token }
      if (id !== undefined) request.id = id
      return { ok: true, request }
    }
    case ClientOp.SUB:
    case ClientOp.UNSUB: {
      const { symbols } = msg
      if (!Array.isArray(symbols) || symbols.length === 0) {
        return fail(ErrorCode.BAD_REQUEST, 'symbols must be a non-empty array of strings', id)
      }
      if (symbols.length > MAX_SYMBOLS_PER_REQUEST) {
        return fail(ErrorCode.BAD_REQUEST, `at most ${MAX_SYMBOLS_PER_REQUEST} symbols per request`, id)
      }
      const bad = symbols.filter((s) => typeof s !== 'string' || !SYMBOL_PATTERN.test(s))
      if (bad.length) {
        const shown = bad.slice(0, 10).map((s) => (typeof s === 'string' ? s.slice(0, 32) : typeof s))
        return fail(ErrorCode.BAD_SYMBOL, `invalid symbol(s): must match ${SYMBOL_PATTERN.source}`, id, shown)
      }
      /** @type {SymbolsRequest} */
      const request = { op, symbols: [...new Set(/** @type {string[]} */ (symbols))] }
      if (id !== undefined) request.id = id
      if (msg.book !== undefined) {
        const bad = parseBook(msg, request)
        if (bad) return fail(ErrorCode.BAD_BOOK, bad, id)
        return { ok: true, request }
      }
      if (msg.bars !== undefined || msg.backfill !== undefined) {
        const bad = parseBars(msg, request)
        if (bad) return fail(bad.code, bad.message, id)
        if (op === ClientOp.SUB && msg.delayed !== undefined) {
          if (typeof msg.delayed !== 'boolean') return fail(ErrorCode.BAD_REQUEST, 'delayed must be true or false', id)
          request.delayed = msg.delayed
        }
        return { ok: true, request }
      }
      if (op === ClientOp.SUB) {
        const bad = parseDelivery(msg, request) ?? parseSince(msg.since, request)
        if (bad) return fail(bad.code, bad.message, id, bad.symbols)
        if (msg.delayed !== undefined) {
          if (typeof msg.delayed !== 'boolean') return fail(ErrorCode.BAD_REQUEST, 'delayed must be true or false', id)
          request.delayed = msg.delayed
        }
      } else if (msg.since !== undefined) {
        return fail(ErrorCode.BAD_SINCE, 'since belongs to sub only', id)
      }
      return { ok: true, request }
    }
    default:
      return fail(ErrorCode.BAD_OP, typeof op === 'string' ? `unknown op "${op.slice(0, 32)}"` : 'op is missing', id)
  }
}

/**
 * Reads a book `sub` or `unsub`'s depth (and a sub's mode) into the
 * request. Books have no rates, cursors, bars nor delayed timeline: a book
 * request naming any is refused whole.
 *
 * @param {Record<string, unknown>} msg
 * @param {SymbolsRequest} request
 * @returns {string | null} what is wrong, if anything
 */
function parseBook ({ op, book, mode, maxRate, since, bars, backfill, delayed }, request) {
  if (typeof book !== 'number' || !BOOK_DEPTHS.includes(book)) return `book must be one of ${BOOK_DEPTHS.join(', ')}`
  if ([since, bars, backfill, delayed].some((v) => v !== undefined)) return 'a book request takes no since, bars, backfill or delayed'
  if ((mode !== undefined || maxRate !== undefined) && op !== ClientOp.SUB) return 'a book unsub takes no mode or maxRate'
  if (mode !== undefined) {
    if (mode !== 'merge' && mode !== 'distinct') return 'a book\'s mode is "merge" or "distinct"'
    request.mode = mode
  }
  if (maxRate !== undefined) {
    if (mode === 'distinct') return 'maxRate applies to mode "merge" only; distinct sends every change'
    if (typeof maxRate !== 'number' || !(maxRate >= MIN_RATE && maxRate <= MAX_RATE)) return `maxRate must be a number of frames per second from ${MIN_RATE} to ${MAX_RATE}`
    request.maxRate = maxRate
  }
  request.book = book
  return null
}

/**
 * Reads a bars `sub` or `unsub`'s `bars` and `backfill` into the request.
 * Bars have no delivery modes, rates nor cursors: a bars sub naming any is
 * refused whole (BAD_BARS), as is a `backfill` without `bars`.
 *
 * @param {Record<string, unknown>} msg
 * @param {SymbolsRequest} request
 * @returns {{code: string, message: string} | null} what is wrong, if anything
 */
function parseBars ({ op, bars, backfill, mode, maxRate, since }, request) {
  if (bars === undefined) return { code: ErrorCode.BAD_BARS, message: 'backfill belongs to a bars sub' }
  if (typeof bars !== 'string' || !INTERVALS.includes(bars)) {
    return { code: ErrorCode.BAD_INTERVAL, message: `bars must be one of ${INTERVALS.join(', ')}` }
  }
  request.bars = bars
  if (mode !== undefined || maxRate !== undefined || since !== undefined) {
    return { code: ErrorCode.BAD_BARS, message: 'bars take no mode, maxRate or since' }
  }
  if (op !== ClientOp.SUB) {
    return backfill === undefined ? null : { code: ErrorCode.BAD_BARS, message: 'backfill belongs to a bars sub' }
  }
  if (backfill === undefined) {
    request.backfill = DEFAULT_BACKFILL
    return null
  }
  if (typeof backfill !== 'number' || !Number.isInteger(backfill) || backfill < 0 || backfill > MAX_BACKFILL) {
    return { code: ErrorCode.BAD_BARS, message: `backfill must be an integer from 0 to ${MAX_BACKFILL}` }
  }
  request.backfill = backfill
  return null
}

/**
 * The `sub` a GET /sse asks for: its symbols, `mode` (`merge` or
 * `distinct`) and `since` (`AAPL:1042:hohrttbiv1,MSFT:77:...`: symbol, seq
 * and epoch per resumed symbol), validated by the same rules as a
 * WebSocket `sub` (BAD_MODE, BAD_SINCE).
 *
 * `delayed` (`true` or `false`) is a WebSocket sub's `delayed`. The
 * stream's bars are parseStreamBars()'s.
 *
 * @param {{mode?: unknown, since?: unknown, delayed?: unknown}} query
 * @param {string[]} symbols already validated
 * @returns {{ok: true, request: SymbolsRequest} | {ok: false, error: ProtocolError}}
 */
export function parseStreamSub ({ mode, since, delayed }, symbols) {
  /** @type {SymbolsRequest} */
  const request = { op: ClientOp.SUB, symbols }
  const badDelayed = parseStreamDelayed(delayed, request, 'delayed')
  if (badDelayed) return badDelayed
  if (mode !== undefined && typeof mode !== 'string') return fail(ErrorCode.BAD_MODE, 'mode must be given once')
  if (since !== undefined && typeof since !== 'string') return fail(ErrorCode.BAD_SINCE, 'since must be given once')
  /** @type {Record<string, {seq: unknown, epoch: unknown}> | undefined} */
  let cursors
  if (since) {
    cursors = {}
    for (const part of since.split(',')) {
      const [symbol, seq, epoch, extra] = part.split(':')
      if (extra !== undefined || epoch === undefined) return fail(ErrorCode.BAD_SINCE, 'since must be SYMBOL:SEQ:EPOCH,...', undefined, [part.slice(0, 32)])
      cursors[symbol] = { seq: /^\d{1,15}$/.test(seq) ? Number(seq) : seq, epoch }
    }
  }
  const bad = parseDelivery({ mode: mode || undefined }, request) ?? parseSince(cursors, request)
  return bad ? fail(bad.code, bad.message, undefined, bad.symbols) : { ok: true, request }
}

/**
 * The bars `sub` a GET /sse asks for besides its quotes (docs/protocol.md,
 * Server-Sent Events): `bars` (the interval), `barSymbols` (its symbols),
 * `backfill` and `barDelayed`, read by the rules of a WebSocket bars sub
 * (BAD_INTERVAL, BAD_BARS). `barSymbols`, `backfill` or `barDelayed`
 * without `bars`, or `bars` without `barSymbols`, is BAD_BARS.
 *
 * @param {{bars?: unknown, backfill?: unknown, barDelayed?: unknown}} query
 * @param {string[]} symbols `barSymbols`, already validated (empty: none given)
 * @returns {{ok: true, request: (SymbolsRequest & {bars: string}) | null} | {ok: false, error: ProtocolError}} null: no bars asked for
 */
export function parseStreamBars ({ bars, backfill, barDelayed }, symbols) {
  if (bars === undefined) {
    if (symbols.length || backfill !== undefined || barDelayed !== undefined) return fail(ErrorCode.BAD_BARS, 'barSymbols, backfill and barDelayed belong to bars')
    return { ok: true, request: null }
  }
  if (typeof bars !== 'string' || !INTERVALS.includes(bars)) return fail(ErrorCode.BAD_INTERVAL, `bars must be one of ${INTERVALS.join(', ')}, once`)
  if (symbols.length === 0) return fail(ErrorCode.BAD_BARS, 'bars needs barSymbols')
  /** @type {SymbolsRequest & {bars: string}} */
  const request = { op: ClientOp.SUB, symbols, bars, backfill: DEFAULT_BACKFILL }
  if (backfill !== undefined) {
    if (typeof backfill !== 'string' || !/^\d{1,3}$/.test(backfill) || Number(backfill) > MAX_BACKFILL) {
      return fail(ErrorCode.BAD_BARS, `backfill must be an integer from 0 to ${MAX_BACKFILL}, once`)
    }
    request.backfill = Number(backfill)
  }
  const bad = parseStreamDelayed(barDelayed, request, 'barDelayed')
  return bad ?? { ok: true, request }
}

/**
 * The book `sub` a GET /sse asks for besides its quotes (docs/protocol.md,
 * Server-Sent Events): `book` (the depth), `bookSymbols` (its symbols) and
 * `bookMode` and `bookMaxRate`, read by the rules of a WebSocket book sub
 * (BAD_BOOK), as is any of them without `book`, or `book` without `bookSymbols`.
 *
 * @param {{book?: unknown, bookMode?: unknown, bookMaxRate?: unknown}} query
 * @param {string[]} symbols `bookSymbols`, already validated (empty: none given)
 * @returns {{ok: true, request: (SymbolsRequest & {book: number}) | null} | {ok: false, error: ProtocolError}} null: no books asked for
 */
export function parseStreamBook ({ book, bookMode, bookMaxRate }, symbols) {
  if (book === undefined) {
    if (symbols.length || bookMode !== undefined || bookMaxRate !== undefined) return fail(ErrorCode.BAD_BOOK, 'bookSymbols, bookMode and bookMaxRate belong to book')
    return { ok: true, request: null }
  }
  if (symbols.length === 0) return fail(ErrorCode.BAD_BOOK, 'book needs bookSymbols')
  /** @type {SymbolsRequest} */
  const request = { op: ClientOp.SUB, symbols }
  const depth = typeof book === 'string' && /^\d{1,3}$/.test(book) ? Number(book) : NaN
  const rate = typeof bookMaxRate === 'string' && /^\d{1,4}(\.\d{1,3})?$/.test(bookMaxRate) ? Number(bookMaxRate) : bookMaxRate
  const bad = parseBook({ op: ClientOp.SUB, book: depth, ...(bookMode === undefined ? {} : { mode: bookMode }), ...(rate === undefined ? {} : { maxRate: rate }) }, request)
  return bad ? fail(ErrorCode.BAD_BOOK, bad) : { ok: true, request: /** @type {SymbolsRequest & {book: number}} */ (request) }
}

/**
 * A stream's `delayed` (or `barDelayed`) parameter into the request.
 *
 * @param {unknown} delayed
 * @param {SymbolsRequest} request
 * @param {string} name the parameter's
 * @returns {{ok: false, error: ProtocolError} | null} what is wrong, if anything
 */
function parseStreamDelayed (delayed, request, name) {
  if (delayed === undefined) return null
  if (delayed !== 'true' && delayed !== 'false') return fail(ErrorCode.BAD_REQUEST, `${name} must be true or false, once`)
  request.delayed = delayed === 'true'
  return null
}

/**
 * Reads a sub's `mode` and `maxRate` into the request.
 *
 * @param {Record<string, unknown>} msg
 * @param {SymbolsRequest} request
 * @returns {{code: string, message: string, symbols?: string[]} | null} what is wrong, if anything
 */
function parseDelivery ({ mode, maxRate }, request) {
  if (mode !== undefined) {
    if (typeof mode !== 'string' || !MODES.includes(mode)) {
      return { code: ErrorCode.BAD_MODE, message: `mode must be one of ${MODES.join(', ')}` }
    }
    request.mode = /** @type {'merge' | 'distinct'} */ (mode)
  }
  if (maxRate !== undefined) {
    if (mode === DeliveryMode.DISTINCT) {
      return { code: ErrorCode.BAD_RATE, message: 'maxRate applies to mode "merge" only; distinct delivers every tick' }
    }
    if (typeof maxRate !== 'number' || !(maxRate >= MIN_RATE && maxRate <= MAX_RATE)) {
      return { code: ErrorCode.BAD_RATE, message: `maxRate must be a number of updates per second from ${MIN_RATE} to ${MAX_RATE}` }
    }
    request.maxRate = maxRate
  }
  return null
}

/**
 * Reads a sub's `since` (`{"AAPL":{"seq":1042,"epoch":"k3x9"}}`) into the
 * request. Every mistake is one code, BAD_SINCE, and rejects the request
 * whole: a client that sends a wrong cursor learns it at once instead of
 * getting a silent snapshot.
 *
 * @param {unknown} since
 * @param {SymbolsRequest} request
 * @returns {{code: string, message: string, symbols?: string[]} | null}
 */
function parseSince (since, request) {
  if (since === undefined) return null
  if (since === null || typeof since !== 'object' || Array.isArray(since)) {
    return { code: ErrorCode.BAD_SINCE, message: 'since must be an object: symbol -> {"seq":<integer>,"epoch":"<epoch>"[,"held":false]}' }
  }
  const entries = Object.entries(since)
  const asked = new Set(request.symbols)
  const stray = entries.filter(([s]) => !asked.has(s)).map(([s]) => s.slice(0, 32))
  if (stray.length) return { code: ErrorCode.BAD_SINCE, message: 'since names symbols this sub does not subscribe', symbols: stray.slice(0, 10) }
  /** @type {Map<string, Cursor>} */
  const cursors = new Map()
  for (const [symbol, c] of entries) {
    const { seq, epoch } = c !== null && typeof c === 'object' ? c : /** @type {{seq?: unknown, epoch?: unknown}} */ ({})
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
      return { code: ErrorCode.BAD_SINCE, message: 'since: seq must be a non-negative integer', symbols: [symbol] }
    }
    if (typeof epoch !== 'string' || !EPOCH_PATTERN.test(epoch)) {
      return { code: ErrorCode.BAD_SINCE, message: `since: epoch must match ${EPOCH_PATTERN.source}`, symbols: [symbol] }
    }
    const held = /** @type {{held?: unknown}} */ (c).held
    if (held !== undefined && typeof held !== 'boolean') {
      return { code: ErrorCode.BAD_SINCE, message: 'since: held must be true or false', symbols: [symbol] }
    }
    cursors.set(symbol, held === false ? { seq, epoch, held } : { seq, epoch })
  }
  if (cursors.size) request.since = cursors
  return null
}

/**
 * The `hello` frame. `expiresInMs` (auth on, the token has `exp`) tells the
 * client when to refresh; it is relative so client clock skew does not matter.
 *
 * @param {string} node
 * @param {number} heartbeatMs
 * @param {Record<string, number>} limits
 * @param {number | null} [expiresInMs]
 */
export function encodeHello (node, heartbeatMs, limits, expiresInMs = null) {
  const hello = { op: ServerOp.HELLO, v: PROTOCOL_VERSION, node, heartbeatMs, limits }
  return JSON.stringify(expiresInMs === null ? hello : { ...hello, expiresInMs })
}

/**
 * @param {number | string | undefined} id
 * @param {readonly string[]} symbols
 * @param {{mode?: string, maxRate?: number, expiresInMs?: number, recovered?: Record<string, boolean>, delayed?: string[], delayMs?: number, bars?: string, book?: number} | null} [extra] a sub's
 *   delivery as it named it, and whether each symbol of its `since` was
 *   recovered; expiresInMs on the answer to a token refresh; delayed: the
 *   held symbols served delayed, when any is, and delayMs: by how much
 */
export function encodeAck (id, symbols, extra = null) {
  const ack = id === undefined ? { op: ServerOp.ACK, symbols } : { op: ServerOp.ACK, id, symbols }
  return JSON.stringify(extra === null ? ack : { ...ack, ...extra })
}

/**
 * A bar as it goes on the wire, its fields in BAR_FIELDS order.
 *
 * @param {import('./bars/bar-builder.js').Bar} b
 */
function barJson (b) {
  return `{"t":${b.t},"o":${b.o},"h":${b.h},"l":${b.l},"c":${b.c},"v":${b.v},"n":${b.n}}`
}

/**
 * The backfill of a bar series: closed bars oldest first, the open one.
 *
 * @param {string} symbol
 * @param {string} interval
 * @param {readonly import('./bars/bar-builder.js').Bar[]} bars
 * @param {import('./bars/bar-builder.js').Bar | null} current
 * @param {boolean} complete false: history did not reach back far enough for the backfill asked
 * @param {boolean} delayed
 */
export function encodeBars (symbol, interval, bars, current, complete, delayed) {
  return `{"op":"${ServerOp.BARS}","symbol":"${symbol}","interval":"${interval}","bars":[${bars.map(barJson).join(',')}]` +
    `${current === null ? '' : `,"current":${barJson(current)}`},"complete":${complete}${delayed ? ',"delayed":true' : ''}}`
}

/**
 * A live bar: an update of the open one, or its final value (`closed`).
 *
 * @param {string} symbol
 * @param {string} interval
 * @param {import('./bars/bar-builder.js').Bar} bar
 * @param {boolean} closed
 * @param {boolean} delayed
 */
export function encodeBar (symbol, interval, bar, closed, delayed) {
  return `{"op":"${ServerOp.BAR}","symbol":"${symbol}","interval":"${interval}","bar":${barJson(bar)},"closed":${closed}${delayed ? ',"delayed":true' : ''}}`
}

/** @param {ProtocolError} error */
export function encodeError (error) {
  return JSON.stringify({ op: ServerOp.ERROR, ...error })
}

/**
 * @param {readonly string[]} symbols
 * @param {number} since wall clock (ms) of the last moment their feed was known good
 */
export function encodeStale (symbols, since) {
  return JSON.stringify({ op: ServerOp.STALE, symbols, since })
}

/** @param {readonly string[]} symbols */
export function encodeFresh (symbols) {
  return JSON.stringify({ op: ServerOp.FRESH, symbols })
}

/** A `pong` without an id, encoded once. */
const PONG = JSON.stringify({ op: ServerOp.PONG })

/** @param {number | string | undefined} id */
export function encodePong (id) {
  return id === undefined ? PONG : JSON.stringify({ op: ServerOp.PONG, id })
}

/**
 * A book's snapshot frame at one depth (docs/protocol.md, Order books).
 *
 * @param {string} symbol
 * @param {number} depth
 * @param {{seq: number, epoch: string, ts: number, sync: boolean}} at
 * @param {{bids: import('@wsps/protocol/book').Level[], asks: import('@wsps/protocol/book').Level[]}} window
 * @param {number} checksum
 */
export function encodeBook (symbol, depth, { seq, epoch, ts, sync }, { bids, asks }, checksum) {
  return JSON.stringify({ op: ServerOp.BOOK, symbol, depth, seq, epoch, ts, ...(sync ? {} : { sync: false }), bids, asks, checksum })
}

/**
 * A book window's delta frame: the levels that changed since seq `prev`.
 *
 * @param {string} symbol
 * @param {number} depth
 * @param {number} seq
 * @param {number} prev
 * @param {number} ts
 * @param {{bids: import('@wsps/protocol/book').Level[], asks: import('@wsps/protocol/book').Level[]}} levels
 * @param {number} checksum
 */
export function encodeLevels (symbol, depth, seq, prev, ts, { bids, asks }, checksum) {
  return JSON.stringify({ op: ServerOp.LEVELS, symbol, depth, seq, prev, ts, bids, asks, checksum })
}

/** How every `snap` and `q` frame starts. */
const SNAP_HEAD = `{"op":"${ServerOp.SNAP}","quotes":[`
const QUOTES_HEAD = `{"op":"${ServerOp.QUOTES}","quotes":[`

/**
 * @param {string[]} fullQuotes serialized full quotes
 * @param {boolean} [lost] they replace ticks that could not be recovered
 *   (`"recovered":false`: history did not cover the hole)
 */
export function encodeSnap (fullQuotes, lost = false) {
  return `${SNAP_HEAD}${fullQuotes.join(',')}]${lost ? ',"recovered":false' : ''}}`
}

/** @param {string[]} deltas serialized deltas */
export function encodeQuotes (deltas) {
  return `${QUOTES_HEAD}${deltas.join(',')}]}`
}

const QUOTES_OPEN = Buffer.from(QUOTES_HEAD)
const QUOTES_CLOSE = Buffer.from(']}')

/**
 * @typedef {object} EncodedDelta a delta serialized once for all its
 *   subscribers (delta.js Update)
 * @property {string} json
 * @property {Buffer} bytes its UTF-8
 * @property {boolean} ascii the JSON is ASCII: its chars are its bytes
 */

/**
 * One reader's `q` frame of encodeQuotes, joined from deltas serialized
 * once each. ASCII deltas (every quote of the wire contract) are joined as
 * text, a frame whose wire is a string (TextFrame.ascii); otherwise from
 * their bytes.
 *
 * @param {readonly EncodedDelta[]} deltas at least one
 * @returns {TextFrame}
 */
export function quotesFrame (deltas) {
  let ascii = true
  for (const d of deltas) {
    if (!d.ascii) {
      ascii = false
      break
    }
  }
  if (!ascii) return TextFrame.join(QUOTES_OPEN, deltas.map((d) => d.bytes), QUOTES_CLOSE)
  let text = QUOTES_HEAD + deltas[0].json
  for (let i = 1; i < deltas.length; i++) text += ',' + deltas[i].json
  return TextFrame.ascii(text + ']}')
}

/**
 * quotesFrame() for a reader of the binary encoding: one `q` frame joined
 * from the deltas' Protobuf bytes, each encoded once (delta.js Update.proto).
 *
 * @param {readonly {proto: Uint8Array}[]} deltas at least one
 * @returns {TextFrame}
 */
export function binaryQuotesFrame (deltas) {
  const parts = deltas.map((d) => d.proto)
  return TextFrame.binaryFilled(quotesLength('q', parts), (wire, at) => writeQuotes(wire, at, 'q', parts))
}
