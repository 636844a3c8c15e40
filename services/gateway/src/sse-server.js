// Server-Sent Events fallback: GET /sse?symbols=AAPL,MSFT streams the same
// hello/ack/snap/q/error frames as a WebSocket, for clients behind proxies
// that strip upgrades or without WebSocket at all (docs/protocol.md).
//
// The watch set is part of the request: a client changes it by opening a
// new stream (the JS client does so by itself). A POST tied to a stream
// would have to reach the very pod holding it, which a balancer spreading
// requests over pods does not promise.
//
// The same admission as WebSocket upgrades (admission.js open(): drain,
// capacity, Origin, per IP, the token, and the entitlement check of auth.js
// for the symbols asked for) and the same limits; every refusal is a
// 4xx/503 whose JSON body is a protocol error frame.
//
// Besides its quotes a stream may carry the bars of one interval
// (`bars=1m&barSymbols=AAPL`): a bars `sub` applied after the quote sub,
// checked before the stream opens by the rules of a WebSocket bars sub
// (bar-requests.js barsRefusal()); a refusal of it names the interval
// (`"bars":"1m"`), so a client can tell it from one of its quotes. And the
// order books of one depth (`book=10&bookSymbols=BTC-USD`, `bookMode`),
// checked by the rules of a WebSocket book sub (book-requests.js
// bookRefusal()); a refusal of it names the depth (`"book":10`).

import { ClientOp, ErrorCode, SYMBOL_PATTERN, ServerOp } from '@wsps/protocol'
import { bearerOf } from './auth.js'
import { barsRefusal } from './bars/bar-requests.js'
import { bookRefusal } from './books/book-requests.js'
import { encodeAck, encodeError, parseStreamBars, parseStreamBook, parseStreamSub } from './protocol.js'
import { SseTransport, firstEventId } from './sse-transport.js'

export const SSE_PATH = '/sse'

/** Close code of a stream that ended without close() (the peer went away). */
const ABNORMAL = 1006

/**
 * @typedef {import('./protocol.js').ProtocolError} ProtocolError
 * @typedef {{ok: true, symbols: string[]} | {ok: false, error: ProtocolError}} SymbolsResult
 * @typedef {import('./protocol.js').SymbolsRequest & {bars: string}} BarsRequest
 * @typedef {import('./protocol.js').SymbolsRequest & {book: number}} BookRequest
 */

/**
 * The `symbols` parameter: comma-separated, at most `max` of them.
 *
 * @param {unknown} param
 * @param {number} max
 * @returns {SymbolsResult}
 */
export function parseSymbols (param, max) {
  if (param === undefined || param === '') return { ok: true, symbols: [] }
  if (typeof param !== 'string') return { ok: false, error: { code: ErrorCode.BAD_REQUEST, message: 'symbols must be given once, comma-separated' } }
  const symbols = [...new Set(param.split(','))]
  const bad = symbols.filter((s) => !SYMBOL_PATTERN.test(s))
  if (bad.length) {
    return { ok: false, error: { code: ErrorCode.BAD_SYMBOL, message: `invalid symbol(s): must match ${SYMBOL_PATTERN.source}`, symbols: bad.slice(0, 10).map((s) => s.slice(0, 32)) } }
  }
  if (symbols.length > max) {
    return { ok: false, error: { code: ErrorCode.TOO_MANY_SUBSCRIPTIONS, message: `at most ${max} symbols per stream`, symbols: symbols.slice(max) } }
  }
  return { ok: true, symbols }
}

export class SseServer {
  #admission
  #connections
  #sessions
  #metrics
  #maxSubscriptions

  /**
   * @param {object} options
   * @param {import('./admission.js').Admission} options.admission
   * @param {import('./connections.js').Connections} options.connections
   * @param {import('./session.js').Sessions} options.sessions
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   * @param {number} options.maxSubscriptions symbols one stream may ask for
   */
  constructor ({ admission, connections, sessions, metrics, maxSubscriptions }) {
    this.#admission = admission
    this.#connections = connections
    this.#sessions = sessions
    this.#metrics = metrics
    this.#maxSubscriptions = maxSubscriptions
  }

