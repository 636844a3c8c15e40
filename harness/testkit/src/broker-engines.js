// The two engines behind the broker seam, driven one way by the conformance
// suite (test/broker-conformance.test.js): each starts its servers, makes
// writers (the fetcher's publish path: the Redis publish script, or
// nats-publish.js) and the gateway's Broker over them, cuts a broker's link
// (Redis restarted; the NATS node the broker is connected to killed, the
// cluster keeping quorum) and takes the whole engine down and back.

import { jetstreamManager } from '@nats-io/jetstream'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { createNatsBroker } from '@wsps/gateway/broker-nats'
import { createRedisBroker } from '@wsps/gateway/broker-redis'
import { loadGatewayConfig } from '@wsps/gateway/config'
import { redisKeys } from '@wsps/shared/keys'
import { connectNats, ensureQuoteStream } from '@wsps/shared/nats'
import { ensureDemandStream, readDemand } from '@wsps/shared/nats-demand'
import { natsLayout } from '@wsps/shared/nats-layout'
import { natsPublisher } from '@wsps/shared/nats-publish'
import { publishArgs, registerScripts } from '@wsps/shared/scripts'
import { startNatsCluster } from './nats.js'
import { startRedis } from './redis.js'
import { waitFor } from './wait.js'

const silent = pino({ level: 'silent' })

/**
 * @typedef {object} Writer
 * @property {(q: import('@wsps/shared/nats-publish').NatsQuote) => Promise<number>} publish its seq, or
 *   why it was refused as the publish script replies (-1 fenced, -2 old)
 * @property {() => Promise<void>} close
 *
 * @typedef {import('@wsps/gateway/broker-nats').NatsBroker | import('@wsps/gateway/broker-redis').RedisBroker} AnyBroker
 *
 * @typedef {object} Engine
 * @property {string} name
 * @property {() => Promise<void>} start its servers
 * @property {() => Promise<Writer>} writer
 * @property {(handlers: Parameters<import('@wsps/gateway/broker-nats').NatsBroker['start']>[0]) => Promise<AnyBroker>} broker started, ready
 * @property {(broker: AnyBroker) => Promise<() => Promise<void>>} cut the broker's link goes (and comes
 *   back on its own); resolves with what brings the engine whole again (a killed node back)
 * @property {(broker: AnyBroker) => Promise<() => Promise<void>>} [failover] the engine's leader of the
 *   quotes is killed and another takes over; resolves with what brings the old one back (none on a
 *   standalone Redis)
 * @property {(broker: AnyBroker) => Promise<() => Promise<void>>} [loseQuorum] every server but the
 *   broker's own stopped (its link stays up, the quotes have no leader); resolves with the way back
 *   (none on a standalone Redis: its one server is the broker's)
 * @property {(now: number) => Promise<string[]>} demanded the symbols some gateway's lease on runs past now
 *   (what the fetchers schedule), sorted
 * @property {() => Promise<void>} down every server stopped
 * @property {() => Promise<void>} up every server back, with what it stored
 * @property {() => Promise<void>} close
 */

/**
 * Redis standalone, persisting (a restart keeps seqs and history, as a
 * production Redis with AOF or a replica does).
 *
 * @param {{historySize: number}} settings
 * @returns {Engine}
 */
export function redisEngine ({ historySize }) {
  /** @type {import('./redis.js').RedisHandle} */
  let redis
  const keys = redisKeys('wsps')
  /** @type {Redis[]} */
  const clients = []
  return {
    name: 'redis',
    async start () { redis = await startRedis({ persist: true }) },
    async writer () {
      const r = registerScripts(new Redis(redis.url, { maxRetriesPerRequest: null, commandTimeout: 2000 }))
      r.on('error', () => {}) // a restart's resets: the publishes fail and are counted by the case
      clients.push(r)
      return {
        async publish (q) {
          const [seq] = await r.wspsPublish(...publishArgs(keys, [q], { ttlMs: 60_000, sharded: false, pushLeaseMs: 0, historySize }))
          return Number(seq)
        },
        async close () { r.disconnect() }
      }
    },
    async broker (handlers) {
      // A command fails after a second while Redis is down (as the outage tests want it told).
      const b = createRedisBroker(loadGatewayConfig({ WSPS_REDIS_URL: redis.url, WSPS_REDIS_COMMAND_TIMEOUT_MS: '1000' }), silent)
      b.start(handlers)
      await waitFor(() => b.ready(), { timeout: 10_000, message: 'redis broker ready' })
      return b
    },
    async cut () {
      await redis.stop()
      await redis.start()
      return async () => {}
    },
    async demanded (now) {
      const r = new Redis(redis.url)
      try {
        return (await r.zrangebyscore(keys.demand, `(${now}`, '+inf')).sort()
      } finally {
        r.disconnect()
      }
    },
    down: () => redis.stop(),
    up: () => redis.start(),
    async close () {
      for (const c of clients) c.disconnect()
      await redis?.close()
    }
  }
}

