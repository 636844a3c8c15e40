// @wsps/client for browsers and bundlers: the client, the words of its
// events and the protocol's codes a program matches on. One dependency,
// @bufbuild/protobuf (the runtime of the generated codecs of the binary
// encoding); besides, the standard WebSocket, fetch, URL, timers and JSON.

export { WspsClient, backoffDelay, Status, Transport } from './client.js'
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
 * @typedef {import('./types.js').BarsEvent} BarsEvent
 * @typedef {import('./types.js').BarEvent} BarEvent
 * @typedef {import('./types.js').HeldBook} HeldBook
 * @typedef {import('./types.js').BookSubscribed} BookSubscribed
 * @typedef {import('./types.js').BookEvent} BookEvent
 */
