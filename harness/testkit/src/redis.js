// The one Redis starter of the harness: a redis-server of our own on a free
// loopback port, without persistence; with a password (and an ACL user),
// TLS-only (a throwaway CA made by the openssl CLI: how managed Redis
// services, and the chart's external Redis with `rediss://`, are reached),
// as a Redis Cluster, or as a primary with replicas watched by Sentinels
// (those too TLS-only, replicating and monitoring over TLS, as the chart's
// redis.tls runs them).

import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import { Redis } from 'ioredis'
import { freePort } from './net.js'
import { startProcess } from './process.js'
import { sleep, waitFor } from './wait.js'

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
 * A socket to 127.0.0.1:port, over TLS (verified against `ca`) when `ca` is given.
 *
 * @param {number} port
 * @param {string | undefined} ca
 * @param {() => void} onConnect
 */
function dial (port, ca, onConnect) {
  return ca
    ? tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca: readFileSync(ca) }, onConnect)
    : createConnection({ host: '127.0.0.1', port }, onConnect)
}

/**
 * The redis.conf lines of a TLS-only server (Redis node or Sentinel) on
 * `port`, as the chart's redis.tls writes them: no plain port, TLS 1.3, no
 * client certificates asked for; replication and a Sentinel's own
 * connections (to the nodes and the other Sentinels) over TLS too.
 *
 * @param {number} port
 * @param {{ca: string, cert: string, key: string}} certs
 */
function tlsConfig (port, certs) {
  return ['port 0', `tls-port ${port}`, `tls-cert-file ${certs.cert}`, `tls-key-file ${certs.key}`, `tls-ca-cert-file ${certs.ca}`,
    'tls-auth-clients no', 'tls-replication yes', 'tls-protocols "TLSv1.3"']
}

/**
 * One reply to PING (after AUTH, when a password is given), over TLS when `ca` is given.
 *
 * @param {{port: number, password?: string, username?: string, ca?: string}} o
 * @returns {Promise<boolean>} PONG came back
 */
