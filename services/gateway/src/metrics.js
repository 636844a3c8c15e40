// Prometheus metrics of one gateway. A registry per instance (not the global
// one) so tests can run several gateways in one process.

import client from 'prom-client'
import { ServerOp } from '@wsps/protocol'
import { redisLinkMetrics } from '@wsps/shared/redis-metrics'

/**
 * Upper bounds of the quotes-per-frame buckets: the fan-out counts its q
 * frames per bucket (batchBucket()), each bucket one series of
 * wsps_gateway_frames_by_batch_total labelled by its range.
 */
export const BATCH_BUCKETS = Object.freeze([1, 4, 16, 64, Infinity])

/**
 * @param {number} n quotes in a frame (at least 1)
 * @returns {number} its index in BATCH_BUCKETS
 */
export function batchBucket (n) {
  let i = 0
  while (n > BATCH_BUCKETS[i]) i++
  return i
}

/** The label of each bucket: `1`, `2-4`, ..., `65+`. */
const BATCH_LABELS = BATCH_BUCKETS.map((upper, i) => {
  const lower = i === 0 ? 1 : BATCH_BUCKETS[i - 1] + 1
  return upper === Infinity ? `${lower}+` : lower === upper ? String(upper) : `${lower}-${upper}`
})

/** One real-time quote in this many is a receive-lag sample (a power of two: the hub masks a counter). */
export const RECEIVE_LAG_SAMPLE = 16

/** The ops of frames counted per frame, in the order their series are created. */
const FRAME_OPS = /** @type {const} */ ([ServerOp.HELLO, ServerOp.ACK, ServerOp.ERROR, ServerOp.PONG, ServerOp.SNAP, ServerOp.QUOTES, ServerOp.BARS, ServerOp.BAR, ServerOp.BOOK, ServerOp.LEVELS, ServerOp.STALE, ServerOp.FRESH])

/**
 * @param {string} node
 * @param {Record<string, string>} [labels] more labels on every series (a worker's number)
 */
