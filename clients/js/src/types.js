// The client's public vocabulary: the states and transports the page shows,
// and the shapes of its options, events and frames. The entry points
// (index.js, node.js) re-export all of it.

/** The transports, in the words the page shows. */
export const Transport = Object.freeze({
  WEBSOCKET: 'websocket',
  SSE: 'sse'
})

/** Connection states, in the words the page shows. */
export const Status = Object.freeze({
  /** Created, connect() not called yet. */
  IDLE: 'idle',
  /** First connection attempt. */
  CONNECTING: 'connecting',
  /** `hello` received: subscriptions are (being) restored and quotes flow. */
  LIVE: 'live',
  /** Lost or never got a connection; retrying (see `retryAt`). */
  RECONNECTING: 'reconnecting',
  /** Not connected and not retrying: close() was called or the server said not to. */
  OFFLINE: 'offline'
})

/**
 * @typedef {typeof Status[keyof typeof Status]} StatusState
 *
 * @typedef {object} Quote a full quote (see docs/protocol.md)
 * @property {string} symbol
 * @property {number} seq
 * @property {number} ts ms since the epoch, when the fetcher produced it
 * @property {number} bid
 * @property {number} ask
 * @property {number} last
 * @property {number} bidSize
 * @property {number} askSize
 * @property {number} volume
 * @property {number} open
 * @property {number} high
 * @property {number} low
 * @property {number} prevClose
 * @property {string} [epoch] the history `seq` counts in (gateways whose fetchers keep history); a
 *   reconnect resumes from seq and epoch
 * @property {true} [delayed] the quote is as it was the gateway's delay (WSPS_DELAY_MS, 15 min by default)
 *   ago, never newer: the token grants the symbol delayed only (docs/protocol.md, "Delayed grants");
 *   absent on real-time quotes
 *
 * @typedef {{symbol: string, seq: number, ts: number, base?: number} & Partial<Quote>} Delta
 *
 * @typedef {object} Hello
 * @property {'hello'} op
 * @property {number} v
 * @property {string} node
 * @property {number} heartbeatMs
 * @property {{maxSubscriptions: number, maxPayload: number, ratePerSec: number, rateBurst: number, batchMs: number}} limits
 * @property {number} [expiresInMs] auth on and the token has `exp`: ms until the connection closes with 4002 unless the token is refreshed
 *
 * @typedef {object} StatusInfo
 * @property {StatusState} state
 * @property {string | null} url the URL in use, or tried next
 * @property {string | null} node `hello.node` of the current (or last) connection
 * @property {number} attempt failed connection attempts in a row
 * @property {number | null} retryAt when the next attempt starts (ms since the epoch), while waiting for it
 * @property {number | null} retryInMs the delay chosen for it (backoff, or the 1012 jitter)
 * @property {number | null} closeCode close code of the last connection
 * @property {string} closeReason
 * @property {'websocket' | 'sse' | null} transport of the current (or last) connection
 *
 * @typedef {object} ErrorInfo
 * @property {string} code an ErrorCode, or CLOSED / CANCELLED / BAD_SERVER_FRAME from the client itself
 * @property {string} message
 * @property {string[]} [symbols]
 * @property {number | string} [id]
 * @property {string} [bars] an SSE stream refused for its bars: their interval
 * @property {number} [book] an SSE stream refused for its books: their depth
 *
 * @typedef {object} QuoteEvent
 * @property {string} symbol
 * @property {Quote} quote the full quote after this update (a new object per update)
 * @property {Quote | null} previous the one before, if any
 * @property {boolean} snapshot true when it came from a `snap` (a (re)subscription), not a tick
 * @property {boolean} delayed true when the quote is delayed (`quote.delayed`): show it as such
 * @property {number} latencyMs receive time minus `quote.ts` (includes clock skew; for a delayed
 *   quote about the delay)
 *
 * @typedef {object} Bar one bar (docs/protocol.md, Bars)
 * @property {number} t its start, ms since the epoch (floor(ts / interval) x interval)
 * @property {number} o first `last` of its ticks
 * @property {number} h highest
 * @property {number} l lowest
 * @property {number} c last
 * @property {number} v volume traded in it
 * @property {number} n ticks in it
 *
 * @typedef {object} BarSeries the bars held of one symbol and interval (updated in place)
 * @property {string} symbol
 * @property {string} interval `1s`, `1m` or `5m`
 * @property {Bar[]} bars closed bars, oldest first (at most 500)
 * @property {Bar | null} current the open bar, if any
 * @property {boolean} complete false when the gateway's history held fewer closed bars than the backfill asked for
 * @property {boolean} delayed the bars are built from delayed quotes (a delayed grant): show them as such
 *
 * @typedef {object} BarOptions how subscribeBars() asks (docs/protocol.md, Bars)
 * @property {number} [backfill] closed bars sent first, 0-500 (default 50); asked again on every reconnect
 * @property {boolean} [delayed] true: delayed bars even where real-time is granted; false: real-time only
 *   (DELAYED_ONLY where the token grants delayed only); default: as the token grants
 *
 * @typedef {object} BarsEvent a series (re)started from its backfill: after a subscribeBars(), and after every reconnect
 * @property {string} symbol
 * @property {string} interval
 * @property {BarSeries} series
 * @property {boolean} delayed
 *
 * @typedef {object} BarEvent a live bar
 * @property {string} symbol
 * @property {string} interval
 * @property {Bar} bar
 * @property {boolean} closed true: the bar's final value (once per bar); false: the open bar's latest
 * @property {BarSeries} series the series after it
 * @property {boolean} delayed
 *
 * @typedef {import('./book-receiver.js').HeldBook} HeldBook an order book as held (docs/protocol.md, Order books)
 * @typedef {import('./books.js').BookSubscribed} BookSubscribed what subscribeBook() resolves with: the depth, the
 *   symbols subscribed, and `noBook`: those the gateway has no book of (NO_BOOK; no longer wanted)
 *
 * @typedef {object} BookEvent an order book changed
 * @property {string} symbol
 * @property {HeldBook} book the book held after the change (a new object per change)
 * @property {boolean} snapshot it came whole (after a subscribe, a resync, a reconnect, or the feed starting over)
 *
 * @typedef {object} GapEvent
 * @property {string} symbol
 * @property {number | null} heldSeq
 * @property {number} seq
 * @property {number} base
 *
 * @typedef {object} WspsEvents
 * @property {StatusInfo} status the connection state changed
 * @property {Hello} hello a connection was established
 * @property {QuoteEvent} quote a symbol's quote changed
 * @property {ErrorInfo} error the server rejected something (or the client gave up on it)
 * @property {{symbols: string[], error: ErrorInfo, interval?: string, book?: true}} rejected symbols dropped from the watch set
 *   because the server refused them (`interval`: their bars of this interval, not their quotes; `book`: their order books)
 * @property {BarsEvent} bars a bar series (re)started from its backfill
 * @property {BarEvent} bar a live bar of a series
 * @property {BookEvent} book an order book changed (subscribeBook())
 * @property {{symbols: string[], delayMs: number | null}} delayed the set of held symbols the gateway serves
 *   delayed changed (an ack said so; see isDelayed()); delayMs: by how much (e.g. 900000: "delayed 15 min")
 * @property {GapEvent} gap a delta did not continue the held quote; the symbol is being resubscribed
 * @property {{symbol: string, recovered: boolean}} recovery a reconnect resumed the symbol from the quote held (or a
 *   subscribe() from its `since`):
 *   recovered true, nothing was lost (distinct: the missed ticks were replayed as quote events); false, the
 *   gateway's history did not cover the time away and a fresh snapshot replaced the quote (ticks were lost)
 * @property {{symbols: string[], since: number}} stale these symbols, live until now, must not be shown as live
 *   any more: what is held of them is from `since` (ms since the epoch) or before. The gateway's feed of them is
 *   interrupted (a `stale` frame), or the connection was lost (`since`: its last frame); see isStale(), staleSince()
 * @property {{symbols: string[]}} fresh these symbols are live again: the gateway said `fresh` (what was missed
 *   came before it), and those a lost connection left stale were recovered or snapshotted on a new one
 *
 * @typedef {{readyState: number, send (data: string | Uint8Array): void, close (code?: number, reason?: string): void, terminate? (): void,
 *   onopen: any, onmessage: any, onclose: any, onerror: any, protocol?: string, binaryType?: string}} SocketLike
 *   protocol: the subprotocol the gateway chose (a WebSocket's); binaryType: how binary messages arrive
 * @typedef {new (url: string, protocols?: string[]) => SocketLike} SocketConstructor
 *
 * @typedef {object} Delivery how the server delivers a symbol (docs/protocol.md, "Delivery modes")
 * @property {'merge' | 'distinct'} [mode] merge (default): ticks meeting in one pass merge into one
 *   update; distinct: every tick, in order, never merged
 * @property {number} [maxRate] merge only: at most this many updates per second per symbol (0.1-1000)
 *
 * @typedef {object} WspsClientOptions
 * @property {string | string[]} [url] gateway URL(s), tried in turn on each reconnect; default: same-origin `/ws`
 * @property {SocketConstructor} [WebSocket] default: globalThis.WebSocket
 * @property {Iterable<string>} [symbols] initial watch set
 * @property {number} [initialBackoffMs] first retry delay ceiling (default 500)
 * @property {number} [maxBackoffMs] retry delay cap (default 30000)
 * @property {number} [restartJitterMs] retry delay after a 1012 drain is random in [0, this) (default 500)
 * @property {number} [stableMs] a connection live this long resets the backoff (default 5000)
 * @property {number} [connectTimeoutMs] no `hello` within this: try again (default 10000)
 * @property {number} [heartbeatMs] used until `hello` says otherwise (default 15000)
 * @property {number} [quietMs] WebSocket: a connection that received nothing for this long is probed
 *   with a ping; if nothing arrives within this long more, its symbols are told `stale` (since the
 *   last frame: a frozen gateway) and `fresh` at the next frame (default 1500; 0: never)
 * @property {number} [resyncGraceMs] how long to wait for the snapshot of a resubscribed symbol before resubscribing again (default 5000)
 * @property {number} [retryRejectedMs] delay before re-sending subscriptions after RATE_LIMITED or INTERNAL (default 1000)
 * @property {() => number} [random] for tests; default Math.random
 * @property {() => Promise<string> | string} [getToken] a JWT for the gateway, asked for before every connection and before the current token expires
 * @property {'auto' | 'websocket' | 'sse'} [transport] auto (default): WebSocket, SSE when there is none or its upgrade fails
 * @property {'auto' | 'json'} [encoding] a WebSocket's frames: auto (default) asks for Protobuf (`wsps.v1.proto`)
 *   first and JSON (`wsps.v1.json`) second, and reads whichever the gateway chose; json asks for JSON only. The
 *   events and objects the client gives are the same either way (docs/protocol.md, Binary encoding). SSE is JSON
 * @property {typeof fetch} [fetch] for the SSE transport; default globalThis.fetch
 */
