// What a connection may ask of bars: a bars `sub` and `unsub`
// (docs/protocol.md, Bars), with the same entitlement, delayed-grant and
// limit rules as quotes; and what a token refresh or a close does to its
// bar subscriptions. Sessions (session.js) hands it the requests that name
// `bars`; the series are the BarHubs' (bars.js), one per timeline.

import { ErrorCode, Limits, ServerOp } from '@wsps/protocol'
import { subscriptionRefusal, ungranted } from '../auth.js'
import { encodeAck } from '../protocol.js'

/**
 * @typedef {import('../connection.js').Connection} Client
 * @typedef {import('../protocol.js').ProtocolError} ProtocolError
 * @typedef {import('../protocol.js').SymbolsRequest} SymbolsRequest
 */

/**
 * Why a bars `sub` is refused, if it is: DELAYED_ONLY (`delayed:false` for
 * a symbol the token grants delayed only), NOT_ENTITLED (a new series of a
 * symbol it does not grant), TOO_MANY_SUBSCRIPTIONS (quotes and bar series
 * together over the limit). The rules of a WebSocket request and of a
 * GET /sse that asks for bars (sse-server.js, before its stream opens).
 *
 * @param {{grants: import('../auth.js').Grants | null, delayedGrants: import('../auth.js').Grants | null, held: number}} holder
 *   the connection (or the stream to be): its grants, and how many
 *   subscriptions it holds (quotes and bar series)
 * @param {SymbolsRequest} req
 * @param {string[]} fresh the series of the request the connection does not hold
 * @param {number} maxSubscriptions
 * @returns {ProtocolError | null}
 */
export function barsRefusal ({ grants, delayedGrants, held }, req, fresh, maxSubscriptions) {
  const { id } = req
  if (req.delayed === false && delayedGrants !== null) {
    const only = req.symbols.filter(delayedGrants)
    if (only.length) return { code: ErrorCode.DELAYED_ONLY, message: 'the token grants these symbols delayed only', id, symbols: only }
  }
  return subscriptionRefusal({ grants, held }, fresh, maxSubscriptions, id)
}

export class BarRequests {
  #realtime
  #delayed
  #delayMs
  #maxSubscriptions
  #reject
  #saw

  /**
   * @param {object} options
   * @param {import('./bar-hub.js').BarHub} options.realtime
   * @param {import('./bar-hub.js').BarHub | null} options.delayed null: no delayed timeline (unit tests)
   * @param {number | undefined} options.delayMs told in acks
   * @param {number} options.maxSubscriptions quote and bar subscriptions of a connection together
   * @param {(client: Client, error: ProtocolError) => void} options.reject answers a refused request
   * @param {(client: Client, symbols: string[], delayed: (symbol: string) => boolean) => void} [options.saw]
   *   told of the series a connection starts, each on its timeline (the usage records: usage.js)
   */
  constructor ({ realtime, delayed, delayMs, maxSubscriptions, reject, saw = () => {} }) {
    this.#realtime = realtime
    this.#delayed = delayed
    this.#delayMs = delayMs
    this.#maxSubscriptions = maxSubscriptions
    this.#reject = reject
    this.#saw = saw
  }

  /** @param {boolean} delayed */
  #hub (delayed) {
    if (!delayed) return this.#realtime
    if (this.#delayed === null) throw new Error('no delayed timeline')
    return this.#delayed
  }

