// The campaign's stack: Redis (standalone behind per-service Toxiproxy
// proxies, or a Sentinel-watched primary with replicas), a fake streaming
// vendor when the fetchers use ws-stream, two fetchers and two gateways,
// each a restartable slot on a fixed port (a killed or drained service comes
// back on its port, where its clients look for it).

import { existsSync } from 'node:fs'
import { ALPACA_STREAM_ENV, startFakeVendor, startFetcher, startGateway, startRedis, startRedisSentinel, startToxiproxy } from '../../testkit/src/index.js'

/** libfaketime, as Debian's `faketime` package installs it. */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'


/**
 * The environment that makes a process see its clock `skewMs` off
 * (monotonic clocks left alone: timers keep their pace).
 *
 * @param {number} skewMs
 * @returns {Record<string, string>}
 */
export function skewEnv (skewMs) {
  if (!existsSync(LIBFAKETIME)) throw new Error(`${LIBFAKETIME} missing: apt-get install -y faketime`)
  const s = skewMs / 1000
  return { LD_PRELOAD: LIBFAKETIME, FAKETIME: `${s >= 0 ? '+' : ''}${s}s`, FAKETIME_DONT_FAKE_MONOTONIC: '1', FAKETIME_NO_CACHE: '1' }
}

/**
 * @typedef {import('../../testkit/src/index.js').ServiceHandle} ServiceHandle
 * @typedef {import('../../testkit/src/index.js').ToxiProxy} ToxiProxy
 * @typedef {object} Slot one service, restartable on its port
 * @property {string} name gw1, gw2, f1, f2
 * @property {'gateway' | 'fetcher'} role
 * @property {number} port
 * @property {ServiceHandle | null} handle null while it is down
 * @property {ToxiProxy | null} proxy its Redis link (links variant)
 * @property {(extra?: Record<string, string | number>) => Promise<ServiceHandle>} start
 */

/**
 * @param {{variant: 'links' | 'sentinel', provider: 'sim' | 'ws-stream'}} options
 */
export async function startCampaignStack ({ variant, provider }) {
  /** @type {(() => Promise<void>)[]} */
  const closers = []
  const toxi = variant === 'links' ? await startToxiproxy() : null
  if (toxi) closers.push(() => toxi.stop())
  const redis = variant === 'links' ? await startRedis() : null
  if (redis) closers.push(() => redis.close())
  const sentinel = variant === 'sentinel' ? await startRedisSentinel({ downAfterMs: 1000, failoverTimeoutMs: 3000 }) : null
  if (sentinel) closers.push(() => sentinel.close())
  const vendor = provider === 'ws-stream' ? await startFakeVendor({ key: 'vendor-key', tickMs: 50 }) : null
  if (vendor) closers.push(async () => { await vendor.stop() })

  /** @type {Record<string, string | number>} */
  const feed = vendor
    ? { ...ALPACA_STREAM_ENV, WSPS_STREAM_URL: vendor.streamUrl }
    : { WSPS_PROVIDER: 'sim', WSPS_FETCH_INTERVAL_MS: 50 }
  // 20 ticks a second per symbol: a history of 2000 covers 100 s of every symbol.
  const fetcherEnv = { ...feed, WSPS_HISTORY_SIZE: 2000 }
  const gatewayEnv = { WSPS_DRAIN_MS: 500, WSPS_UNSUBSCRIBE_DELAY_MS: 200 }

  /** @type {Slot[]} */
  const slots = []
  for (const [name, role] of /** @type {const} */ ([['f1', 'fetcher'], ['f2', 'fetcher'], ['gw1', 'gateway'], ['gw2', 'gateway']])) {
    const proxy = toxi && redis ? await toxi.createProxy({ upstream: `127.0.0.1:${redis.port}`, name: `${name}-redis` }) : null
    const redisUrl = proxy ? `redis://127.0.0.1:${proxy.port}` : `redis://127.0.0.1:${sentinel?.nodePorts[0]}`
    const linkEnv = sentinel ? sentinel.serviceEnv() : {}
    /** @type {Slot} */
    const slot = {
      name,
      role,
      port: 0,
      handle: null,
      proxy,
      async start (extra = {}) {
        const env = { ...(role === 'fetcher' ? fetcherEnv : gatewayEnv), ...linkEnv, WSPS_NODE_NAME: name, ...(slot.port ? { WSPS_HTTP_PORT: slot.port } : {}), ...extra }
        const h = role === 'fetcher' ? await startFetcher(redisUrl, env) : await startGateway(redisUrl, env)
        slot.port = h.port
        slot.handle = h
        return h
      }
    }
    slots.push(slot)
  }
  for (const s of slots) await s.start()
  closers.push(async () => { await Promise.all(slots.map((s) => s.handle?.kill())) })

  return {
    variant,
    provider,
    toxi,
    redis,
    sentinel,
    vendor,
    slots,
    /** @param {string} name */
    slot (name) {
      const s = slots.find((x) => x.name === name)
      if (!s) throw new Error(`no service ${name}`)
      return s
    },
    /** ws:// URLs of the gateways */
    gatewayUrls () { return slots.filter((s) => s.role === 'gateway').map((s) => `ws://127.0.0.1:${s.port}/ws`) },
    /** Stops everything, the services first. */
    async close () {
      for (const c of closers.reverse()) await c().catch(() => {})
    }
  }
}

/** @typedef {Awaited<ReturnType<typeof startCampaignStack>>} CampaignStack */
