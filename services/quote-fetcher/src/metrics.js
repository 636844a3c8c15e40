// Prometheus metrics of one quote-fetcher process.

import client from 'prom-client'

/** @param {string} node */
export function createFetcherMetrics (node) {
  const registry = new client.Registry()
  registry.setDefaultLabels({ node })
  client.collectDefaultMetrics({ register: registry })
  const reg = { registers: [registry] }
  return {
    registry,
    scheduled: new client.Counter({ name: 'wsps_fetcher_scheduled_symbols_total', help: 'Symbols this replica turned into jobs (scheduler ticks).', ...reg }),
    jobsPushed: new client.Counter({ name: 'wsps_fetcher_jobs_pushed_total', help: 'Jobs this replica pushed to the queue.', ...reg }),
    leasesExpired: new client.Counter({ name: 'wsps_fetcher_leases_expired_total', help: 'Symbols dropped because no gateway renewed their lease.', ...reg }),
    jobs: new client.Counter({ name: 'wsps_fetcher_jobs_total', help: 'Jobs pulled by this replica, by result.', labelNames: ['result'], ...reg }),
    fetchSeconds: new client.Histogram({ name: 'wsps_fetcher_fetch_seconds', help: 'Provider fetch time per job.', buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], ...reg }),
    published: new client.Counter({ name: 'wsps_fetcher_quotes_published_total', help: 'Quotes published to Redis.', ...reg }),
    demand: new client.Gauge({ name: 'wsps_fetcher_demand_symbols', help: 'Symbols with a live lease (sampled).', ...reg }),
    queue: new client.Gauge({ name: 'wsps_fetcher_queue_length', help: 'Jobs waiting in the queue (sampled).', ...reg }),
    activeJobs: new client.Gauge({ name: 'wsps_fetcher_active_jobs', help: 'Jobs this replica is working on.', ...reg }),
    upstreamRequests: new client.Counter({ name: 'wsps_fetcher_upstream_requests_total', help: 'http provider requests by result.', labelNames: ['result'], ...reg }),
    breaker: new client.Gauge({ name: 'wsps_fetcher_upstream_breaker_state', help: 'http provider circuit breaker: 0 closed, 1 half-open, 2 open.', ...reg }),
    redisUp: new client.Gauge({ name: 'wsps_fetcher_redis_up', help: '1 when the Redis connection is ready.', labelNames: ['conn'], ...reg })
  }
}

/** @typedef {ReturnType<typeof createFetcherMetrics>} FetcherMetrics */
