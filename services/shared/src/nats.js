// NATS connections built the same way by every service, and the quote
// stream they share (nats-layout.js names it).

import { connect } from '@nats-io/transport-node'
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream'

/**
 * A link that does not answer this many PINGs in a row (at PING_INTERVAL_MS)
 * is stale: the client tears it down and reconnects. TCP alone notices a
 * silent peer only after minutes.
 */
const PING_INTERVAL_MS = 1000
const MAX_PINGS_OUT = 2

/**
 * @param {{servers: string[], name: string}} settings servers: `nats://host:port` each (WSPS_NATS_URL)
 * @returns {Promise<import('@nats-io/transport-node').NatsConnection>} connected; reconnects forever after
 */
export function connectNats ({ servers, name }) {
  return connect({
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    // The first connect too: a service started before its NATS waits for it.
    waitOnFirstConnect: true,
    pingInterval: PING_INTERVAL_MS,
    maxPingOut: MAX_PINGS_OUT
  })
}

/**
 * @typedef {object} QuoteStreamSettings
 * @property {number} historySize quotes kept per symbol (MaxMsgsPerSubject; at least 1, the latest)
 * @property {number} historyTtlMs how long a quote is kept (MaxAge): the latest too
 * @property {number} replicas 1 alone, 3 on a cluster
 */

/**
 * Creates the quote stream, or brings its limits to these.
 *
 * @param {import('@nats-io/transport-node').NatsConnection} nc
 * @param {import('./nats-layout.js').NatsLayout} layout
 * @param {QuoteStreamSettings} settings
 */
export async function ensureQuoteStream (nc, layout, { historySize, historyTtlMs, replicas }) {
  const jsm = await jetstreamManager(nc)
  /** @type {Partial<import('@nats-io/jetstream').StreamConfig> & {name: string}} */
  const config = {
    name: layout.stream,
    subjects: [layout.subjects],
    max_msgs_per_subject: Math.max(1, historySize),
    max_age: historyTtlMs * 1_000_000,
    num_replicas: replicas,
    // The latest quote and history are read by direct get, from any replica.
    allow_direct: true,
    republish: layout.republish
  }
  try {
    await jsm.streams.info(layout.stream)
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err
    await jsm.streams.add(config)
    return jsm
  }
  await jsm.streams.update(layout.stream, config)
  return jsm
}
