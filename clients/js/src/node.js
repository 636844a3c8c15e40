// @wsps/client for Node: the same client and exports as index.js, with one
// difference: its WebSocket defaults to the `ws` package when that is
// installed (an optional peer dependency), else to Node's global WebSocket.
// ws can drop a dead peer's socket at once (terminate(), which the silence
// check uses) instead of waiting for a close handshake that never comes.
// Browsers and bundlers get index.js (package.json "exports"), so they
// never see this import.

import { WspsClient as Client } from './client.js'

export { backoffDelay, Status, Transport } from './client.js'
export { BOOK_DEPTHS } from './book.js'
export { AUTH_CLOSE_CODES, BAR_INTERVALS, ClientCloseCode, CloseCode, DeliveryMode, EPOCH_PATTERN, ErrorCode, Limits, NO_RECONNECT_CODES, PROTOCOL_VERSION, QuoteReceiver } from './protocol.js'

/**
 * @typedef {import('./types.js').StatusState} StatusState
 * @typedef {import('./types.js').Quote} Quote
 * @typedef {import('./types.js').Delta} Delta
 * @typedef {import('./types.js').Hello} Hello
 * @typedef {import('./types.js').StatusInfo} StatusInfo
 * @typedef {import('./types.js').ErrorInfo} ErrorInfo
 * @typedef {import('./types.js').QuoteEvent} QuoteEvent
 * @typedef {import('./types.js').GapEvent} GapEvent
 * @typedef {import('./types.js').WspsEvents} WspsEvents
 * @typedef {import('./types.js').SocketLike} SocketLike
 * @typedef {import('./types.js').SocketConstructor} SocketConstructor
 * @typedef {import('./types.js').Delivery} Delivery
 * @typedef {import('./types.js').WspsClientOptions} WspsClientOptions
 * @typedef {import('./types.js').Bar} Bar
 * @typedef {import('./types.js').BarSeries} BarSeries
 * @typedef {import('./types.js').BarOptions} BarOptions
 * @typedef {import('./types.js').HeldBook} HeldBook
 * @typedef {import('./types.js').BookSubscribed} BookSubscribed
 * @typedef {import('./types.js').BookEvent} BookEvent
 * @typedef {import('./types.js').BarsEvent} BarsEvent
 * @typedef {import('./types.js').BarEvent} BarEvent
 */

// A name in a variable: the optional peer is looked up at run time only,
// so neither a bundler nor the type check insists on it.
const WS_PACKAGE = 'ws'

/** @type {SocketConstructor | undefined} */
const NodeWebSocket = await import(WS_PACKAGE).then((ws) => ws.WebSocket, () => globalThis.WebSocket)

export class WspsClient extends Client {
  /** @param {WspsClientOptions} [options] as for the browser; `WebSocket` defaults to ws, else Node's own */
  constructor (options = {}) {
    super({ ...options, WebSocket: options.WebSocket ?? NodeWebSocket })
  }
}
