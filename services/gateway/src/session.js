// What a connected client may ask for: sub, unsub, ping. Applies limits and
// entitlements, then talks to the hub. Every rejection is a coded error.

import { DeliveryMode, ErrorCode } from '@wsps/protocol'
import { DISTINCT, FULL_RATE } from './outbox.js'
import { encodeAck, encodeError, encodePong, encodeSnap, parseClientFrame } from './protocol.js'

/**
 * @typedef {import('./connection.js').Connection} Client
 * @typedef {import('./protocol.js').ProtocolError} ProtocolError
 */

export class Sessions {
  /**
   * @param {object} options
   * @param {import('./hub.js').Hub} options.hub
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   * @param {number} options.maxSubscriptions
   * @param {() => boolean} options.draining
   */
  constructor ({ hub, metrics, maxSubscriptions, draining }) {
    this.hub = hub
    this.metrics = metrics
    this.maxSubscriptions = maxSubscriptions
    this.draining = draining
  }

  /**
   * @param {Client} client
   * @param {import('ws').RawData} data
   * @param {boolean} isBinary
   */
  onMessage (client, data, isBinary) {
    if (!this.admit(client)) return
    const parsed = parseClientFrame(data, isBinary)
    if (!parsed.ok) {
      this.reject(client, parsed.error)
      return
    }
    const req = parsed.request
    switch (req.op) {
      case 'ping':
        client.send(encodePong(req.id), 'pong')
        return
      case 'sub':
        this.subscribe(client, req)
        return
      case 'unsub':
        this.unsubscribe(client, req.symbols, req.id)
    }
  }

  /**
   * A WebSocket ping frame from the client. Answered here rather than by
   * `ws` (autoPong costs a closure per connection), and counted against the
   * same message rate limit as protocol messages.
   *
   * @param {Client} client
   * @param {Buffer} data
   */
  onPing (client, data) {
    if (this.admit(client)) client.pong(data)
  }

  /**
   * The message rate limit: true to go on with a message.
   *
   * @param {Client} client
   */
  admit (client) {
    const dropped = client.admit()
    if (dropped === 0) return true
    // Answer the first dropped message of a flood, then drop silently:
    // replying to each would let a client amplify its own flood (and
    // the connection closes itself when the flood goes on).
    if (dropped === 1) this.reject(client, { code: ErrorCode.RATE_LIMITED, message: 'too many messages; slow down' })
    return false
  }

  /**
   * @param {Client} client
   * @param {ProtocolError} error
   */
  reject (client, error) {
    this.metrics.clientErrors.inc({ code: error.code })
    client.send(encodeError(error), 'error')
    if (error.code !== ErrorCode.RATE_LIMITED) client.strike()
  }

  /**
   * Subscribes symbols with the request's delivery. Symbols already held
   * with another delivery move to this one (with a fresh snapshot).
   *
   * @param {Client} client
   * @param {import('./protocol.js').SymbolsRequest} req
   */
  subscribe (client, { symbols, id, mode, maxRate }) {
    if (this.draining()) {
      this.reject(client, { code: ErrorCode.DRAINING, message: 'gateway is draining; reconnect', id })
      return
    }
    const out = client.outbox
    const delivery = mode === DeliveryMode.DISTINCT ? DISTINCT : maxRate ?? FULL_RATE
    const held = out.holds()
    const fresh = symbols.filter((s) => !held(s))
    const moved = symbols.filter((s) => held(s) && out.deliveryOf(s) !== delivery)
    if (client.grants) {
      const denied = fresh.filter((s) => !client.grants?.(s))
      if (denied.length) {
        this.reject(client, { code: ErrorCode.NOT_ENTITLED, message: 'token does not grant these symbols', id, symbols: denied })
        return
      }
    }
    if (out.symbols.length + fresh.length > this.maxSubscriptions) {
      this.reject(client, {
        code: ErrorCode.TOO_MANY_SUBSCRIPTIONS,
        message: `at most ${this.maxSubscriptions} subscriptions per connection (holding ${out.symbols.length})`,
        id
      })
      return
    }
    out.subscribe(fresh, delivery)
    for (const s of moved) {
      this.hub.remove(s, out, out.deliveryOf(s))
      out.redeliver(s, delivery)
    }
    /** @type {string[]} */
    const snapped = []
    /** @type {string[]} */
    const quotes = []
    for (const s of fresh.concat(moved)) {
      const raw = this.hub.add(s, out, delivery)
      if (raw !== null) {
        snapped.push(s)
        quotes.push(raw)
      }
    }
    const echo = mode === undefined && maxRate === undefined ? undefined : { mode: mode ?? DeliveryMode.MERGE, ...(maxRate === undefined ? {} : { maxRate }) }
    client.send(encodeAck(id, out.symbols, echo), 'ack')
    if (quotes.length) out.sendSnap(snapped, encodeSnap(quotes))
  }

  /**
   * @param {Client} client
   * @param {string[]} symbols
   * @param {number | string | undefined} id
   */
  unsubscribe (client, symbols, id) {
    const out = client.outbox
    out.unsubscribe(symbols, (s, delivery) => this.hub.remove(s, out, delivery))
    client.send(encodeAck(id, out.symbols), 'ack')
  }

  /**
   * The socket closed: drop every subscription it held.
   *
   * @param {Client} client
   */
  onClose (client) {
    const out = client.outbox
    for (const s of out.symbols) this.hub.remove(s, out, out.deliveryOf(s))
    client.dispose()
  }
}
