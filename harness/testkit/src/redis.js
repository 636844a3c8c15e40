// The one Redis starter of the harness: a redis-server of our own on a free
// loopback port, without persistence; with a password (and an ACL user),
// TLS-only (a throwaway CA made by the openssl CLI: how managed Redis
// services, and the chart's external Redis with `rediss://`, are reached),
// or as a Redis Cluster.

import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import { freePort } from './net.js'
import { startProcess } from './process.js'
import { waitFor } from './wait.js'

/**
 * A CA and a server certificate it signed, for localhost and 127.0.0.1.
 *
 * @param {string} dir
 * @param {string} name file prefix
 * @returns {{ca: string, cert: string, key: string}} PEM file paths
 */
export function makeCerts (dir, name) {
  const f = (/** @type {string} */ s) => join(dir, `${name}-${s}`)
  const run = (/** @type {string[]} */ args) => execFileSync('openssl', args, { stdio: 'pipe' })
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${name} test CA`, '-keyout', f('ca.key'), '-out', f('ca.pem')])
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', f('server.key'), '-out', f('server.csr')])
  const ext = f('ext.cnf')
  writeFileSync(ext, 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  run(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '1', '-extfile', ext, '-out', f('server.pem')])
  return { ca: f('ca.pem'), cert: f('server.pem'), key: f('server.key') }
}

/**
 * @typedef {object} RedisOptions
 * @property {number} [port] default: a free one
 * @property {string} [password] require AUTH with it
 * @property {string} [username] with `password`: an ACL user of that name holds the password and
 *   every permission; the default user is off
 * @property {boolean} [tls] TLS only (no plain port), with a fresh CA; clients are not asked for a certificate
 * @property {boolean} [persist] keep the dataset across restarts: an append-only file, fsynced per
 *   write (off by default: a restart comes back empty)
 */

/**
 * One reply to PING (after AUTH, when a password is given), over TLS when `ca` is given.
 *
 * @param {{port: number, password?: string, username?: string, ca?: string}} o
 * @returns {Promise<boolean>} PONG came back
 */
function ping ({ port, password, username, ca }) {
  return new Promise((resolve) => {
    const auth = password === undefined ? '' : `AUTH ${username ? `${username} ` : ''}${password}\r\n`
    const hello = () => s.write(`${auth}PING\r\n`)
    const s = ca
      ? tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: readFileSync(ca) }, hello)
      : createConnection({ host: '127.0.0.1', port }, hello)
    let out = ''
    s.setTimeout(1000, () => { s.destroy(); resolve(false) })
    s.on('data', (d) => {
      out += d
      if (out.includes('+PONG') || out.includes('-')) { s.destroy(); resolve(out.includes('+PONG')) }
    })
    s.on('error', () => resolve(false))
  })
}

/**
 * redis-server with `config` lines. They go in on stdin, not argv: argv is
 * world-readable in /proc and ps, and a password may be among them.
 *
 * @param {string[]} config
 * @param {string} name
 */
function spawnRedis (config, name) {
  const child = startProcess('redis-server', ['-'], { name, stdin: true })
  child.proc.stdin?.end(['save ""', 'appendonly no', ...config].join('\n') + '\n')
  return child
}

/**
 * A redis-server of our own. The handle can stop and start it again on the
 * same port (the chaos scenarios kill it).
 *
 * @param {RedisOptions} [options]
 */
export async function startRedis ({ port, password, username, tls = false, persist = false } = {}) {
  const p = port ?? await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'wsps-redis-'))
  const certs = tls ? makeCerts(dir, 'redis') : null
  const config = [`dir ${dir}`, 'bind 127.0.0.1']
  if (certs) {
    config.push('port 0', `tls-port ${p}`, `tls-cert-file ${certs.cert}`, `tls-key-file ${certs.key}`, `tls-ca-cert-file ${certs.ca}`, 'tls-auth-clients no')
  } else {
    config.push(`port ${p}`)
  }
  if (persist) config.push('appendonly yes', 'appendfsync always')
  if (password !== undefined && username) config.push('user default off', `user ${username} on >${password} ~* &* +@all`)
  else if (password !== undefined) config.push(`requirepass ${password}`)
  /** @type {import('./process.js').Child | null} */
  let child = null
  const handle = {
    port: p,
    /** With TLS the certificate names localhost, so that is the host to dial. */
    url: certs ? `rediss://localhost:${p}` : `redis://127.0.0.1:${p}`,
    /** The CA file that signed its certificate (with `tls`; '' without). */
    ca: certs?.ca ?? '',
    /** Its scratch directory (removed by close()). */
    dir,
    /** The pid of the running redis-server (0 when stopped). */
    get pid () { return child?.alive ? child.pid : 0 },
    async start () {
      child = spawnRedis(config, `redis ${p}`)
      const c = child
      await waitFor(() => {
        if (!c.alive) throw new Error(`redis-server exited: ${c.logs.join('\n')}`)
        return ping({ port: p, password, username, ca: certs?.ca })
      }, { timeout: 10_000, message: `redis on ${p}` })
    },
    /** @param {NodeJS.Signals} [signal] */
    async stop (signal = 'SIGTERM') { await child?.stop(signal) },
    /** Deletes what a persisting Redis would load on its next start (while stopped). */
    forget () {
      for (const f of ['dump.rdb', 'appendonlydir']) rmSync(join(dir, f), { recursive: true, force: true })
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

/** @typedef {Awaited<ReturnType<typeof startRedis>>} RedisHandle */

/**
 * A Redis Cluster of `masters` redis-server processes, each with `replicas`
 * replicas, formed with `redis-cli --cluster create`. `url` is one seed
 * node. With replicas, a primary killed with kill() fails over to its
 * replica after `nodeTimeoutMs` (cluster-node-timeout); start() brings a
 * killed node back (it rejoins as a replica of the promoted one).
 *
 * @param {{masters?: number, replicas?: number, nodeTimeoutMs?: number}} [options]
 */
export async function startRedisCluster ({ masters = 3, replicas = 0, nodeTimeoutMs = 5000 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-cluster-'))
  const ports = []
  for (let i = 0; i < masters * (1 + replicas); i++) ports.push(await freePort())
  /** @param {number} port */
  const spawnNode = (port) => {
    const nodeDir = join(dir, String(port))
    mkdirSync(nodeDir, { recursive: true })
    // No delay before a full sync (default 5 s): a replica that never synced
    // cannot be promoted.
    return spawnRedis(['bind 127.0.0.1', `port ${port}`, 'cluster-enabled yes', `cluster-node-timeout ${nodeTimeoutMs}`, 'repl-diskless-sync-delay 0',
      `cluster-config-file ${join(nodeDir, 'nodes.conf')}`, `dir ${nodeDir}`], `cluster node ${port}`)
  }
  /** @type {Map<number, import('./process.js').Child>} */
  const nodes = new Map(ports.map((port) => [port, spawnNode(port)]))
  for (const port of ports) await waitFor(() => ping({ port }), { timeout: 10_000, message: `cluster node ${port}` })
  const create = startProcess('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes'])
  const { code } = await create.exited
  if (code !== 0) throw new Error(`redis-cli --cluster create failed:\n${create.logs.join('\n')}`)
  const handle = {
    ports,
    url: `redis://127.0.0.1:${ports[0]}`,
    /**
     * Resolves once every slot is served, every live node agrees
     * (`cluster_state:ok`) and every live replica is in sync with its primary
     * (only a synced replica can be promoted).
     */
    async ok () {
      for (const port of ports) {
        if (!nodes.get(port)?.alive) continue
        await waitFor(async () => (await redisCommand(port, 'CLUSTER INFO')).includes('cluster_state:ok'), { timeout: 30_000, message: `cluster_state:ok on ${port}` })
        await waitFor(async () => {
          const info = await redisCommand(port, 'INFO replication')
          return info.includes('role:master') || info.includes('master_link_status:up')
        }, { timeout: 30_000, message: `replica ${port} in sync` })
      }
    },
    /**
     * The ports of the nodes serving slots now, as the live nodes see it.
     * @returns {Promise<number[]>}
     */
    async primaries () {
      const live = ports.find((p) => nodes.get(p)?.alive)
      const text = await redisCommand(/** @type {number} */ (live), 'CLUSTER NODES')
      return text.split('\n').filter((l) => /\bmaster\b/.test(l) && !/\bfail\b/.test(l) && /\d+-\d+|\s\d+$/.test(l.trim()))
        .map((l) => Number(/:(\d+)@/.exec(l)?.[1])).filter((p) => ports.includes(p))
    },
    /** @param {number} port */
    async kill (port) { await nodes.get(port)?.stop('SIGKILL') },
    /** @param {number} port @returns {string[]} the node's last log lines */
    logs: (port) => nodes.get(port)?.logs ?? [],
    /** @param {number} port a killed node, back with its nodes.conf */
    async start (port) {
      nodes.set(port, spawnNode(port))
      await waitFor(() => ping({ port }), { timeout: 10_000, message: `cluster node ${port}` })
    },
    async close () {
      await Promise.all([...nodes.values()].map((n) => n.kill()))
      rmSync(dir, { recursive: true, force: true })
    }
  }
  await handle.ok()
  return handle
}

/**
 * One inline command over a plain socket (no client library): its reply text.
 *
 * @param {number} port
 * @param {string} command
 * @returns {Promise<string>}
 */
export function redisCommand (port, command) {
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
