// Prometheus metrics of one quote-fetcher process.

import client from 'prom-client'
import { redisLinkMetrics } from '@wsps/shared/redis-metrics'
import { REFUSED } from '@wsps/shared/scripts'

/** @param {string} node */
export function createFetcherMetrics (node) {
  const registry = new client.Registry()
  registry.setDefaultLabels({ node })
  client.collectDefaultMetrics({ register: registry })
  const reg = { registers: [registry] }
  const refused = new client.Counter({ name: 'wsps_fetcher_quotes_refused_total', help: 'Quotes the publish script refused, by reason: pushed (a provider quote of a symbol under a push lease), fenced (fetched under a claim another fetcher\'s newer one superseded: this one was paused or cut off from Redis), old (its ts is older than the symbol\'s newest published), late (the call reached Redis past WSPS_PUBLISH_DEADLINE_MS).', labelNames: ['reason'], ...reg })
  // Every reason from the start, at 0: a rate over it is defined before the first refusal.
  for (const reason of Object.values(REFUSED)) refused.inc({ reason }, 0)
  return {
    registry,
    scheduled: new client.Counter({ name: 'wsps_fetcher_scheduled_symbols_total', help: 'Symbols this replica turned into jobs (scheduler ticks).', ...reg }),
    jobsPushed: new client.Counter({ name: 'wsps_fetcher_jobs_pushed_total', help: 'Jobs this replica pushed to the queue.', ...reg }),
    leasesExpired: new client.Counter({ name: 'wsps_fetcher_leases_expired_total', help: 'Symbols dropped because no gateway renewed their lease.', ...reg }),
    jobs: new client.Counter({ name: 'wsps_fetcher_jobs_total', help: 'Jobs pulled by this replica, by result.', labelNames: ['result'], ...reg }),
    fetchSeconds: new client.Histogram({ name: 'wsps_fetcher_fetch_seconds', help: 'Provider fetch time per job.', buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], ...reg }),
    books: new client.Counter({ name: 'wsps_fetcher_book_writes_total', help: 'Order book writes, by result: written, failed (Redis did not answer), or refused: pushed (the book is pushed through the publish API), moved (another writer updated it first), nobook (a delta without a book in sync), toolarge (a side past 1000 levels), old (at or below the source\'s sequence number kept), gap (past it: written as out of sync instead).', labelNames: ['result'], ...reg }),
    published: new client.Counter({ name: 'wsps_fetcher_quotes_published_total', help: 'Quotes published to Redis.', ...reg }),
    demand: new client.Gauge({ name: 'wsps_fetcher_demand_symbols', help: 'Symbols with a live lease (sampled).', ...reg }),
    queue: new client.Gauge({ name: 'wsps_fetcher_queue_length', help: 'Jobs waiting in the queue (sampled).', ...reg }),
    activeJobs: new client.Gauge({ name: 'wsps_fetcher_active_jobs', help: 'Jobs this replica is working on.', ...reg }),
    upstreamRequests: new client.Counter({ name: 'wsps_fetcher_upstream_requests_total', help: 'http provider requests by result.', labelNames: ['result'], ...reg }),
    breaker: new client.Gauge({ name: 'wsps_fetcher_upstream_breaker_state', help: 'http provider circuit breaker: 0 closed, 1 half-open, 2 open.', ...reg }),
    skippedPushed: new client.Counter({ name: 'wsps_fetcher_pushed_symbols_skipped_total', help: 'Due symbols the scheduler made no job for because their quotes are pushed.', ...reg }),
    replicaWaits: new client.Counter({ name: 'wsps_fetcher_replica_waits_total', help: 'Publish calls that waited for replicas (WSPS_PUBLISH_WAIT_REPLICAS), by result: acked (enough replicas in time), short (fewer within the timeout; published all the same), failed (the connection broke; nothing published).', labelNames: ['result'], ...reg }),
    refused,
    publishRequests: new client.Counter({ name: 'wsps_fetcher_publish_requests_total', help: 'Publish API requests by outcome (accepted or the error code).', labelNames: ['outcome'], ...reg }),
    publishQuotes: new client.Counter({ name: 'wsps_fetcher_publish_quotes_total', help: 'Quotes accepted and published through the publish API.', ...reg }),
    streamMessages: new client.Counter({ name: 'wsps_fetcher_stream_messages_total', help: 'ws-stream messages from the vendor by result: data, ignored (not quote data), malformed (skipped whole or in part).', labelNames: ['result'], ...reg }),
    streamRecordsDropped: new client.Counter({ name: 'wsps_fetcher_stream_records_dropped_total', help: 'ws-stream: vendor records not published, by reason: unknown_symbol (a symbol this replica does not hold), ignored (an ignore rule, or a message `match` refused), unmatched (no mapping rule matched), malformed (unreadable), empty (matched a data rule but carried none of its fields).', labelNames: ['reason'], ...reg }),
    streamConnected: new client.Gauge({ name: 'wsps_fetcher_stream_connected', help: 'ws-stream: 1 while the vendor connection is open.', ...reg }),
    streamReconnects: new client.Counter({ name: 'wsps_fetcher_stream_reconnects_total', help: 'ws-stream: connection attempts after the first.', ...reg }),
    streamSymbols: new client.Gauge({ name: 'wsps_fetcher_stream_symbols', help: 'ws-stream: symbols this replica holds and subscribes upstream.', ...reg }),
    streamAuth: new client.Counter({ name: 'wsps_fetcher_stream_auth_total', help: 'ws-stream: vendor answers to authentication, by result: ok, refused (credentials refused), limited (too many connections for the key), timeout (no answer in WSPS_STREAM_AUTH_TIMEOUT_MS).', labelNames: ['result'], ...reg }),
    streamSession: new client.Gauge({ name: 'wsps_fetcher_stream_session_state', help: 'ws-stream: 1 for the state the upstream session is in (standby, connecting, authenticating, ready, closed, refused, limited, stopped), 0 for the others.', labelNames: ['state'], ...reg }),
    streamLastRecordAge: new client.Gauge({ name: 'wsps_fetcher_stream_last_record_age_seconds', help: 'ws-stream: seconds since this replica\'s connection last streamed a quote (or since it became ready, or started, when none came since); sampled each WSPS_STREAM_TICK_MS.', ...reg }),
    ...redisLinkMetrics('wsps_fetcher', reg)
  }
}

/** @typedef {ReturnType<typeof createFetcherMetrics>} FetcherMetrics */
