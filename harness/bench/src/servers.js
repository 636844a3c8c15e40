// Server adapters: how to start each server under test and how it is fed
// from the shared Redis publisher. The client side of each protocol lives in
// loadgen/internal/adapter. To add a server, add an entry here with start()
// and a matching Go adapter; nothing else changes.

import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { NODE_FLAGS, freePort, httpOk, parseMetrics, waitFor } from '@wsps/testkit'
import { collectGarbage, inspectorUrl } from './inspect.js'
import { start } from './spawn.js'
import { tree } from '@wsps/testkit/proc'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const HERE = fileURLToPath(new URL('.', import.meta.url))
const NODE = process.execPath
/** WSPS_BENCH_PROFILE_DIR: run the Node servers under --cpu-prof, profiles written there on exit. */
const PROF = process.env.WSPS_BENCH_PROFILE_DIR
/**
 * @param {string} name
 * @param {boolean} [inspect] open the inspector on a free loopback port (for gc())
 */
const nodeArgs = (name, inspect = false) => [
  ...(PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(PROF, name)}`] : []),
  ...(inspect ? ['--inspect=127.0.0.1:0'] : [])
]

/**
 * gc() of a Node server started with the inspector.
 *
 * @param {{logs: string[]}} p
 */
const gcVia = (p) => async () => {
  const url = inspectorUrl(p.logs)
  if (!url) throw new Error('the server printed no inspector URL (started without inspect?)')
  return collectGarbage(url)
}

/**
 * @typedef {object} ServerHandle
 * @property {string} name
 * @property {string} adapter loadgen -adapter
 * @property {string} url ws:// base the adapter's path is appended to
 * @property {number} port
 * @property {() => number[]} roots pids whose process trees are the server (CPU, RSS)
 * @property {() => Promise<void>} stop
 * @property {() => Promise<Record<string, number>>} [metrics]
 * @property {string} [publishUrl] Pushpin: its HTTP publish API (scripts/pushpin-hold.js publishes there directly)
 * @property {() => Promise<{heapUsed: number}>} [gc] a full GC (Node servers started with inspect)
 * @property {() => string[]} [logs] its last lines of output (the Node competitor servers)
 *
 * @typedef {object} StartOptions
 * @property {string} redisUrl
 * @property {string | null} core CPU list for taskset
 * @property {string} runDir scratch directory
 * @property {Record<string, string>} [env]
 * @property {string} [prefix] Redis key prefix of its quote stream (default wsps)
 * @property {boolean} [inspect] Node servers: open the inspector so gc() works
 * @property {import('./go-bin.js').GoBin} [bin] the bench's Go programs (the floor server is one of them)
 * @property {string | null} [loadCore] CPU list of the load generator and the feed (servers with a feed process of their own)
 */

/** A gateway measured in distinct mode: every tick, counted tick by tick; seq gaps fail the step. */
const DISTINCT = Object.freeze({ adapter: 'wsps-distinct', strict: true })

/** @type {Record<string, {label: string, strict?: boolean, snapshots?: boolean, start: (o: StartOptions) => Promise<ServerHandle>}>} */
export const SERVERS = {
  wsps: gatewayServer('wsps', 'wsps gateway (merge)', join(ROOT, 'services/gateway/bin/main.js')),
  'wsps-distinct': gatewayServer('wsps-distinct', 'wsps gateway (distinct, every tick)', join(ROOT, 'services/gateway/bin/main.js'), DISTINCT),
  // Two workers in one process tree (WSPS_WORKERS=2): for the hot-symbol section.
  'wsps-2w': gatewayServer('wsps-2w', 'wsps gateway, 2 workers (merge)', join(ROOT, 'services/gateway/bin/main.js'), { env: { WSPS_WORKERS: '2' } }),
  naive: nodeServer('naive', 'naive ws baseline'),
  // The book section's baseline: the full top 25 on every change (servers/naive-books.js).
  'naive-books': nodeServer('naive-books', 'naive order book server (full top 25 per change)'),
  // The least work any server can do: for the hot section (loadgen/internal/floor).
  floor: {
    label: 'bare write loop (Go, 1 thread): the floor',
    async start ({ redisUrl, core, prefix = 'wsps', bin }) {
      if (!bin) throw new Error('the floor server is a Go program of the bench: start it with bin')
      const port = await freePort()
      const p = start(bin.floor, [`-port=${port}`, `-redis=${redisUrl}`, `-prefix=${prefix}`], { core, name: 'floor', stdin: false })
      await p.waitLine((l) => l.type === 'listening', 15_000)
      return { name: 'floor', adapter: 'naive', url: `ws://127.0.0.1:${port}`, port, roots: () => [p.pid], async stop () { await p.stop('SIGTERM', { killAfterMs: 3000 }) } }
    }
  },
  socketio: nodeServer('socketio', 'Socket.IO 4 + redis-adapter'),
  centrifugo: {
    label: 'Centrifugo v6 (Redis engine) + API bridge',
    // No snapshot on subscribe (its history is off, as in its defaults): a
    // client is ready on its subscribe replies.
    snapshots: false,
    async start ({ redisUrl, core, runDir, prefix = 'wsps', bin, loadCore }) {
      if (!bin) throw new Error('Centrifugo is started from the bench\'s cache: start it with bin')
      const port = await freePort()
      const key = randomBytes(16).toString('hex')
      const config = join(runDir, `centrifugo-${port}.json`)
      writeFileSync(config, JSON.stringify(centrifugoConfig({ port, redisUrl, prefix, key }), null, 2))
      const cf = start(bin.centrifugo, ['--config', config], { core, name: 'centrifugo', stdin: false })
      await waitFor(async () => {
        if (!cf.alive) throw new Error(`centrifugo exited: ${cf.logs.slice(-20).join('\n')}`)
        return httpOk(`http://127.0.0.1:${port}/health`)
      }, { timeout: 30_000, message: 'centrifugo /health' })
      // The bridge is the feed (like the publisher), not the server: on the load core.
      const bridge = start(NODE, [join(HERE, 'servers/centrifugo-bridge.js'), `--redis=${redisUrl}`, `--prefix=${prefix}`, `--api=http://127.0.0.1:${port}/api`, `--key=${key}`], { core: loadCore ?? null, name: 'centrifugo-bridge', stdin: false })
      await bridge.waitLine((l) => l.type === 'ready', 15_000)
      return {
        name: 'centrifugo',
        adapter: 'centrifugo',
        url: `ws://127.0.0.1:${port}`,
        port,
        roots: () => [cf.pid],
        async stop () {
          await bridge.stop('SIGTERM', { killAfterMs: 3000 })
          await cf.stop('SIGTERM', { killAfterMs: 5000 })
        }
      }
    }
  },
  pushpin: {
    label: 'Pushpin (GRIP) + bridge',
    async start ({ redisUrl, core, runDir, prefix = 'wsps' }) {
      const [port, backendPort, pubPort, pullPort, subPort, cmdPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()])
      const dir = join(runDir, `pushpin-${port}`)
      mkdirSync(join(dir, 'log'), { recursive: true })
      writeFileSync(join(dir, 'routes'), `* 127.0.0.1:${backendPort},over_http\n`)
      writeFileSync(join(dir, 'pushpin.conf'), pushpinConf({ dir, port, pubPort, pullPort, subPort, cmdPort }))
      const backend = start(NODE, [join(HERE, 'servers/pushpin-backend.js'), `--port=${backendPort}`, `--redis=${redisUrl}`, `--publish=http://127.0.0.1:${pubPort}/publish/`, `--prefix=${prefix}`], { core, name: 'pushpin-backend', stdin: false })
      await backend.waitLine((l) => l.type === 'listening', 15_000)
      const pp = start('pushpin', [`--config=${join(dir, 'pushpin.conf')}`, '--merge-output'], { core, name: 'pushpin', stdin: false })
      await waitFor(async () => {
        if (!pp.alive) throw new Error(`pushpin exited: ${pp.logs.slice(-20).join('\n')}`)
        const res = await fetch(`http://127.0.0.1:${pubPort}/publish/`, { method: 'POST', body: '{"items":[]}', headers: { 'Content-Type': 'application/json' }, signal: AbortSignal.timeout(1000) })
        await res.arrayBuffer()
        return res.status < 500
      }, { timeout: 30_000, message: 'pushpin publish API' })
      return {
        name: 'pushpin',
        adapter: 'pushpin',
        url: `ws://127.0.0.1:${port}`,
        port,
        publishUrl: `http://127.0.0.1:${pubPort}/publish/`,
        roots: () => [pp.pid, backend.pid],
        async stop () {
          // The runner puts its services in process groups of their own: take the whole tree.
          const all = tree([pp.pid])
          await pp.stop('SIGTERM', { killAfterMs: 3000 })
          await backend.stop('SIGTERM', { killAfterMs: 3000 })
          for (const pid of all) { try { process.kill(pid, 'SIGKILL') } catch {} }
        }
      }
    }
  }
}

