// Test harness: real redis-server and real service processes on free
// loopback ports, and a WebSocket client that checks the protocol as it
// reads. Everything started here is stopped by its handle or at exit.

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
export const GATEWAY_MAIN = join(ROOT, 'services/gateway/src/main.js')
export const FETCHER_MAIN = join(ROOT, 'services/quote-fetcher/src/main.js')
export const FAKE_VENDOR_MAIN = join(ROOT, 'harness/testkit/src/fake-vendor.js')

/** Processes the tests started; any still running are killed when the test process exits. */
/** @type {Set<import('node:child_process').ChildProcess>} */
export const children = new Set()
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL')
})

/** @returns {Promise<number>} a TCP port free on 127.0.0.1 right now */
export async function freePort () {
  const srv = createServer()
  srv.listen(0, '127.0.0.1')
  await once(srv, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address())
  srv.close()
  await once(srv, 'close')
  return port
}

/**
 * @param {() => unknown | Promise<unknown>} check returns truthy when done
 * @param {{timeout?: number, interval?: number, message?: string}} [options]
 */
export async function waitFor (check, { timeout = 10_000, interval = 50, message = 'condition' } = {}) {
  const end = Date.now() + timeout
  let last
  for (;;) {
    try {
      last = await check()
      if (last) return last
    } catch (err) {
      last = err
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${message} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`)
    await sleep(interval)
  }
}

/** @param {number} ms */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * @param {string} url
 * @returns {Promise<{status: number, body: any}>}
 */
export async function getJson (url) {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) })
  const text = await res.text()
  let body = text
  try { body = JSON.parse(text) } catch {}
  return { status: res.status, body }
}

/**
 * A redis-server of our own, without persistence.
 * @param {{port?: number}} [options]
 */
export async function startRedis ({ port } = {}) {
  const p = port ?? await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'wsps-redis-'))
  /** @type {import('node:child_process').ChildProcess | null} */
  let proc = null
  const handle = {
    port: p,
    url: `redis://127.0.0.1:${p}`,
    async start () {
      proc = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(p), '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' })
      children.add(proc)
      proc.once('exit', () => children.delete(/** @type {any} */ (proc)))
      await waitFor(() => redisPing(p), { timeout: 10_000, message: `redis on ${p}` })
    },
    /** @param {NodeJS.Signals} [signal] */
    async stop (signal = 'SIGTERM') {
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
      const exited = once(proc, 'exit')
      proc.kill(signal)
      await exited
    },
    kill () { return handle.stop('SIGKILL') },
    async close () {
      await handle.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
  await handle.start()
  return handle
}

/**
 * A Redis Cluster of `masters` redis-server processes (no replicas), formed
 * with `redis-cli --cluster create`. `url` is one seed node.
 * @param {{masters?: number}} [options]
 */
export async function startRedisCluster ({ masters = 3 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-cluster-'))
  const ports = []
  for (let i = 0; i < masters; i++) ports.push(await freePort())
  /** @type {import('node:child_process').ChildProcess[]} */
  const procs = []
  for (const port of ports) {
    const nodeDir = join(dir, String(port))
    mkdirSync(nodeDir)
    const proc = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no',
      '--cluster-enabled', 'yes', '--cluster-config-file', join(nodeDir, 'nodes.conf'), '--dir', nodeDir], { stdio: 'ignore' })
    children.add(proc)
    proc.once('exit', () => children.delete(proc))
    procs.push(proc)
  }
  for (const port of ports) await waitFor(() => redisPing(port), { timeout: 10_000, message: `cluster node ${port}` })
  const create = spawn('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { stdio: 'pipe' })
  let out = ''
  create.stdout.on('data', (d) => { out += d })
  create.stderr.on('data', (d) => { out += d })
  const [code] = await once(create, 'exit')
  if (code !== 0) throw new Error(`redis-cli --cluster create failed:\n${out}`)
  await waitFor(async () => (await redisCommand(ports[0], 'CLUSTER INFO')).includes('cluster_state:ok'), { timeout: 15_000, message: 'cluster_state:ok' })
  return {
    ports,
    url: `redis://127.0.0.1:${ports[0]}`,
    async close () {
      await Promise.all(procs.map(async (p) => {
        if (p.exitCode !== null || p.signalCode !== null) return
        const exited = once(p, 'exit')
        p.kill('SIGKILL')
        await exited
      }))
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/**
 * One inline command over a raw socket (no client library): its reply text.
 * @param {number} port
 * @param {string} command
 * @returns {Promise<string>}
 */
export async function redisCommand (port, command) {
  const { createConnection } = await import('node:net')
  return new Promise((resolve, reject) => {
    let buf = ''
    const s = createConnection({ host: '127.0.0.1', port }, () => s.write(`${command}\r\n`))
    s.setTimeout(1000, () => { s.destroy(); resolve(buf) })
    s.on('data', (d) => {
      buf += d
      // Bulk string or simple reply complete?
      const m = /^\$(\d+)\r\n/.exec(buf)
      if (!m || buf.length >= m[0].length + Number(m[1]) + 2) { s.destroy(); resolve(buf) }
    })
    s.on('error', reject)
  })
}

/** @param {number} port */
async function redisPing (port) {
  const { createConnection } = await import('node:net')
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => s.write('PING\r\n'))
    s.setTimeout(500, () => { s.destroy(); resolve(false) })
    s.on('data', (d) => { s.destroy(); resolve(String(d).startsWith('+PONG')) })
    s.on('error', () => resolve(false))
  })
}

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
  /** @type {string[]} */
  const logs = []
  /** @type {Record<string, string>} */
  const childEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }
  for (const [k, v] of Object.entries({ WSPS_HOST: '127.0.0.1', WSPS_LOG_LEVEL: 'warn', WSPS_NODE_NAME: `${name}-${port}`, ...env, WSPS_HTTP_PORT: port })) childEnv[k] = String(v)
  const proc = spawn(process.execPath, [main], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(proc)
  const exited = once(proc, 'exit').then(([code, signal]) => {
    children.delete(proc)
    return { code, signal }
  })
  for (const stream of [proc.stdout, proc.stderr]) {
    stream.setEncoding('utf8')
    stream.on('data', (chunk) => {
      logs.push(...String(chunk).split('\n').filter(Boolean))
      if (logs.length > 200) logs.splice(0, logs.length - 200)
    })
  }
  const base = `http://127.0.0.1:${port}`
  const handle = {
    name: childEnv.WSPS_NODE_NAME,
    port,
    pid: proc.pid,
    url: base,
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    proc,
    logs,
    exited,
    /** @param {NodeJS.Signals} [signal] */
    async stop (signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal)
      return exited
    },
    kill () { return handle.stop('SIGKILL') },
    async metrics () {
      const res = await fetch(`${base}/metrics`)
      return parseMetrics(await res.text())
    }
  }
  try {
    // Generous: on a busy 2-core machine a cold Node start can take many seconds.
    await waitFor(async () => {
      if (proc.exitCode !== null) throw new Error(`exited with ${proc.exitCode}`)
      return (await getJson(`${base}${ready ? '/readyz' : '/healthz'}`)).status === 200
    }, { timeout: 60_000, message: `${name} on ${port}` })
  } catch (err) {
    proc.kill('SIGKILL')
    throw new Error(`${/** @type {Error} */ (err).message}\n--- ${name} output:\n${logs.join('\n')}`)
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
 * The fake streaming vendor (fake-vendor.js) as its own process. `streamUrl`
 * is what WSPS_STREAM_URL points at; `state()` is what it has seen.
 * @param {{tickMs?: number, key?: string}} [options]
 */
export async function startFakeVendor ({ tickMs = 100, key = '' } = {}) {
  const handle = await startService(FAKE_VENDOR_MAIN, { FAKE_VENDOR_TICK_MS: tickMs, FAKE_VENDOR_KEY: key }, { name: 'vendor' })
  return {
    ...handle,
    streamUrl: `ws://127.0.0.1:${handle.port}/stream`,
    /** @returns {Promise<{connections: number, subscribed: Record<string, number>, events: {conn: number, action: string, symbols: string[]}[]}>} */
    async state () { return (await getJson(`${handle.url}/state`)).body },
    /** @param {'drop' | 'garbage'} what */
    async misbehave (what) { await fetch(`${handle.url}/${what}`, { method: 'POST' }) },
    /** @param {string} raw one text frame to every connection */
    async send (raw) { await fetch(`${handle.url}/send?raw=${encodeURIComponent(raw)}`, { method: 'POST' }) }
  }
}

/**
 * Prometheus text -> {'name{labels}': value}.
 * @param {string} text
 */
export function parseMetrics (text) {
  /** @type {Record<string, number>} */
  const out = {}
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const i = line.lastIndexOf(' ')
    out[line.slice(0, i).replace(/,?node="[^"]*"/, '').replace('{}', '')] = Number(line.slice(i + 1))
  }
  return out
}

export { ClientPool, TestClient } from './test-client.js'
export { SseStream } from './sse-stream.js'
export { startNginx, writeNginxConf } from './nginx.js'
