// The gateway's view of the message broker: a small interface so the hub
// knows nothing about Redis. broker-redis.js is the implementation in
// service; broker-nats.js (NATS JetStream) states its own guarantees, and
// harness/testkit/test/broker-conformance.test.js holds both to the same
// cases.
//
// Guarantees an implementation must state: Redis PUB/SUB is at-most-once.
// A quote published while the subscriber connection is down is lost, and
// Redis may drop a subscriber whose output buffer overflows. What covers
// both is the history the publish script keeps beside each seq: after every
// reconnect the hub resubscribes, reads what each symbol missed from
// history(), and delivers it before live quotes (gap fill); only where the
// history cannot cover the hole (off, trimmed, expired, a new epoch) does a
// symbol get a fresh snapshot. A quote whose seq skips ahead (a dropped
// message) is held back until the ticks in between are read from history
// when the symbol has distinct subscribers; for merge readers alone it is
// sent as a delta with an explicit `base`.

/**
 * @typedef {object} BrokerHandlers
 * @property {(symbol: string, raw: string, traceparent?: string | null) => void} onQuote a full quote (JSON,
 *   without its trace) for a subscribed symbol, and the traceparent of its publish when it is traced
 * @property {(symbols?: string[]) => void} onReconnect the subscription connection came back: every
 *   channel is gone (symbols undefined), or, on a cluster, those of the symbols named
 * @property {(symbol: string, raw: string) => void} [onBook] a message of a subscribed book channel
 *   (JSON as published; books/book-feed.js, BookMessage)
 * @property {(symbols?: string[]) => void} [onBooksLost] book channels may have missed messages (a
 *   reconnect: every one, symbols undefined; on a cluster, those named): their books are read again
 * @property {(up: boolean, conn: string) => void} [onStatus]
 * @property {(conn: string) => void} [onFailover] a connection is ready again on another primary (a Sentinel failover)
 * @property {(seconds: number, conn: string) => void} [onOutage] a connection is ready again after this long without a primary
 * @property {(conn: string) => void} [onSilent] a link did not answer its PING in time and was torn down
 * @property {(symbols: string[] | undefined, since: number, now: boolean) => void} [onInterrupted] the feed of
 *   these symbols (undefined: every one) stopped at `since` (wall clock, ms): the link was lost (now false)
 *   or found silent (now true); onReconnect follows when it is back
 * @property {(symbols: string[]) => void} [onResumed] the feed of these symbols, interrupted, goes on
 *   where it stopped with nothing missed (no resync needed; the delayed timeline's pumps)
 *
 * @typedef {object} Broker quotes it hands over (onQuote, latest, history) never
 *   hold their trace (published.js, untraced)
 * @property {(symbols: string[]) => Promise<string[]>} subscribe resolves with the symbols whose
 *   channel could not be subscribed (on a cluster, a shard failing over); rejects when none could
 * @property {(symbols: string[]) => Promise<void>} unsubscribe
 * @property {(symbols: string[]) => Promise<(string | null | Error)[]>} latest latest full quote per
 *   symbol, null where none, an Error where its read failed (a cluster shard failing over)
 * @property {(symbol: string, fromSeq: number, toSeq: number | null, max: number) => Promise<string[]>} history
 *   the symbol's published quotes with seq from fromSeq to toSeq (null: the
 *   newest), in seq order, at most max; [] when history is off or expired
 * @property {(symbols: string[], leaseMs: number) => Promise<void>} renewDemand ask the fetchers to keep fetching these
 * @property {(pins: [symbol: string, seq: number][], ttlMs: number) => Promise<void>} keepHistory ask the
 *   fetchers to keep each symbol's history from that seq on (for ttlMs; renewed by the caller): a
 *   delayed timeline reads it later than the history would otherwise be kept
 * @property {(symbols: string[]) => string[][]} partition the symbols in groups whose subscribe
 *   and reads fail apart (on a cluster, one per shard; else one)
 * @property {() => boolean} ready both connections usable and answering their PINGs in time
 * @property {() => number} channelCount channels currently subscribed
 * @property {() => Promise<void>} close
 */

export {}
