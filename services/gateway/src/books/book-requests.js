// What a connection may ask of order books: a book `sub` and `unsub`
// (docs/protocol.md, Order books), with the entitlement and limit rules of
// quotes, and what a token refresh or a close does to its book
// subscriptions. Sessions (session.js) hands it the requests that name
// `book`; the books themselves are the BookHub's.

import { ErrorCode, ServerOp } from '@wsps/protocol'
import { subscriptionRefusal, ungranted } from '../auth.js'
import { DISTINCT, FULL_RATE } from '../delivery.js'
import { encodeAck, encodeError } from '../protocol.js'

/**
 * @typedef {import('../connection.js').Connection} Client
 * @typedef {import('../protocol.js').ProtocolError} ProtocolError
 * @typedef {import('../protocol.js').SymbolsRequest & {book: number}} BookRequest
 */

/**
 * Why a book `sub` is refused whole, if it is: DELAYED_ONLY (books are
 * real-time only), NOT_ENTITLED, TOO_MANY_SUBSCRIPTIONS. Also what a GET
 * /sse asking for books is checked by before its stream opens.
 *
 * @param {{grants: ((symbol: string) => boolean) | null, delayedGrants: ((symbol: string) => boolean) | null, held: number}} holder
 *   the token's checks and the subscriptions the connection holds
 * @param {BookRequest} req
 * @param {string[]} fresh the books of the request the connection does not hold
 * @param {number} maxSubscriptions
 * @returns {ProtocolError | null}
 */
export function bookRefusal ({ grants, delayedGrants, held }, { id, symbols }, fresh, maxSubscriptions) {
  const only = delayedGrants === null ? [] : symbols.filter(delayedGrants)
  if (only.length) return { code: ErrorCode.DELAYED_ONLY, message: 'the token grants these symbols delayed only, and books are real-time', id, symbols: only }
  return subscriptionRefusal({ grants, held }, fresh, maxSubscriptions, id)
}

export class BookRequests {
  #hub
  #maxSubscriptions
  #reject
  #saw
  #log

  /**
   * @param {object} options
   * @param {import('./book-hub.js').BookHub} options.hub
   * @param {number} options.maxSubscriptions quote, bar and book subscriptions of a connection together
   * @param {(client: Client, error: ProtocolError) => void} options.reject answers a refused request
   * @param {(client: Client, symbols: string[], delayed: (symbol: string) => boolean) => void} [options.saw]
   *   told of the books a connection starts (real-time: the usage records, usage.js)
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ hub, maxSubscriptions, reject, saw = () => {}, logger }) {
    this.#hub = hub
    this.#maxSubscriptions = maxSubscriptions
    this.#reject = reject
    this.#saw = saw
    this.#log = logger.child({ component: 'book-requests' })
  }

  /**
   * A book `sub`: refused whole (NOT_ENTITLED, DELAYED_ONLY: books are
   * real-time only, TOO_MANY_SUBSCRIPTIONS), or answered once the books
   * are read: NO_BOOK for those without one, the ack, then a snapshot of
   * each new (symbol, depth).
   *
   * @param {Client} client
   * @param {BookRequest} req
   * @returns {Promise<void> | null} while the books are read (it never
   *   rejects: a failure is answered INTERNAL); null: done
   */
  subscribe (client, req) {
    const { symbols, id, book: depth } = req
    const delivery = req.mode === 'distinct' ? DISTINCT : req.maxRate ?? FULL_RATE
    const subs = client.subscriptions
    const fresh = symbols.filter((s) => subs.bookDelivery(s, depth) !== delivery)
    const refused = this.#refusal(client, req, fresh.filter((s) => subs.bookDelivery(s, depth) === undefined))
    if (refused !== null) {
      this.#reject(client, refused)
      return null
    }
    if (fresh.length === 0) {
      this.#ack(client, id, depth)
      return null
    }
    const { ready, release } = this.#hub.open(fresh)
    // Held with another delivery: it moves (a snapshot in the new one follows).
    for (const s of fresh) if (subs.dropBook(s, depth)) this.#hub.remove(client, s, depth)
    return ready.then((missing) => {
      if (client.closed) return
      const none = new Set(missing)
      const found = fresh.filter((s) => !none.has(s))
      for (const s of found) subs.holdBook(s, depth, delivery)
      if (missing.length) client.send(encodeError({ code: ErrorCode.NO_BOOK, message: 'no book for these symbols', symbols: missing, ...(id === undefined ? {} : { id }) }), ServerOp.ERROR)
      this.#ack(client, id, depth)
      for (const s of found) this.#hub.add(client, s, depth)
      this.#saw(client, found, () => false)
    }, (/** @type {Error} */ err) => {
      this.#log.warn({ err: err.message, client: client.id }, 'books not read')
      if (!client.closed) this.#reject(client, { code: ErrorCode.INTERNAL, message: 'the books could not be read; retry', id })
    }).finally(release)
  }

  /**
   * @param {Client} client
   * @param {BookRequest} req
   * @param {string[]} fresh
   * @returns {ProtocolError | null}
   */
  #refusal (client, req, fresh) {
    return bookRefusal({ grants: client.grants, delayedGrants: client.delayedGrants, held: client.subscriptions.count }, req, fresh, this.#maxSubscriptions)
  }

  /**
   * A book `unsub`: the books named end for this connection at that depth.
   *
   * @param {Client} client
   * @param {BookRequest} req
   */
  unsubscribe (client, { symbols, id, book: depth }) {
    for (const s of symbols) if (client.subscriptions.dropBook(s, depth)) this.#hub.remove(client, s, depth)
    this.#ack(client, id, depth)
  }

  /**
   * A token refresh was accepted: books it no longer grants in real time end.
   *
   * @param {Client} client
   * @returns {string[]} the symbols whose books were unsubscribed
   */
  regrant (client) {
    /** @type {Set<string>} */
    const revoked = new Set()
    const delayedOnly = client.delayedGrants
    for (const [s, depth] of client.subscriptions.bookSubscriptions()) {
      if (ungranted(client.grants, [s]).length === 0 && !(delayedOnly !== null && delayedOnly(s))) continue
      client.subscriptions.dropBook(s, depth)
      this.#hub.remove(client, s, depth)
      revoked.add(s)
    }
    return [...revoked]
  }

  /**
   * The connection closed: it leaves every book.
   *
   * @param {Client} client
   */
  onClose (client) {
    for (const [s, depth] of client.subscriptions.bookSubscriptions()) this.#hub.remove(client, s, depth)
  }

  /**
   * @param {Client} client
   * @param {number | string | undefined} id
   * @param {number} depth
   */
  #ack (client, id, depth) {
    client.send(encodeAck(id, client.subscriptions.booksOf(depth), { book: depth }), ServerOp.ACK)
  }
}
