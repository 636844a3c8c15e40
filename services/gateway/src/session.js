// What a connected client may ask for: sub, unsub, ping. Applies limits and
// entitlements, then talks to the hub. Every rejection is a coded error.

import { CloseCode, ErrorCode } from '../public/protocol.js'
import { encodeAck, encodeError, encodePong, encodeSnap, parseClientFrame } from './protocol.js'

/**
 * @typedef {import('./client.js').Client} Client
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
    client.alive = true
    if (!client.rate.take()) {
      // Answer the first dropped message of a flood, then drop silently:
      // replying to each would let a client amplify its own flood.
      if (client.limitedDrops++ === 0) this.reject(client, { code: ErrorCode.RATE_LIMITED, message: 'too many messages; slow down' })
      if (client.limitedDrops > 2 * client.rate.burst) client.closeWith(CloseCode.RATE_LIMIT_EXCEEDED, 'rate limit exceeded')
      return
    }
    client.limitedDrops = 0
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
        this.subscribe(client, req.symbols, req.id)
        return
      case 'unsub':
        this.unsubscribe(client, req.symbols, req.id)
    }
  }

  /**
   * @param {Client} client
   * @param {ProtocolError} error
   */
  reject (client, error) {
    this.metrics.clientErrors.inc({ code: error.code })
    client.send(encodeError(error), 'error')
    if (error.code !== ErrorCode.RATE_LIMITED && !client.strikes.take()) {
      client.closeWith(CloseCode.POLICY_VIOLATION, 'too many invalid messages')
    }
  }

  /**
   * @param {Client} client
   * @param {string[]} symbols
   * @param {number | string | undefined} id
   */
  subscribe (client, symbols, id) {
    if (this.draining()) {
      this.reject(client, { code: ErrorCode.DRAINING, message: 'gateway is draining; reconnect', id })
      return
    }
    const fresh = symbols.filter((s) => !client.subs.has(s))
    if (client.grants) {
      const denied = fresh.filter((s) => !client.grants?.(s))
      if (denied.length) {
        this.reject(client, { code: ErrorCode.NOT_ENTITLED, message: 'token does not grant these symbols', id, symbols: denied })
        return
      }
    }
    if (client.subs.size + fresh.length > this.maxSubscriptions) {
      this.reject(client, {
        code: ErrorCode.TOO_MANY_SUBSCRIPTIONS,
        message: `at most ${this.maxSubscriptions} subscriptions per connection (holding ${client.subs.size})`,
        id
      })
      return
    }
    /** @type {string[]} */
    const snapped = []
    /** @type {string[]} */
    const quotes = []
    for (const s of fresh) {
      client.subs.add(s)
      const raw = this.hub.add(s, client)
      if (raw !== null) {
        snapped.push(s)
        quotes.push(raw)
      }
    }
    client.send(encodeAck(id, [...client.subs]), 'ack')
    if (quotes.length) client.sendSnap(snapped, encodeSnap(quotes))
  }

  /**
   * @param {Client} client
   * @param {string[]} symbols
   * @param {number | string | undefined} id
   */
  unsubscribe (client, symbols, id) {
    for (const s of symbols) {
      if (client.subs.delete(s)) this.hub.remove(s, client)
    }
    client.drop(symbols)
    client.send(encodeAck(id, [...client.subs]), 'ack')
  }

  /**
   * The socket closed: drop every subscription it held.
   *
   * @param {Client} client
   */
  onClose (client) {
    for (const s of client.subs) this.hub.remove(s, client)
    client.subs.clear()
    client.dispose()
  }
}