export function createGatewayMetrics (node, labels = {}) {
  const registry = new client.Registry()
  registry.setDefaultLabels({ node, ...labels })
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 })
  const reg = { registers: [registry] }
  const messagesOut = new client.Counter({ name: 'wsps_gateway_messages_out_total', help: 'Frames sent to clients by op.', labelNames: ['op'], ...reg })
  return {
    registry,
    connections: new client.Gauge({ name: 'wsps_gateway_connections', help: 'Open client connections (WebSocket and SSE).', ...reg }),
    upgrades: new client.Counter({ name: 'wsps_gateway_upgrades_total', help: 'WebSocket upgrade attempts by result.', labelNames: ['result'], ...reg }),
    sseRequests: new client.Counter({ name: 'wsps_gateway_sse_requests_total', help: 'GET /sse requests by result (accepted streams and refusals).', labelNames: ['result'], ...reg }),
    closes: new client.Counter({ name: 'wsps_gateway_closes_total', help: 'Closed connections by close code.', labelNames: ['code'], ...reg }),
    subscriptions: new client.Gauge({ name: 'wsps_gateway_subscriptions', help: 'Connection-symbol subscriptions held.', ...reg }),
    symbols: new client.Gauge({ name: 'wsps_gateway_symbols', help: 'Symbols with at least one local subscriber.', ...reg }),
    redisChannels: new client.Gauge({ name: 'wsps_gateway_redis_channels', help: 'Redis channels this process is subscribed to.', ...reg }),
    ...redisLinkMetrics('wsps_gateway', reg),
    staleSymbols: new client.Gauge({ name: 'wsps_gateway_stale_symbols', help: 'Symbols whose subscribers were told `stale` (their feed interrupted) and not yet `fresh`.', ...reg }),
    sessionCap: new client.Counter({ name: 'wsps_gateway_session_cap_total', help: 'Sessions counted against WSPS_MAX_SESSIONS_PER_USER by outcome: taken (a place among the user\'s), refused (the user held the cap: 4011), evicted (a session here closed for a newer one of its user: 4012).', labelNames: ['outcome'], ...reg }),
    isolations: new client.Counter({ name: 'wsps_gateway_isolations_total', help: 'Times this gateway found itself cut off from Redis while another gateway reached it, and sent its clients elsewhere (1012).', ...reg }),
    resyncs: new client.Counter({ name: 'wsps_gateway_resyncs_total', help: 'Resubscribe-and-snapshot passes after a Redis reconnect.', ...reg }),
    restoreTimeouts: new client.Counter({ name: 'wsps_gateway_restore_timeouts_total', help: 'Symbols whose channel was not restored within WSPS_RESTORE_DEADLINE_MS while Redis answered: their subscribers were closed with 1012 to go to another gateway.', ...reg }),
    subscribeRetries: new client.Counter({ name: 'wsps_gateway_subscribe_retries_total', help: 'Subscribe passes (SUBSCRIBE + reads) that failed and were tried again with backoff (a shard failing over, Redis away).', ...reg }),
    gapFills: new client.Counter({ name: 'wsps_gateway_gap_fills_total', help: 'Symbols resumed after a Redis reconnect: `filled` from history (nothing lost), `snapshot` where history could not cover the hole (subscribers got a snap marked recovered:false).', labelNames: ['result'], ...reg }),
    gapTicks: new client.Counter({ name: 'wsps_gateway_gap_ticks_total', help: 'Ticks missed during a Redis reconnect and delivered from history.', ...reg }),
    recoveries: new client.Counter({ name: 'wsps_gateway_recoveries_total', help: 'Symbols clients resumed with `since`, by delivery mode and result (recovered, or not: a snap).', labelNames: ['mode', 'result'], ...reg }),
    recoveredTicks: new client.Counter({ name: 'wsps_gateway_recovered_ticks_total', help: 'Ticks replayed from history to distinct subscribers that resumed with `since`.', ...reg }),
    quotesIn: new client.Counter({ name: 'wsps_gateway_quotes_in_total', help: 'Quotes received from Redis.', ...reg }),
    staleIn: new client.Counter({ name: 'wsps_gateway_quotes_stale_total', help: 'Quotes received with a seq not above the held one (dropped).', ...reg }),
    messagesOut,
    /** Pre-bound children: the hot path must not hash label sets per frame. */
    framesOut: /** @type {Record<import('@wsps/protocol').ServerOpName, client.Counter.Internal>} */ (Object.fromEntries(
      FRAME_OPS.map((op) => [op, messagesOut.labels({ op })])
    )),
    quotesOut: new client.Counter({ name: 'wsps_gateway_quotes_out_total', help: 'Quote entries delivered to clients (a frame carries several).', ...reg }),
    bytesOut: new client.Counter({ name: 'wsps_gateway_bytes_out_total', help: 'Payload bytes sent to clients.', ...reg }),
    /** Counted per pass, not per frame: a histogram observe per frame is measurable on the hot path. */
    framesByBatch: (() => {
      const c = new client.Counter({ name: 'wsps_gateway_frames_by_batch_total', help: 'q frames by quotes per frame (batch size).', labelNames: ['batch'], ...reg })
      return BATCH_LABELS.map((batch) => c.labels({ batch }))
    })(),
    conflated: new client.Counter({ name: 'wsps_gateway_conflated_total', help: 'Updates a slow reader skipped (it gets the latest quote of the symbol as a snapshot when it catches up).', ...reg }),
    slowClients: new client.Gauge({ name: 'wsps_gateway_slow_clients', help: 'Connections over the send high-water mark right now.', ...reg }),
    publishToSend: new client.Histogram({
      name: 'wsps_gateway_publish_to_send_seconds',
      help: 'Quote age: fetcher ts to the end of the socket writes that handed it to its last subscriber of a fan-out pass (real-time quotes and deltas).',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      ...reg
    }),
    // Against publish_to_send it tells where a late quote was late: on its
    // way in (fetchers, Redis, the host's other core) or in the fan-out.
    // Sampled: an observe per quote would be a cost per tick on the hot path.
    receiveLag: /** @type {client.Histogram | null} */ (new client.Histogram({
      name: 'wsps_gateway_receive_lag_seconds',
      help: `Quote age when the gateway reads it from Redis: fetcher ts to the hub, one real-time quote in ${RECEIVE_LAG_SAMPLE} sampled.`,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 1],
      ...reg
    })),
    barSeries: new client.Gauge({ name: 'wsps_gateway_bar_series', help: 'Bar series (symbol and interval) this process builds, by timeline (realtime, delayed).', labelNames: ['timeline'], ...reg }),
    barSubscriptions: new client.Gauge({ name: 'wsps_gateway_bar_subscriptions', help: 'Connection bar subscriptions (symbol and interval) held, by timeline (realtime, delayed).', labelNames: ['timeline'], ...reg }),
    books: new client.Gauge({ name: 'wsps_gateway_books', help: 'Order books this process holds (a replica each, while some connection holds the book or waits for it).', ...reg }),
    bookReads: new client.Counter({ name: 'wsps_gateway_book_reads_total', help: 'Whole-book reads from Redis, by cause: first (a book opened), gap (a message skipped ahead), resync (a reconnect or moved channel), retry (a read failed).', labelNames: ['cause'], ...reg }),
    booksUnsynced: new client.Counter({ name: 'wsps_gateway_books_unsynced_total', help: 'Books whose subscribers were sent an out-of-sync snapshot because this gateway\'s feed of them was interrupted.', ...reg }),
    booksRewound: new client.Counter({ name: 'wsps_gateway_books_rewound_total', help: 'Books read from Redis behind the one this gateway had delivered, in the same epoch (writes Redis lost, as in a failover to a replica that had not got them): sent whole as a snapshot.', ...reg }),
    clientErrors: new client.Counter({ name: 'wsps_gateway_client_errors_total', help: 'Error replies to clients by code.', labelNames: ['code'], ...reg })
  }
}

/** @typedef {ReturnType<typeof createGatewayMetrics>} GatewayMetrics */
