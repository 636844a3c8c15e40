// The product's processes as the tests start them: the gateway, the
// quote-fetcher and the fake streaming vendor, each on a free loopback port
// (through the one process starter, process.js), ready when it answers
// /readyz, with its output kept for failure messages.

import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseMetrics } from './metrics.js'
import { freePort, getJson, httpOk } from './net.js'
import { startProcess } from './process.js'
import { waitFor } from './wait.js'

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
export const GATEWAY_MAIN = join(ROOT, 'services/gateway/bin/main.js')
export const FETCHER_MAIN = join(ROOT, 'services/quote-fetcher/bin/main.js')
export const FAKE_VENDOR_MAIN = join(ROOT, 'harness/testkit/src/fake-vendor.js')
export const FAKE_BOOK_VENUE_MAIN = join(ROOT, 'harness/testkit/src/fake-book-venue.js')
/**
 * Node flags both services run with: here, in the bench, in the image
 * (Dockerfile NODE_OPTIONS) and under `make up` (infra/local/up.sh); a test
 * in startup.test.js keeps those equal. `--max-semi-space-size=8`: Node 24's
 * default young generation lets RSS grow ~120 MB under allocation churn (the
 * hostile-input fuzz: 319 MB peak against 197 MB with it) before a scavenge,
 * with no fan-out throughput lost in `make bench` side by side.
 */
export const NODE_FLAGS = Object.freeze(['--max-semi-space-size=8'])

/**
 * A service process (gateway or fetcher) on a free port. Its stdout/stderr
 * are kept (the last 200 lines) for failure messages.
 *
 * @param {string} main entry file
 * @param {Record<string, string | number>} env WSPS_* settings
 * @param {{ready?: boolean, name?: string}} [options] wait for /readyz (default) or only /healthz
 */
export async function startService (main, env, { ready = true, name = 'service' } = {}) {
  const port = Number(env.WSPS_HTTP_PORT ?? await freePort())
  const child = startProcess(process.execPath, [...NODE_FLAGS, main], {
    name,
    inheritEnv: false,
    env: { WSPS_HOST: '127.0.0.1', WSPS_LOG_LEVEL: 'warn', WSPS_NODE_NAME: `${name}-${port}`, ...env, WSPS_HTTP_PORT: port }
  })
  const base = `http://127.0.0.1:${port}`
  const handle = {
    name: String(env.WSPS_NODE_NAME ?? `${name}-${port}`),
    port,
    pid: child.pid,
    url: base,
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    proc: child.proc,
    /** The last 200 lines it printed. */
    logs: child.logs,
    exited: child.exited,
    /** @param {NodeJS.Signals} [signal] */
    stop (signal = 'SIGTERM') { return child.stop(signal) },
    kill () { return child.kill() },
    async metrics () {
      const res = await fetch(`${base}/metrics`)
      return parseMetrics(await res.text())
    }
  }
  try {
    // Generous: on a busy 2-core machine a cold Node start can take many seconds.
    // A process that exited is done waiting for (a config error exits at
    // once): say so now, not after the timeout.
    await waitFor(async () => !child.alive || httpOk(`${base}${ready ? '/readyz' : '/healthz'}`), { timeout: 60_000, message: `${name} on ${port}` })
    if (!child.alive) throw new Error(`${name} exited with ${child.proc.exitCode ?? child.proc.signalCode} before it was ${ready ? 'ready' : 'healthy'}`)
  } catch (err) {
    await child.kill()
    throw new Error(`${/** @type {Error} */ (err).message}\n--- ${name} output:\n${child.logs.join('\n')}`)
  }
  return handle
}

/** @typedef {Awaited<ReturnType<typeof startService>>} ServiceHandle */

/**
 * @param {string} redisUrl
 * @param {Record<string, string | number>} [env]
 */
export function startGateway (redisUrl, env = {}) {
  return startService(GATEWAY_MAIN, { WSPS_REDIS_URL: redisUrl, WSPS_DRAIN_MS: 500, WSPS_UNSUBSCRIBE_DELAY_MS: 200, ...env }, { name: 'gateway' })
}

/**
 * @param {string} redisUrl
 * @param {Record<string, string | number>} [env]
 */
export function startFetcher (redisUrl, env = {}) {
  return startService(FETCHER_MAIN, { WSPS_REDIS_URL: redisUrl, WSPS_FETCH_INTERVAL_MS: 200, WSPS_SCHEDULE_TICK_MS: 20, ...env }, { name: 'fetcher' })
}

/**
 * @typedef {object} FakeVendorOptions
 * @property {number} [tickMs] how often subscribed symbols get a record
 * @property {string} [key] credential required (empty: none)
 * @property {string} [secret] second credential (alpaca), checked when set
 * @property {'alpaca' | 'polygon'} [dialect] whose documented wire format it speaks
 * @property {number} [maxConnections] authenticated connections per key (0: no limit)
 * @property {boolean} [closeOnRefusal] close the socket after refusing auth (default: keep it open)
 * @property {number} [authTimeoutMs] alpaca: close a connection that has not authenticated by then
 * @property {boolean} [trades] trade subscribers get a trade every tick (default); false: only what send() sends
 */

/**
 * A ws-stream fetcher's settings for the fake vendor in the alpaca dialect,
 * started with `key: 'vendor-key'`: the mapping and templates docs/feeding.md
 * gives for Alpaca (plus WSPS_STREAM_URL: the vendor's streamUrl).
 */