/**
 * A competitor server of ours in Node (servers/<name>.js, its loadgen adapter
 * of the same name): started with --port, --redis and --prefix, ready when
 * it prints its `listening` line.
 *
 * @param {string} name
 * @param {string} label
 */
function nodeServer (name, label) {
  return {
    label,
    async start (/** @type {StartOptions} */ { redisUrl, core, prefix = 'wsps', inspect }) {
      const port = await freePort()
      const p = start(NODE, [...nodeArgs(name, inspect), join(HERE, `servers/${name}.js`), `--port=${port}`, `--redis=${redisUrl}`, `--prefix=${prefix}`], { core, name, stdin: false })
      await p.waitLine((l) => l.type === 'listening', 15_000)
      return { name, adapter: name, url: `ws://127.0.0.1:${port}`, port, roots: () => [p.pid], async stop () { await p.stop('SIGTERM', { killAfterMs: 3000 }) }, gc: gcVia(p), logs: () => [`alive: ${p.alive}`, ...p.logs.slice(-20)] }
    }
  }
}

/**
 * A wsps gateway process from an entry file (the repo's, or a variant under
 * test: WSPS_BENCH_VARIANTS="name=/path/to/bin/main.js,..." adds servers
 * that the fan-out can interleave with the original: --servers=wsps,name;
 * a name ending in -distinct is measured in distinct mode).
 *
 * @param {string} name
 * @param {string} label
 * @param {string} main
 * @param {{adapter?: string, strict?: boolean, env?: Record<string, string>}} [variant] loadgen adapter, strict counting, extra settings
 */