  /**
   * A bars `sub`: refused whole (DELAYED_ONLY, NOT_ENTITLED,
   * TOO_MANY_SUBSCRIPTIONS) or applied: the ack, then each new series'
   * backfill. A held one on the other timeline moves there (a new backfill).
   *
   * @param {Client} client
   * @param {SymbolsRequest & {bars: string}} req
   */
  subscribe (client, req) {
    const { symbols, id, bars: interval, backfill = 0 } = req
    const delayedGrants = client.delayedGrants
    /** @param {string} s */
    const delayed = (s) => req.delayed === true || (delayedGrants !== null && delayedGrants(s))
    const subs = client.subscriptions
    const fresh = symbols.filter((s) => subs.barDelayed(s, interval) === undefined)
    const moved = symbols.filter((s) => {
      const held = subs.barDelayed(s, interval)
      return held !== undefined && held !== delayed(s)
    })
    const refused = barsRefusal({ grants: client.grants, delayedGrants, held: subs.count }, req, fresh, this.#maxSubscriptions)
    if (refused !== null) {
      this.#reject(client, refused)
      return
    }
    for (const s of moved) this.#hub(!delayed(s)).remove(client, s, interval)
    // Every series named notes whether its timeline is the sub's choice or
    // the token's (a refresh moves only the token's: regrant()).
    for (const s of symbols) subs.holdBars(s, interval, delayed(s), req.delayed === true)
    this.#ack(client, id, interval)
    for (const s of fresh.concat(moved)) this.#hub(delayed(s)).add(client, s, interval, backfill)
    this.#saw(client, fresh.concat(moved), delayed)
  }

  /**
   * A bars `unsub`: the series named end for this connection.
   *
   * @param {Client} client
   * @param {SymbolsRequest & {bars: string}} req
   */
  unsubscribe (client, { symbols, id, bars: interval }) {
    for (const s of symbols) this.#drop(client, s, interval)
    this.#ack(client, id, interval)
  }

  /**
   * @param {Client} client
   * @param {number | string | undefined} id
   * @param {string} interval
   */
  #ack (client, id, interval) {
    const subs = client.subscriptions
    const symbols = subs.barsOf(interval)
    const delayed = symbols.filter((s) => subs.barDelayed(s, interval))
    client.send(encodeAck(id, symbols, delayed.length ? { bars: interval, delayed, delayMs: this.#delayMs } : { bars: interval }), ServerOp.ACK)
  }

  /**
   * @param {Client} client
   * @param {string} symbol
   * @param {string} interval
   */
  #drop (client, symbol, interval) {
    const subs = client.subscriptions
    const delayed = subs.barDelayed(symbol, interval)
    if (delayed === undefined) return
    subs.dropBars(symbol, interval)
    this.#hub(delayed).remove(client, symbol, interval)
  }

  /**
   * A token refresh was accepted (the connection's grants are the new
   * ones): bar subscriptions it no longer grants end, and those whose
   * timeline the token decides move to the one it grants before the
   * refresh is acked: real-time ones it grants delayed only to the delayed
   * timeline (no real-time bar follows the ack), and delayed ones it now
   * grants real-time to the real-time timeline, unless their bars `sub`
   * asked `"delayed":true`. A `bars` frame of the new timeline (the default
   * backfill) replaces each series moved, before the ack when this gateway
   * has that series loaded already, else once it is.
   *
   * @param {Client} client
   * @returns {string[]} the symbols whose bars were unsubscribed
   */
  regrant (client) {
    /** @type {Set<string>} */
    const revoked = new Set()
    const delayedOnly = client.delayedGrants
    const subs = client.subscriptions
    for (const [s, interval, delayed] of subs.barSubscriptions()) {
      if (ungranted(client.grants, [s]).length) {
        this.#drop(client, s, interval)
        revoked.add(s)
        continue
      }
      const onlyDelayed = delayedOnly !== null && delayedOnly(s)
      if (delayed ? onlyDelayed || subs.barsAsked(s, interval) : !onlyDelayed) continue
      this.#hub(delayed).remove(client, s, interval)
      subs.holdBars(s, interval, !delayed)
      this.#hub(!delayed).add(client, s, interval, Limits.DEFAULT_BACKFILL)
      this.#saw(client, [s], () => !delayed)
    }
    return [...revoked]
  }

  /**
   * The connection closed: it leaves every series.
   *
   * @param {Client} client
   */
  onClose (client) {
    for (const [s, interval, delayed] of client.subscriptions.barSubscriptions()) this.#hub(delayed).remove(client, s, interval)
  }
}