export const ALPACA_STREAM_ENV = Object.freeze({
  WSPS_PROVIDER: 'ws-stream',
  WSPS_STREAM_AUTH: '{"action":"auth","key":{token}}',
  WSPS_STREAM_TOKEN: 'vendor-key',
  WSPS_STREAM_SUBSCRIBE: '{"action":"subscribe","quotes":{symbols}}',
  WSPS_STREAM_UNSUBSCRIBE: '{"action":"unsubscribe","quotes":{symbols}}',
  WSPS_STREAM_MAPPING: '{"recordMatch":{"T":"q"},"fields":{"symbol":"S","bid":"bp","ask":"ap","bidSize":"bs","askSize":"as","ts":"t"}}',
  WSPS_STREAM_BACKOFF_MS: 100
})

/**
 * The fake streaming vendor (fake-vendor.js) as its own process. `streamUrl`
 * is what WSPS_STREAM_URL points at; `state()` is what it has seen.
 * @param {FakeVendorOptions} [options]
 */
export async function startFakeVendor ({ tickMs = 100, key = '', secret = '', dialect = 'alpaca', maxConnections = 0, closeOnRefusal = false, authTimeoutMs = 10_000, trades = true } = {}) {
  const handle = await startService(FAKE_VENDOR_MAIN, {
    FAKE_VENDOR_TICK_MS: tickMs,
    FAKE_VENDOR_KEY: key,
    FAKE_VENDOR_SECRET: secret,
    FAKE_VENDOR_DIALECT: dialect,
    FAKE_VENDOR_MAX_CONNECTIONS: maxConnections,
    FAKE_VENDOR_CLOSE_ON_REFUSAL: closeOnRefusal ? 1 : 0,
    FAKE_VENDOR_AUTH_TIMEOUT_MS: authTimeoutMs,
    FAKE_VENDOR_TRADES: trades ? 1 : 0
  }, { name: 'vendor' })
  /** @param {string} path */
  const post = async (path) => {
    const res = await fetch(`${handle.url}${path}`, { method: 'POST', signal: AbortSignal.timeout(2000) })
    return res.json()
  }
  return {
    ...handle,
    streamUrl: `ws://127.0.0.1:${handle.port}/stream`,
    /**
     * @returns {Promise<{dialect: string, connections: number, authed: number, conns: {id: number, authed: boolean, via: string}[],
     *   subscribed: Record<string, number>, trades: Record<string, number>, events: {conn: number, action: string, symbols: string[], code?: number, at: number}[]}>}
     */
    async state () { return (await getJson(`${handle.url}/state`)).body },
    /** @param {'drop' | 'garbage'} what */
    async misbehave (what) { await post(`/${what}`) },
    /** @param {string} raw one text frame to every connection */
    async send (raw) { await post(`/send?raw=${encodeURIComponent(raw)}`) },
    /**
     * Changes its behaviour from now on (connections already authenticated stay so).
     * @param {{key?: string, secret?: string, maxConnections?: number, closeOnRefusal?: boolean, authSilent?: boolean}} changes
     */
    async configure (changes) {
      const q = new URLSearchParams()
      for (const [k, v] of Object.entries(changes)) q.set(k, typeof v === 'boolean' ? (v ? '1' : '0') : String(v))
      return post(`/config?${q}`)
    },
    /**
     * Sends an Alpaca non-quote record for a symbol: a trade cancel, a correction or a trading halt.
     * @param {'cancel' | 'correction' | 'status'} kind
     * @param {string} symbol
     * @returns {Promise<{sent: number}>} connections it went to
     */
    async event (kind, symbol) { return post(`/event?kind=${kind}&symbol=${encodeURIComponent(symbol)}`) }
  }
}

/**
 * The fake book venue (fake-book-venue.js) as its own process: a Binance-,
 * Kraken- or Coinbase-style depth stream of seeded reference books, with faults on
 * request. `streamUrl` is what WSPS_STREAM_URL points at, `snapshotUrl`
 * WSPS_STREAM_BOOK_SNAPSHOT_URL (binance).
 *
 * @param {{dialect: 'binance' | 'kraken' | 'coinbase', seed?: number, tickMs?: number}} options
 */
export async function startFakeBookVenue ({ dialect, seed = 1, tickMs = 50 }) {
  const handle = await startService(FAKE_BOOK_VENUE_MAIN, { FAKE_VENUE_DIALECT: dialect, FAKE_VENUE_SEED: seed, FAKE_VENUE_TICK_MS: tickMs }, { name: `venue-${dialect}` })
  return {
    ...handle,
    streamUrl: `ws://127.0.0.1:${handle.port}/stream`,
    snapshotUrl: `${handle.url}/api/v3/depth?symbol={symbol}&limit={depth}`,
    /** @returns {Promise<{dialect: string, connections: number, subscribed: Record<string, number>, snapshots: number, faults: Record<string, number>}>} */
    async state () { return (await getJson(`${handle.url}/state`)).body },
    /**
     * Every book the venue had of a symbol, oldest first: each the JSON of its top 10 ({bids, asks}, canonical).
     * @param {string} symbol
     * @returns {Promise<string[]>}
     */
    async history (symbol) { return (await getJson(`${handle.url}/history?symbol=${encodeURIComponent(symbol)}`)).body.points },
    /**
     * The next message of the symbol carries this fault.
     * @param {'gap' | 'reorder' | 'stale' | 'checksum'} kind
     * @param {string} symbol
     */
    async fault (kind, symbol) {
      await fetch(`${handle.url}/fault?kind=${kind}&symbol=${encodeURIComponent(symbol)}`, { method: 'POST', signal: AbortSignal.timeout(2000) })
    },
    /** Closes every connection abruptly (no close frame). */
    async drop () { await fetch(`${handle.url}/drop`, { method: 'POST', signal: AbortSignal.timeout(2000) }) }
  }
}
