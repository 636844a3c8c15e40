// The metrics of a service's Redis links, the same in every service but for
// their name prefix: whether each link is ready, the failovers and outages it
// went through, and the times it was found silent.

import client from 'prom-client'

/** Buckets (seconds) of the outage histograms: a restart, a Sentinel failover (down-after + election), a long loss. */
export const REDIS_OUTAGE_BUCKETS = Object.freeze([0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120])

/**
 * @param {string} prefix the service's, e.g. `wsps_gateway`
 * @param {{registers: import('prom-client').Registry[]}} reg
 */
export function redisLinkMetrics (prefix, reg) {
  return {
    redisUp: new client.Gauge({ name: `${prefix}_redis_up`, help: '1 when the Redis connection is ready.', labelNames: ['conn'], ...reg }),
    redisFailovers: new client.Counter({ name: `${prefix}_redis_failovers_total`, help: 'Times a Redis connection came back on another primary than before (a Sentinel failover seen).', labelNames: ['conn'], ...reg }),
    redisOutage: new client.Histogram({ name: `${prefix}_redis_outage_seconds`, help: 'Time a Redis connection spent without a primary (lost to ready again), per outage.', labelNames: ['conn'], buckets: [...REDIS_OUTAGE_BUCKETS], ...reg }),
    redisSilent: new client.Counter({ name: `${prefix}_redis_silent_total`, help: 'Times a Redis link did not answer its PING (or handshake) within WSPS_REDIS_PING_TIMEOUT_MS and was torn down to reconnect.', labelNames: ['conn'], ...reg })
  }
}