function gatewayServer (name, label, main, variant = {}) {
  return {
    label,
    strict: variant.strict ?? false,
    async start (/** @type {StartOptions} */ { redisUrl, core, env = {}, prefix = 'wsps', inspect }) {
      const port = await freePort()
      const p = start(NODE, [...NODE_FLAGS, ...nodeArgs(name, inspect), main], {
        core,
        name,
        stdin: false,
        env: {
          WSPS_REDIS_URL: redisUrl,
          WSPS_HOST: '127.0.0.1',
          WSPS_HTTP_PORT: String(port),
          WSPS_NODE_NAME: `bench-${name}-${port}`,
          WSPS_LOG_LEVEL: 'warn',
          WSPS_STATIC_DIR: '-',
          WSPS_MAX_CONNECTIONS: '19900',
          WSPS_RATE_PER_SEC: '100000',
          WSPS_RATE_BURST: '100000',
          WSPS_UNSUBSCRIBE_DELAY_MS: '1000',
          WSPS_DRAIN_MS: '0',
          WSPS_REDIS_KEY_PREFIX: prefix,
          ...variant.env,
          ...env
        }
      })
      await waitFor(async () => !p.alive || httpOk(`http://127.0.0.1:${port}/readyz`), { timeout: 60_000, message: `${name} gateway ready` })
      if (!p.alive) throw new Error(`${name} gateway exited: ${p.logs.slice(-20).join('\n')}`)
      return {
        name,
        adapter: variant.adapter ?? 'wsps',
        url: `ws://127.0.0.1:${port}`,
        port,
        roots: () => [p.pid],
        async stop () { await p.stop('SIGTERM', { killAfterMs: PROF ? 23_000 : 8000 }) },
        gc: gcVia(p),
        async metrics () {
          return parseMetrics(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())
        }
      }
    }
  }
}