  /** @param {import('fastify').FastifyInstance<any, any, any, any>} app */
  register (app) {
    app.get(SSE_PATH, (request, reply) => this.#open(request, reply))
  }

  /**
   * @param {import('fastify').FastifyRequest} request
   * @param {import('fastify').FastifyReply} reply
   */
  async #open (request, reply) {
    const m = this.#metrics.sseRequests
    const req = request.raw
    const query = /** @type {Record<string, unknown>} */ (request.query ?? {})
    // mode and since (a resumed stream) by the rules of a WebSocket sub,
    // then the bars; a mistake is a 400 in the place of a bad symbol.
    const symbols = parseSymbols(query.symbols, this.#maxSubscriptions)
    const sub = symbols.ok ? parseStreamSub(query, symbols.symbols) : null
    const bars = sub?.ok ? this.#parseBars(query) : null
    const book = bars?.ok ? this.#parseBook(query) : null
    const parsed = sub !== null && !sub.ok ? sub : bars !== null && !bars.ok ? bars : book !== null && !book.ok ? book : symbols
    // EventSource can send no header: ?token= is allowed here only, and
    // masked in every log line (services/shared logger, nginx).
    const token = bearerOf(req) ?? (typeof query.token === 'string' ? query.token : null)
    const lease = await this.#admission.open(req, token, { symbols: parsed })
    if (!lease.ok) {
      // This counter has always counted a stream whose client went away
      // during the token check as `draining`.
      m.inc({ result: lease.result === 'aborted' ? 'draining' : lease.result })
      if (lease.retryAfter) reply.header('Retry-After', lease.retryAfter)
      // A malformed bars part is named by its interval, as given.
      const named = lease.result !== 'bad_request'
        ? {}
        : parsed === bars && typeof query.bars === 'string'
          ? { bars: query.bars.slice(0, 16) }
          : parsed === book && typeof query.book === 'string' && /^\d{1,3}$/.test(query.book) ? { book: Number(query.book) } : {}
      return refuse(request, reply, lease.status, { code: lease.code, message: lease.message, symbols: lease.symbols, ...named })
    }
    // Real-time asked for (delayed=false) where the token grants delayed only.
    const delayedOnly = sub?.ok && sub.request.delayed === false && lease.access.delayed !== null ? lease.symbols.filter(lease.access.delayed) : []
    if (delayedOnly.length) {
      this.#admission.settle(lease.ip, false)
      m.inc({ result: 'not_entitled' })
      return refuse(request, reply, 403, { code: ErrorCode.DELAYED_ONLY, message: 'the token grants these symbols delayed only', symbols: delayedOnly })
    }
    // A new stream holds nothing: every series and book is fresh; its quotes, then its bars, count towards the limit.
    const holder = (/** @type {number} */ held) => ({ grants: lease.access.grants, delayedGrants: lease.access.delayed, held })
    const barsSub = bars?.ok ? bars.request : null
    const bookSub = book?.ok ? book.request : null
    const refusal = barsSub !== null && (this.#sessions.barRequests === null
      ? { code: ErrorCode.BAD_BARS, message: 'bars are not served here', bars: barsSub.bars }
      : named(barsRefusal(holder(lease.symbols.length), barsSub, barsSub.symbols, this.#maxSubscriptions), { bars: barsSub.bars }))
    || bookSub !== null && (this.#sessions.bookRequests === null
      ? { code: ErrorCode.BAD_BOOK, message: 'books are not served here', book: bookSub.book }
      : named(bookRefusal(holder(lease.symbols.length + (barsSub?.symbols.length ?? 0)), bookSub, bookSub.symbols, this.#maxSubscriptions), { book: bookSub.book }))
    if (refusal) {
      this.#admission.settle(lease.ip, false)
      const forbidden = refusal.code === ErrorCode.DELAYED_ONLY || refusal.code === ErrorCode.NOT_ENTITLED
      m.inc({ result: forbidden ? 'not_entitled' : 'bad_request' })
      return refuse(request, reply, forbidden ? 403 : 400, refusal)
    }
    try {
      this.#stream(reply, lease, sub?.ok ? sub.request : null, barsSub, bookSub)
      m.inc({ result: 'accepted' })
    } finally {
      this.#admission.settle(lease.ip, true)
    }
  }

  /**
   * The bars part of a request: `barSymbols` as `symbols` are read, then
   * the rest (protocol.js parseStreamBars()).
   *
   * @param {Record<string, unknown>} query
   * @returns {{ok: true, request: BarsRequest | null} | {ok: false, error: ProtocolError}}
   */
  #parseBars (query) {
    const symbols = parseSymbols(query.barSymbols, this.#maxSubscriptions)
    return symbols.ok ? parseStreamBars(query, symbols.symbols) : symbols
  }

  /**
   * The books part of a request: `bookSymbols` as `symbols` are read, then
   * the rest (protocol.js parseStreamBook()).
   *
   * @param {Record<string, unknown>} query
   * @returns {{ok: true, request: BookRequest | null} | {ok: false, error: ProtocolError}}
   */
  #parseBook (query) {
    const symbols = parseSymbols(query.bookSymbols, this.#maxSubscriptions)
    return symbols.ok ? parseStreamBook(query, symbols.symbols) : symbols
  }

  /**
   * Turns the response into the connection's event stream.
   *
   * @param {import('fastify').FastifyReply} reply
   * @param {import('./admission.js').Lease} lease
   * @param {import('./protocol.js').SymbolsRequest | null} sub its mode and since, for the symbols of the lease
   * @param {BarsRequest | null} bars its bars sub, admitted
   * @param {BookRequest | null} book its book sub, admitted
   */
  #stream (reply, lease, sub, bars, book) {
    reply.hijack()
    const res = reply.raw
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      // nginx (and ingress-nginx) buffer responses unless told not to.
      'X-Accel-Buffering': 'no',
      'X-Content-Type-Options': 'nosniff'
    })
    // Quote frames are small and latency matters more than packet count.
    res.socket?.setNoDelay(true)
    const transport = new SseTransport(res, firstEventId(reply.request.headers['last-event-id']))
    const client = this.#connections.open(transport, lease)
    transport.serve(client)
    // The code the gateway closed with is the connection's (Connections.onClose).
    res.on('close', () => this.#connections.onClose(client, ABNORMAL))
    // With sessions per user capped, the stream is subscribed once its
    // place is taken (refused: it has been closed).
    const welcomed = this.#sessions.welcome(client, lease.access)
    if (welcomed === null) this.#subscribe(client, lease, sub, bars, book)
    else welcomed.then(() => { if (client.authed && !client.closed) this.#subscribe(client, lease, sub, bars, book) })
  }

  /**
   * A new stream's subscriptions: its quotes, then its bars, then its books.
   *
   * @param {import('./connection.js').Connection} client
   * @param {import('./admission.js').Lease} lease
   * @param {import('./protocol.js').SymbolsRequest | null} sub
   * @param {BarsRequest | null} bars
   * @param {BookRequest | null} book
   */
  #subscribe (client, lease, sub, bars, book) {
    /** @type {Promise<void> | null} */
    let resuming = null
    if (lease.symbols.length) {
      // A resumed stream's sub is applied once its history is read; nothing
      // else arrives on a stream meanwhile.
      resuming = this.#sessions.subscribe(client, { ...sub, op: ClientOp.SUB, symbols: lease.symbols })
    } else {
      client.send(encodeAck(undefined, []), ServerOp.ACK)
    }
    const barRequests = this.#sessions.barRequests
    const bookRequests = this.#sessions.bookRequests
    // The bars and books after the quotes: their acks follow the quotes' ack and snapshot.
    const rest = () => {
      if (bars !== null && barRequests !== null) barRequests.subscribe(client, bars)
      if (book !== null && bookRequests !== null) bookRequests.subscribe(client, book)
    }
    if (resuming === null) rest()
    else resuming.then(() => { if (!client.closed) rest() })
  }
}

/**
 * @param {ProtocolError | null} error
 * @param {{bars?: string, book?: number}} part the part of the stream it refuses (its interval or depth)
 * @returns {ProtocolError | null}
 */
function named (error, part) {
  return error === null ? null : { ...error, ...part }
}

/**
 * @param {import('fastify').FastifyRequest} request
 * @param {import('fastify').FastifyReply} reply
 * @param {number} status
 * @param {ProtocolError} error
 */
function refuse (request, reply, status, error) {
  // The request URL may hold ?token=: the logger's req serializer masks it.
  request.log.debug({ req: request, status, code: error.code }, 'sse request refused')
  return reply.code(status).type('application/json').send(encodeError(error))
}
