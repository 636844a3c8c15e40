// The WebSocket transport of a Connection: a `ws` socket that already has
// the members a Transport needs (connection.js), plus the connection it
// carries, so one set of event handlers per server serves every socket (six
// closures per connection were a tenth of an idle connection's heap).

import { WebSocket } from 'ws'

const TEXT = Object.freeze({ binary: false })

export class WsTransport extends WebSocket {
  /** @type {import('./connection.js').Connection | null} */
  connection = null

  /**
   * Every frame the gateway writes is text; `ws` would send a Buffer as
   * binary.
   *
   * @param {string | Buffer} data
   */
  send (data) {
    super.send(data, TEXT)
  }
}
