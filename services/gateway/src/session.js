// What a connected client may ask for: sub, unsub, ping. Applies limits and
// entitlements, then talks to the hub. Every rejection is a coded error.

import { CloseCode, ErrorCode } from '@wsps/protocol'
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
        this.subscribe(client, req.symbols, req.id)
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
    client.alive = true
    if (client.takeMessage()) {
      client.limitedDrops = 0
      return true
    }
    // Answer the first dropped message of a flood, then drop silently:
    // replying to each would let a client amplify its own flood.
    if (client.limitedDrops++ === 0) this.reject(client, { code: ErrorCode.RATE_LIMITED, message: 'too many messages; slow down' })
    if (client.limitedDrops > 2 * client.ctx.messageRate.burst) client.closeWith(CloseCode.RATE_LIMIT_EXCEEDED, 'rate limit exceeded')
    return false
  }

  /**
   * @param {Client} client
   * @param {ProtocolError} error
   */
  reject (client, error) {
    this.metrics.clientErrors.inc({ code: error.code })
    client.send(encodeError(error), 'error')
    if (error.code !== ErrorCode.RATE_LIMITED && !client.takeStrike()) {
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
    const held = client.holds()
    const fresh = symbols.filter((s) => !held(s))
    if (client.grants) {
      const denied = fresh.filter((s) => !client.grants?.(s))
      if (denied.length) {
        this.reject(client, { code: ErrorCode.NOT_ENTITLED, message: 'token does not grant these symbols', id, symbols: denied })
        return
      }
    }
    if (client.subs.length + fresh.length > this.maxSubscriptions) {
      this.reject(client, {
        code: ErrorCode.TOO_MANY_SUBSCRIPTIONS,
        message: `at most ${this.maxSubscriptions} subscriptions per connection (holding ${client.subs.length})`,
        id
      })
      return
    }
    // concat allocates exactly what is held; push would leave slack in
    // every idle connection's list.
    if (fresh.length) client.subs = client.subs.concat(fresh)
    /** @type {string[]} */
    const snapped = []
    /** @type {string[]} */
    const quotes = []
    for (const s of fresh) {
      const raw = this.hub.add(s, client)
      if (raw !== null) {
        snapped.push(s)
        quotes.push(raw)
      }
    }
    client.send(encodeAck(id, client.subs), 'ack')
    if (quotes.length) client.sendSnap(snapped, encodeSnap(quotes))
  }

  /**
   * @param {Client} client
   * @param {string[]} symbols
   * @param {number | string | undefined} id
   */
  unsubscribe (client, symbols, id) {
    const gone = new Set(symbols)
    /** @type {string[]} */
    const kept = []
    for (const s of client.subs) {
      if (gone.has(s)) this.hub.remove(s, client)
      else kept.push(s)
    }
    client.subs = kept
    client.drop(symbols)
    client.send(encodeAck(id, kept), 'ack')
  }

  /**
   * The socket closed: drop every subscription it held.
   *
   * @param {Client} client
   */
  onClose (client) {
    for (const s of client.subs) this.hub.remove(s, client)
    client.subs = []
    client.dispose()
  }
}