// A variant named …-distinct is measured as wsps-distinct is.
for (const v of (process.env.WSPS_BENCH_VARIANTS ?? '').split(',').filter(Boolean)) {
  const [name, main] = v.split('=')
  SERVERS[name] = name.endsWith('-distinct')
    ? gatewayServer(name, `wsps variant ${name} (distinct, every tick)`, main, DISTINCT)
    : gatewayServer(name, `wsps variant ${name}`, main)
}

/**
 * Pushpin's packaged config with the bench's ports and limits: a publish
 * rate limit and queue far above the load (the packaged 2,500 msg/s would
 * be the bottleneck), and up to 200 channels per connection (packaged: 20).
 *
 * @param {{dir: string, port: number, pubPort: number, pullPort: number, subPort: number, cmdPort: number}} o
 */
function pushpinConf ({ dir, port, pubPort, pullPort, subPort, cmdPort }) {
  /** @type {Record<string, Record<string, string>>} */
  const set = {
    global: { rundir: dir, ipc_prefix: `wspsbench${port}-`, port_offset: '0' },
    runner: { services: 'condure,zurl,pushpin-proxy,pushpin-handler', http_port: `127.0.0.1:${port}`, logdir: join(dir, 'log'), log_level: '1', client_maxconn: '50000' },
    proxy: {
      routesfile: join(dir, 'routes'),
      updates_check: 'off',
      // The packaged build expects a system-wide zurl for requests to the
      // origin; the runner starts our own and the proxy talks to it.
      zurl_out_specs: 'ipc://{rundir}/{ipc_prefix}zurl-in',
      zurl_out_stream_specs: 'ipc://{rundir}/{ipc_prefix}zurl-in-stream',
      zurl_in_specs: 'ipc://{rundir}/{ipc_prefix}zurl-out'
    },
    handler: {
      push_in_spec: `tcp://127.0.0.1:${pullPort}`,
      push_in_sub_specs: `tcp://127.0.0.1:${subPort}`,
      push_in_http_addr: '127.0.0.1',
      push_in_http_port: String(pubPort),
      command_spec: `tcp://127.0.0.1:${cmdPort}`,
      message_rate: '10000000',
      message_hwm: '10000000',
      connection_subscription_max: '200'
    }
  }
  let section = ''
  const seen = new Set()
  const out = []
  for (const line of readFileSync('/etc/pushpin/pushpin.conf', 'utf8').split('\n')) {
    const m = /^\[(\w+)\]/.exec(line)
    if (m) {
      section = m[1]
      out.push(line)
      continue
    }
    const kv = /^([a-z_]+)=/.exec(line)
    if (kv && set[section]?.[kv[1]] !== undefined) {
      out.push(`${kv[1]}=${set[section][kv[1]]}`)
      seen.add(`${section}.${kv[1]}`)
    } else {
      out.push(line)
    }
  }
  // Keys the packaged file does not have: append them to their section.
  let text = out.join('\n')
  for (const [sec, kvs] of Object.entries(set)) {
    const extra = Object.entries(kvs).filter(([k]) => !seen.has(`${sec}.${k}`)).map(([k, v]) => `${k}=${v}`)
    if (extra.length) text = text.replace(`[${sec}]`, `[${sec}]\n${extra.join('\n')}`)
  }
  return text
}

/**
 * Centrifugo's configuration in the bench: on loopback, its Redis engine on
 * the shared Redis (its own key prefix), insecure client mode (anyone may
 * connect and subscribe to any channel: the comparison is of delivery, not
 * of auth, and wsps's bench gateways run without auth too), the HTTP server
 * API behind a key, logs at error, no usage statistics. Everything else is
 * Centrifugo's default (no history, no recovery: like wsps merge, and wsps
 * distinct keeps its history on in the bench).
 *
 * @param {{port: number, redisUrl: string, prefix: string, key: string}} o
 */
function centrifugoConfig ({ port, redisUrl, prefix, key }) {
  return {
    http_server: { address: '127.0.0.1', port },
    log: { level: 'error' },
    engine: { type: 'redis', redis: { address: [redisUrl], prefix: `cf-${prefix}` } },
    client: { insecure: true, allowed_origins: ['*'], channel_limit: 1024 },
    http_api: { key },
    health: { enabled: true },
    usage_stats: { disabled: true }
  }
}