/**
 * A 3-node JetStream cluster, the quote stream on 3 replicas.
 *
 * @param {{historySize: number, historyTtlMs: number}} settings
 * @returns {Engine}
 */
export function natsEngine ({ historySize, historyTtlMs }) {
  /** @type {import('./nats.js').NatsClusterHandle} */
  let cluster
  const layout = natsLayout('wsps')
  /** @type {import('@nats-io/transport-node').NatsConnection[]} */
  const conns = []
  const servers = () => cluster.nodes.map((n) => n.url)
  let brokers = 0
  return {
    name: 'nats',
    async start () {
      cluster = await startNatsCluster({ nodes: 3 })
      const nc = await connectNats({ servers: servers(), name: 'conformance-setup' })
      try {
        const jsm = await ensureQuoteStream(nc, layout, { historySize, historyTtlMs, replicas: 3 })
        await ensureDemandStream(nc, layout, { replicas: 3 })
        // A stream just made elects its leader a moment later (longer on a busy machine): until then a publish has no responder.
        const streams = (await jsm.streams.names().next()).filter((n) => n !== undefined)
        await waitFor(async () => {
          const infos = await Promise.all(streams.map((n) => jsm.streams.info(n)))
          return infos.every((i) => i.cluster?.leader)
        }, { timeout: 30_000, interval: 100, message: `a leader for each stream (${streams.join(', ')})` })
      } finally {
        await nc.close()
      }
    },
    async writer () {
      const nc = await connectNats({ servers: servers(), name: 'conformance-writer' })
      conns.push(nc)
      const w = await natsPublisher(nc, layout)
      return { publish: w.publish, close: () => nc.close() }
    },
    async broker (handlers) {
      // Each a gateway of its own (its leases are its own).
      const b = createNatsBroker({ natsUrls: servers(), nodeName: `gw-${++brokers}` }, silent)
      await b.start(handlers)
      return b
    },
    async cut (broker) {
      const at = /** @type {import('@wsps/gateway/broker-nats').NatsBroker} */ (broker).server()
      const i = cluster.nodes.findIndex((n) => n.url.endsWith(at))
      if (i < 0) throw new Error(`the broker's server ${at} is none of the cluster's`)
      await cluster.kill(i)
      await cluster.ready()
      return () => cluster.start(i)
    },
    async failover () {
      const nc = await connectNats({ servers: servers(), name: 'conformance-failover' })
      let leader
      try {
        const jsm = await jetstreamManager(nc)
        leader = (await jsm.streams.info(layout.stream)).cluster?.leader
      } finally {
        await nc.close()
      }
      const i = cluster.nodes.findIndex((n) => n.name === leader)
      if (i < 0) throw new Error(`no node leads ${layout.stream} (leader: ${leader})`)
      await cluster.kill(i)
      await cluster.ready()
      return () => cluster.start(i)
    },
    async loseQuorum (broker) {
      const at = /** @type {import('@wsps/gateway/broker-nats').NatsBroker} */ (broker).server()
      const others = cluster.nodes.flatMap((n, i) => n.url.endsWith(at) ? [] : [i])
      await Promise.all(others.map((i) => cluster.kill(i)))
      return async () => {
        for (const i of others) cluster.nodes[i].spawn()
        await cluster.ready()
      }
    },
    async demanded (now) {
      const nc = await connectNats({ servers: servers(), name: 'conformance-demand' })
      try {
        return [...(await readDemand(nc, layout, now)).keys()].sort()
      } finally {
        await nc.close()
      }
    },
    async down () {
      await Promise.all(cluster.nodes.map((_, i) => cluster.kill(i)))
    },
    async up () {
      for (const n of cluster.nodes) n.spawn()
      await cluster.ready()
    },
    async close () {
      for (const c of conns) await c.close().catch(() => {})
      await cluster?.close()
    }
  }
}
