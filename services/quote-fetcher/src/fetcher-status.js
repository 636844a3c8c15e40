// This fetcher's record in the fleet view (@wsps/shared/fleet-status): is
// it ready, which provider, how many quotes it publishes and has refused.

import { loopDelayP99, ratePerSecond, valueOf } from '@wsps/shared/fleet-status'

/**
 * @param {object} options
 * @param {string} options.node
 * @param {string} options.provider
 * @param {import('./metrics.js').FetcherMetrics} options.metrics
 * @param {() => Record<string, boolean>} options.readiness
 * @returns {() => Promise<import('@wsps/shared/fleet-status').StatusRecord>}
 */
export function fetcherStatus ({ node, provider, metrics, readiness }) {
  const startedAt = Date.now()
  const loop = loopDelayP99()
  const published = ratePerSecond(() => valueOf(metrics.published))
  const refused = ratePerSecond(() => valueOf(metrics.refused))
  return async () => ({
    role: 'fetcher',
    node,
    pid: process.pid,
    startedAt,
    ready: Object.values(readiness()).every(Boolean),
    provider,
    publishedPerS: await published(),
    refusedPerS: await refused(),
    loopDelayP99Ms: loop(),
    rssBytes: process.memoryUsage.rss()
  })
}
