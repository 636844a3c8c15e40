// Demand on NATS: the symbols gateways watch, as leases the fetchers read
// (the Redis demand ZSET's counterpart, scripts.js DEMAND). Each gateway
// writes its own lease per symbol (nats-layout.js, demandSubject) to the
// demand stream, which keeps the last per subject (a KV bucket's shape,
// without the KV client): no two gateways write one key, so no lease is
// shortened by another's renewal (what ZADD GT gives Redis), and a symbol
// is demanded while any gateway's lease on it runs.
//
// The stream forgets a lease DEMAND_MAX_AGE_MS after it was written (the
// longest WSPS_DEMAND_LEASE_MS): a gateway that went away leaves nothing
// behind for long.

import { jetstream, jetstreamManager, JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream'

/** The longest lease a gateway takes (WSPS_DEMAND_LEASE_MS at most). */
export const DEMAND_MAX_AGE_MS = 3_600_000

/**
 * Creates the demand stream, or brings it to these settings.
 *
 * @param {import('@nats-io/transport-node').NatsConnection} nc
 * @param {import('./nats-layout.js').NatsLayout} layout
 * @param {{replicas: number}} settings
 */
export async function ensureDemandStream (nc, layout, { replicas }) {
  const jsm = await jetstreamManager(nc)
  /** @type {Partial<import('@nats-io/jetstream').StreamConfig> & {name: string}} */
  const config = {
    name: layout.demandStream,
    subjects: [layout.demandSubjects],
    max_msgs_per_subject: 1,
    max_age: DEMAND_MAX_AGE_MS * 1_000_000,
    num_replicas: replicas,
    allow_direct: true
  }
  try {
    await jsm.streams.info(layout.demandStream)
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err
    await jsm.streams.add(config)
    return
  }
  await jsm.streams.update(layout.demandStream, config)
}

/**
 * A gateway's demand writer.
 *
 * @param {import('@nats-io/transport-node').NatsConnection} nc
 * @param {import('./nats-layout.js').NatsLayout} layout
 * @param {string} node this gateway's name (WSPS_NODE_NAME)
 */
export function natsDemand (nc, layout, node) {
  const js = jetstream(nc)
  return {
    /**
     * Leases these symbols until leaseMs from now (each stored: the
     * promise rejects when one was not).
     *
     * @param {string[]} symbols
     * @param {number} leaseMs
     */
    async renew (symbols, leaseMs) {
      const until = String(Date.now() + leaseMs)
      await Promise.all(symbols.map((s) => js.publish(layout.demandSubject(s, node), until)))
    }
  }
}

/**
 * The symbols demanded now: those some gateway's lease on runs past `now`
 * (the fetcher's read; the scheduler's on Redis is the demand ZSET).
 *
 * @param {import('@nats-io/transport-node').NatsConnection} nc
 * @param {import('./nats-layout.js').NatsLayout} layout
 * @param {number} now
 * @returns {Promise<Map<string, number>>} symbol -> the latest expiry of its leases
 */
export async function readDemand (nc, layout, now) {
  const jsm = await jetstreamManager(nc)
  /** @type {Map<string, number>} */
  const out = new Map()
  const info = await jsm.streams.info(layout.demandStream)
  if (info.state.messages === 0) return out
  for await (const m of await jsm.direct.getLastMessagesFor(layout.demandStream, { multi_last: [layout.demandSubjects] })) {
    const symbol = layout.symbolOfDemand(m.subject)
    const until = Number(m.string())
    if (symbol && until > now && until > (out.get(symbol) ?? 0)) out.set(symbol, until)
  }
  return out
}
