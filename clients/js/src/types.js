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
 * @typedef {object} Bar one interval of ticks (docs/protocol.md, "Bars")
 * @property {number} t start of the interval, ms since the epoch (a multiple of the interval)
 * @property {number} o open
 * @property {number} h high
 * @property {number} l low
 * @property {number} c close
 * @property {number} v volume traded in it
 * @property {number} n ticks in it
 *
 * @typedef {object} BarsEvent the backfill of a bar subscription: once after each (re)subscription
 * @property {string} symbol
 * @property {string} interval `1s`, `1m` or `5m`
 * @property {Bar[]} bars closed bars, oldest first (at most the backfill asked for)
 * @property {Bar | null} current the open bar, if any
 * @property {boolean} delayed the bars are delayed (a delayed grant)
 *
 * @typedef {object} BarEvent a live bar update
 * @property {string} symbol
 * @property {string} interval
 * @property {Bar} bar the open bar as it is now, or (closed) its final version
 * @property {boolean} closed final: exactly once per bar; the next update starts a new bar
 * @property {boolean} delayed
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
 * @property {{symbols: string[], error: ErrorInfo}} rejected symbols dropped from the watch set because the server refused them
 * @property {BarsEvent} bars the backfill of a bar subscription (subscribeBars)
 * @property {BarEvent} bar a live bar update
 * @property {{symbols: string[], delayMs: number | null}} delayed the set of held symbols the gateway serves
 *   delayed changed (an ack said so); delayMs: by how much (e.g. 900000: "delayed 15 min")
 * @property {GapEvent} gap a delta did not continue the held quote; the symbol is being resubscribed
 * @property {{symbol: string, recovered: boolean}} recovery a reconnect resumed the symbol from the quote held:
 *   recovered true, nothing was lost (distinct: the missed ticks were replayed as quote events); false, the
 *   gateway's history did not cover the time away and a fresh snapshot replaced the quote (ticks were lost)
 *
 * @typedef {{readyState: number, send (data: string): void, close (code?: number, reason?: string): void, terminate? (): void,
 *   onopen: any, onmessage: any, onclose: any, onerror: any}} SocketLike
 * @typedef {new (url: string) => SocketLike} SocketConstructor
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
 * @property {number} [resyncGraceMs] how long to wait for the snapshot of a resubscribed symbol before resubscribing again (default 5000)
 * @property {number} [retryRejectedMs] delay before re-sending subscriptions after RATE_LIMITED or INTERNAL (default 1000)
 * @property {() => number} [random] for tests; default Math.random
 * @property {() => Promise<string> | string} [getToken] a JWT for the gateway, asked for before every connection and before the current token expires
 * @property {'auto' | 'websocket' | 'sse'} [transport] auto (default): WebSocket, SSE when there is none or its upgrade fails
 * @property {typeof fetch} [fetch] for the SSE transport; default globalThis.fetch
 */
