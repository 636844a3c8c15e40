// Wires the delayed timeline of one gateway process: the DelayedBroker
// (quotes as they were WSPS_DELAY_MS ago, read from Redis history), a Hub
// of its own on it, sharing the process's fan-out, that hub's recovery,
// and its bar series (bars.js: delayed bars, from the delayed feeds).
// Sessions (session.js) send each delayed subscription here.

import client from 'prom-client'
import { BarHub } from '../bars/bar-hub.js'
import { DelayedBroker } from './delayed-broker.js'
import { Hub } from '../hub.js'
import { Recovery } from '../recovery.js'

/**
 * @param {object} options
 * @param {import('../config.js').GatewayConfig} options.config
 * @param {import('../broker.js').Broker} options.broker the real-time broker
 * @param {import('../fanout.js').Fanout} options.fanout
 * @param {import('../metrics.js').GatewayMetrics} options.metrics
 * @param {import('pino').Logger} options.logger
 */
export function createDelayedTimeline ({ config, broker, fanout, metrics, logger }) {
  const log = logger.child({ timeline: 'delayed' })
  const reg = { registers: [metrics.registry] }
  // The hub sets these gauges and counts quotes in: the delayed hub has
  // series of its own, so the real-time ones keep meaning what they say.
  /** @type {import('../metrics.js').GatewayMetrics} */
  const hubMetrics = {
    ...metrics,
    subscriptions: new client.Gauge({ name: 'wsps_gateway_delayed_subscriptions', help: 'Connection-symbol subscriptions served delayed (delayed grants).', ...reg }),
    symbols: new client.Gauge({ name: 'wsps_gateway_delayed_symbols', help: 'Symbols with at least one local delayed subscriber.', ...reg }),
    redisChannels: new client.Gauge({ name: 'wsps_gateway_delayed_pumps', help: 'Symbols whose history this process reads for delayed subscribers (one pump each).', ...reg }),
    quotesIn: new client.Counter({ name: 'wsps_gateway_delayed_quotes_in_total', help: 'Quotes released to delayed feeds (read from history once WSPS_DELAY_MS old).', ...reg }),
    staleSymbols: new client.Gauge({ name: 'wsps_gateway_delayed_stale_symbols', help: 'Symbols whose delayed subscribers were told `stale` (their pump cannot read history: Redis gone or silent) and not yet `fresh`.', ...reg }),
    // Delayed quotes are old on purpose: no receive-lag samples.
    receiveLag: null
  }
  const holes = new client.Counter({ name: 'wsps_gateway_delayed_holes_total', help: 'Times a delayed pump found entries trimmed from a symbol\'s history before they were WSPS_DELAY_MS old: the fetchers\' history does not reach back the delay (its subscribers skip those ticks).', ...reg })
  const delayedBroker = new DelayedBroker({ broker, delayMs: config.delayMs, logger: log, onHole: () => holes.inc() })
  const hub = new Hub({
    broker: delayedBroker,
    fanout,
    metrics: hubMetrics,
    logger: log,
    unsubscribeDelayMs: config.unsubscribeDelayMs,
    demandLeaseMs: config.demandLeaseMs,
    recoveryMax: config.recoveryMax,
    // A pump has no channel to lose: nothing to restore.
    restoreDeadlineMs: 0,
    staleGraceMs: config.staleGraceMs
  })
  const recovery = new Recovery({ hub, broker: delayedBroker, max: config.recoveryMax, logger: log })
  const bars = new BarHub({
    hub,
    reader: delayedBroker,
    broker,
    delayMs: config.delayMs,
    batchMs: config.batchMs,
    gauges: { series: metrics.barSeries.labels({ timeline: 'delayed' }), subscriptions: metrics.barSubscriptions.labels({ timeline: 'delayed' }) },
    logger: log
  })
  delayedBroker.start({
    onQuote: (symbol, raw) => hub.onQuote(symbol, raw),
    onInterrupted: (symbols, since, now) => hub.interrupted(symbols, since, now),
    onResumed: (symbols) => hub.resumed(symbols)
  })
  return {
    hub,
    recovery,
    bars,
    delayMs: config.delayMs,
    start: () => hub.start(),
    async stop () {
      bars.stop()
      hub.stop()
      await delayedBroker.close()
    }
  }
}