function ping ({ port, password, username, ca }) {
  return new Promise((resolve) => {
    const auth = password === undefined ? '' : `AUTH ${username ? `${username} ` : ''}${password}\r\n`
    const s = dial(port, ca, () => s.write(`${auth}PING\r\n`))
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
  const config = [`dir ${dir}`, 'bind 127.0.0.1', ...(certs ? tlsConfig(p, certs) : [`port ${p}`])]
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
 * fullCoverage false: `cluster-require-full-coverage no`, the shards that
 * did not fail keep serving while a failed one's slots are uncovered.
 *
 * @param {{masters?: number, replicas?: number, nodeTimeoutMs?: number, fullCoverage?: boolean}} [options]
 */
export async function startRedisCluster ({ masters = 3, replicas = 0, nodeTimeoutMs = 5000, fullCoverage = true } = {}) {
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
      `cluster-require-full-coverage ${fullCoverage ? 'yes' : 'no'}`,
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

/** @typedef {Awaited<ReturnType<typeof startRedisCluster>>} RedisClusterHandle */

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

/**
 * @typedef {object} SentinelOptions
 * @property {number} [replicas] Redis replicas besides the primary
 * @property {number} [sentinels] Sentinel processes; the quorum is a majority of them
 * @property {string} [password] AUTH of every Redis node (requirepass, masterauth) and of every Sentinel
 * @property {string} [masterName] the name the Sentinels monitor the primary under
 * @property {number} [downAfterMs] `down-after-milliseconds`: how long the primary may not answer before
 *   a Sentinel calls it down (the chart's default is 5000; low here so the tests are fast)
 * @property {number} [failoverTimeoutMs] `failover-timeout`
 * @property {boolean} [tls] nodes and Sentinels TLS-only (TLS 1.3), with a fresh CA (`ca` of the handle);
 *   replication and the Sentinels' own connections over TLS
 */

/**
 * A Redis primary with replicas, each with an append-only file (fsynced
 * every second, as the chart sets it), watched by a quorum of Sentinels, all
 * on loopback. Replication is asynchronous: a write acknowledged by the
 * primary just before it dies may not have reached the replica promoted in
 * its place.
 *
 * @param {SentinelOptions} [options]
 */
export async function startRedisSentinel ({ replicas = 2, sentinels = 3, password = 'sentinel-test-pw', masterName = 'wsps', downAfterMs = 1000, failoverTimeoutMs = 3000, tls = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-sentinel-'))
  const certs = tls ? makeCerts(dir, 'redis') : null
  const ca = certs?.ca
  /** @param {number} port */
  const listen = (port) => (certs ? tlsConfig(port, certs) : [`port ${port}`])
  const quorum = Math.floor(sentinels / 2) + 1
  const auth = [`requirepass ${password}`, `masterauth ${password}`]

  /** One Redis node: restartable on its port, with its files kept. */
  const node = async () => {
    const port = await freePort()
    const nodeDir = join(dir, `redis-${port}`)
    mkdirSync(nodeDir)
    /** @type {import('./process.js').Child | null} */
    let child = null
    return {
      port,
      get alive () { return child?.alive ?? false },
      /** @param {number | null} primaryPort null: start as the primary */
      async start (primaryPort) {
        const config = [`dir ${nodeDir}`, 'bind 127.0.0.1', ...listen(port), 'appendonly yes', 'appendfsync everysec', 'replica-announce-ip 127.0.0.1', ...auth]
        if (primaryPort !== null) config.push(`replicaof 127.0.0.1 ${primaryPort}`)
        const c = startProcess('redis-server', ['-'], { name: `redis ${port}`, stdin: true })
        c.proc.stdin?.end([...config, ''].join('\n'))
        child = c
        await waitFor(() => {
          if (!c.alive) throw new Error(`redis-server exited: ${c.logs.join('\n')}`)
          return ping({ port, password, ca })
        }, { timeout: 10_000, message: `redis on ${port}` })
      },
      kill: () => child?.stop('SIGKILL')
    }
  }

  const nodes = []
  for (let i = 0; i <= replicas; i++) nodes.push(await node())
  await nodes[0].start(null)
  for (const n of nodes.slice(1)) await n.start(nodes[0].port)

  // Sentinels rewrite their own config file: each gets one on disk.
  const sentinelPorts = []
  /** @type {import('./process.js').Child[]} */
  const sentinelProcs = []
  for (let i = 0; i < sentinels; i++) {
    const port = await freePort()
    const file = join(dir, `sentinel-${port}.conf`)
    writeFileSync(file, [
      ...listen(port), 'bind 127.0.0.1', `dir ${dir}`, `requirepass ${password}`,
      `sentinel monitor ${masterName} 127.0.0.1 ${nodes[0].port} ${quorum}`,
      `sentinel auth-pass ${masterName} ${password}`,
      `sentinel down-after-milliseconds ${masterName} ${downAfterMs}`,
      `sentinel failover-timeout ${masterName} ${failoverTimeoutMs}`,
      `sentinel parallel-syncs ${masterName} 1`, ''
    ].join('\n'), { mode: 0o600 })
    sentinelPorts.push(port)
    sentinelProcs.push(startProcess('redis-server', [file, '--sentinel'], { name: `sentinel ${port}` }))
  }
  /** @type {Redis[]} */
  const conns = sentinelPorts.map((port) => new Redis({ host: '127.0.0.1', port, password, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200, enableOfflineQueue: true, ...(ca ? { tls: { ca: readFileSync(ca) } } : {}) }))
  for (const c of conns) c.on('error', () => {})

  /**
   * @param {Redis} c
   * @param {...string} args
   * @returns {Promise<any>}
   */
  const sentinel = (c, ...args) => /** @type {Promise<any>} */ (c.call('SENTINEL', ...args))

  const handle = {
    masterName,
    password,
    quorum,
    /** The CA file that signed the nodes' and Sentinels' certificate (with `tls`; '' without). */
    ca: ca ?? '',
    /** Its scratch directory (removed by close()). */
    dir,
    /** `host:port,...` of the Sentinels (WSPS_REDIS_SENTINELS). */
    sentinels: sentinelPorts.map((p) => `127.0.0.1:${p}`).join(','),
    /**
     * What a service needs to find the primary through these Sentinels
     * (its WSPS_REDIS_URL counts only for its scheme in sentinel mode).
     * @returns {Record<string, string>}
     */
    serviceEnv () {
      return {
        ...(ca ? { WSPS_REDIS_TLS_CA_FILE: ca } : {}),
        WSPS_REDIS_MODE: 'sentinel',
        WSPS_REDIS_SENTINELS: this.sentinels,
        WSPS_REDIS_MASTER_NAME: masterName,
        WSPS_REDIS_PASSWORD: password,
        WSPS_REDIS_SENTINEL_PASSWORD: password
      }
    },
    sentinelPorts,
    /** Ports of every Redis node, the primary's first as started. */
    nodePorts: nodes.map((n) => n.port),
    /**
     * The primary every Sentinel names (`SENTINEL get-master-addr-by-name`);
     * null while they disagree or do not answer.
     *
     * @returns {Promise<number | null>} its port
     */
    async primary () {
      const answers = await Promise.all(conns.map((c) => sentinel(c, 'get-master-addr-by-name', masterName).catch(() => null)))
      const ports = new Set(answers.map((a) => (Array.isArray(a) ? Number(a[1]) : null)))
      const [port] = ports
      return ports.size === 1 ? port : null
    },
    /**
     * SIGKILLs the current primary.
     *
     * @returns {Promise<number>} its port
     */
    async killPrimary () {
      const port = await handle.primary()
      const n = nodes.find((x) => x.port === port)
      if (!n) throw new Error(`no primary to kill (Sentinels say ${port})`)
      await n.kill()
      return n.port
    },
    /**
     * Waits until every Sentinel names a primary other than `old` and that
     * node answers as a primary.
     *
     * @param {number} old port of the primary that was killed
     * @param {number} [timeout]
     * @returns {Promise<number>} the new primary's port
     */
    async newPrimary (old, timeout = 30_000) {
      let port = 0
      await waitFor(async () => {
        const p = await handle.primary()
        if (p === null || p === old) return false
        const role = await redisCommandAuth(p, password, 'ROLE', ca).catch(() => '')
        if (!role.includes('master')) return false
        port = p
        return true
      }, { timeout, interval: 20, message: `a new primary elected in place of ${old}` })
      return port
    },
    /**
     * Starts a killed node again, as a replica of the current primary (its
     * append-only file is loaded, then replaced by a full sync), and waits
     * until it is in sync and every Sentinel lists it as a healthy replica:
     * the next failover may promote it.
     *
     * @param {number} port
     */
    async restart (port) {
      const n = nodes.find((x) => x.port === port)
      const primary = await handle.primary()
      if (!n || n.alive || primary === null) throw new Error(`cannot restart ${port} (primary ${primary})`)
      await n.start(primary)
      await waitFor(async () => (await redisCommandAuth(port, password, 'INFO replication', ca).catch(() => '')).includes('master_link_status:up'), { timeout: 20_000, message: `${port} in sync with ${primary}` })
      await handle.healthy()
    },
    /**
     * Waits until every Sentinel agrees on the primary, sees the other
     * Sentinels and every live replica without a down flag, and the quorum
     * can authorise a failover (`SENTINEL ckquorum`).
     */
    async healthy () {
      const live = nodes.filter((n) => n.alive).length - 1
      await waitFor(async () => {
        if (await handle.primary() === null) return false
        for (const c of conns) {
          const ok = await sentinel(c, 'ckquorum', masterName).catch(() => '')
          if (!String(ok).startsWith('OK')) return false
          const reps = /** @type {string[][]} */ (await sentinel(c, 'replicas', masterName).catch(() => []))
          const good = reps.filter((r) => {
            const flags = r[r.indexOf('flags') + 1] ?? ''
            return !/s_down|o_down|disconnected/.test(flags) && r[r.indexOf('master-link-status') + 1] === 'ok'
          })
          if (good.length < live) return false
          const peers = /** @type {unknown[]} */ (await sentinel(c, 'sentinels', masterName).catch(() => []))
          if (peers.length < sentinels - 1) return false
        }
        return true
      }, { timeout: 30_000, interval: 100, message: 'Sentinels agree on the primary and see every replica and each other' })
    },
    async close () {
      for (const c of conns) c.disconnect()
      await Promise.all([...sentinelProcs.map((p) => p.kill()), ...nodes.map((n) => n.kill())])
      rmSync(dir, { recursive: true, force: true })
    }
  }
  try {
    await handle.healthy()
    // A moment more for the replicas' first full sync to settle.
    await sleep(100)
  } catch (err) {
    await handle.close()
    throw err
  }
  return handle
}

/** @typedef {Awaited<ReturnType<typeof startRedisSentinel>>} RedisSentinelHandle */

/**
 * One command after AUTH over a plain socket (TLS when `ca` is given): its reply text.
 *
 * @param {number} port
 * @param {string} password
 * @param {string} command
 * @param {string} [ca]
 * @returns {Promise<string>}
 */
function redisCommandAuth (port, password, command, ca) {
  return new Promise((resolve, reject) => {
    let buf = ''
    const s = dial(port, ca, () => s.write(`AUTH ${password}\r\n${command}\r\n`))
    s.setTimeout(1000, () => { s.destroy(); resolve(buf) })
    s.on('data', (d) => {
      buf += d
      // +OK of AUTH, then one reply: a bulk string or an array (ROLE) read until quiet.
      const rest = buf.replace(/^\+OK\r\n/, '')
      const m = /^\$(\d+)\r\n/.exec(rest)
      if (m && rest.length >= m[0].length + Number(m[1]) + 2) { s.destroy(); resolve(rest) }
      if (rest.startsWith('*') && /\r\n$/.test(rest) && rest.split('\r\n').length > 4) { s.destroy(); resolve(rest) }
      if (rest.startsWith('-')) { s.destroy(); resolve(rest) }
    })
    s.on('error', reject)
  })
}

/**
 * The port of the Cluster primary that owns `key`'s slot, as the first of
 * `ports` sees it (0: none serves it now).
 *
 * @param {number[]} ports live nodes to ask
 * @param {string} key
 */
export async function slotOwner (ports, key) {
  const slot = Number(/:(\d+)/.exec(await redisCommand(ports[0], `CLUSTER KEYSLOT ${key}`))?.[1])
  const nodes = await redisCommand(ports[0], 'CLUSTER NODES')
  for (const line of nodes.split('\n')) {
    if (!/\bmaster\b/.test(line) || /\bfail\b/.test(line)) continue
    for (const range of line.trim().split(/\s+/).slice(8)) {
      const [lo, hi = lo] = range.split('-').map(Number)
      if (slot >= lo && slot <= hi) return Number(/:(\d+)@/.exec(line)?.[1])
    }
  }
  return 0
}

/**
 * The primary a Cluster failover test kills: neither the seed node (the
 * services' WSPS_REDIS_URL) nor the owner of the scheduler's keys, where
 * another can be (the failure a shard must survive alone); and which of
 * `symbols` live on it (`failed`) and on the other shards (`others`).
 *
 * @param {RedisClusterHandle} cluster
 * @param {string[]} symbols
 */
export async function failoverVictim (cluster, symbols) {
  const primaries = await cluster.primaries()
  const sched = await slotOwner(primaries, 'wsps:{sched}:demand')
  const victim = primaries.find((p) => p !== cluster.ports[0] && p !== sched) ?? primaries.find((p) => p !== sched) ?? primaries[0]
  const owners = await Promise.all(symbols.map((sym) => slotOwner(primaries, `wsps:{${sym}}:last`)))
  return { victim, failed: symbols.filter((_, i) => owners[i] === victim), others: symbols.filter((_, i) => owners[i] !== victim) }
}

/**
 * Kills the Cluster primary `victim` and resolves once a replica serves in
 * its place (as many primaries as before, `victim` not among them).
 *
 * @param {RedisClusterHandle} cluster
 * @param {number} victim
 * @param {{timeout: number, interval: number}} wait
 * @returns {Promise<{killedAt: number, promotedAt: number}>}
 */
export async function killPrimary (cluster, victim, { timeout, interval }) {
  const count = (await cluster.primaries()).length
  const killedAt = Date.now()
  await cluster.kill(victim)
  await waitFor(async () => {
    const now = await cluster.primaries()
    return now.length === count && !now.includes(victim)
  }, { timeout, interval, message: `a replica promoted in place of ${victim}` })
  return { killedAt, promotedAt: Date.now() }
}
