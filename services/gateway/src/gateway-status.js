// This gateway's record in the fleet view (@wsps/shared/fleet-status):
// what an operator asks first in an incident: is it ready, how many
// clients, how many slow, how busy, which symbols are stale here and which
// are watched most.

import { loopDelayP99, ratePerSecond, valueOf } from '@wsps/shared/fleet-status'

/** Symbols listed per gateway (the most watched, the stale). */
const LISTED = 10

/**
 * @param {object} options
 * @param {string} options.node
 * @param {import('./metrics.js').GatewayMetrics} options.metrics
 * @param {import('./hub.js').Hub} options.hub
 * @param {() => number} options.connections open connections
 * @param {() => Record<string, boolean>} options.readiness
 * @returns {() => Promise<import('@wsps/shared/fleet-status').StatusRecord>}
 */
export function gatewayStatus ({ node, metrics, hub, connections, readiness }) {
  const startedAt = Date.now()
  const loop = loopDelayP99()
  const quotesIn = ratePerSecond(() => valueOf(metrics.quotesIn))
  return async () => {
    const checks = readiness()
    const { top, stale, staleCount } = hub.summary(LISTED)
    return {
      role: 'gateway',
      node,
      pid: process.pid,
      startedAt,
      ready: Object.values(checks).every(Boolean),
      draining: checks.notDraining === false,
      connections: connections(),
      channels: hub.symbolCount,
      slowClients: await valueOf(metrics.slowClients),
      quotesInPerS: await quotesIn(),
      loopDelayP99Ms: loop(),
      rssBytes: process.memoryUsage.rss(),
      staleCount,
      stale,
      top
    }
  }
}
