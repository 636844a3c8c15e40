// The one nats-server starter of the harness: the pinned nats-server
// (tools/tools.sh nats-server) with JetStream, alone or as a cluster of
// nodes routed to each other on loopback, each on free ports with a store
// directory of its own under os.tmpdir() (removed by close()). Ready means
// JetStream answers: alone, /healthz; a cluster, every node's /healthz and a
// meta leader, alive, that every running node agrees on (streams can be
// created and their leaders elected).

import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, getJson, httpOk } from './net.js'
import { startProcess } from './process.js'
import { waitFor } from './wait.js'

/**
 * The nats-server to run: $NATS_SERVER (tools/tools.sh env), else the one
 * tools/tools.sh links into $WSPS_CACHE/bin.
 *
 * @returns {string} its path
 */
export function natsServerBin () {
  const file = process.env.NATS_SERVER || join(process.env.WSPS_CACHE || join(homedir(), '.cache/wsps'), 'bin', 'nats-server')
  try {
    accessSync(file, constants.X_OK)
  } catch {
    throw new Error(`no nats-server at ${file}: build it with \`tools/tools.sh nats-server\` (make test-integration does)`)
  }
  return file
}

/**
 * One node's config (nats-server reads JSON as its config format).
 *
 * @param {{name: string, port: number, httpPort: number, store: string, route?: {port: number, peers: number[]}}} node
 */
function nodeConfig ({ name, port, httpPort, store, route }) {
  return {
    server_name: name,
    listen: `127.0.0.1:${port}`,
    http: `127.0.0.1:${httpPort}`,
    // Small limits: a test's streams hold a few thousand quotes.
    jetstream: { store_dir: store, max_memory_store: 64 * 1024 * 1024, max_file_store: 512 * 1024 * 1024 },
    ...(route && {
      cluster: {
        name: 'wsps-test',
        listen: `127.0.0.1:${route.port}`,
        routes: route.peers.map((p) => `nats-route://127.0.0.1:${p}`)
      }
    }),
    // A client (or a route) that went silent is found out in ~2 s, not the
    // default 2 minutes x 2.
    ping_interval: '1s',
    ping_max: 2
  }
}

/**
 * A node of ours: start() and stop() keep its ports and its store, so a
 * restarted node comes back as itself (a cluster's peer catching up).
 *
 * @param {{name: string, port: number, httpPort: number, dir: string, route?: {port: number, peers: number[]}}} o
 */
function natsNode ({ name, port, httpPort, dir, route }) {
  const bin = natsServerBin()
  const conf = join(dir, `${name}.json`)
  writeFileSync(conf, JSON.stringify(nodeConfig({ name, port, httpPort, store: join(dir, name), route }), null, 2))
  /** @type {import('./process.js').Child | null} */
  let child = null
  const node = {
    name,
    port,
    url: `nats://127.0.0.1:${port}`,
    monitor: `http://127.0.0.1:${httpPort}`,
    /** The pid of the running nats-server (0 when stopped). */
    get pid () { return child?.alive ? child.pid : 0 },
    /** Spawns it; ready() says when it serves. */
    spawn () {
      child = startProcess(bin, ['-c', conf], { name: `nats ${name} ${port}` })
    },
    /** @returns {Promise<boolean>} it runs and its JetStream answers /healthz */
    async ready () {
      if (!child?.alive) throw new Error(`nats-server ${name} exited: ${child?.logs.slice(-10).join('\n')}`)
      return httpOk(`${node.monitor}/healthz`)
    },
    /** @returns {Promise<string>} the meta leader it knows ('' none) */
    async metaLeader () {
      try {
        return (await getJson(`${node.monitor}/jsz`)).body?.meta_cluster?.leader ?? ''
      } catch {
        return ''
      }
    },
    /** @param {NodeJS.Signals} [signal] */
    async stop (signal = 'SIGTERM') { await child?.stop(signal, { killAfterMs: 5000 }) },
    kill () { return node.stop('SIGKILL') }
  }
  return node
}

/** @typedef {ReturnType<typeof natsNode>} NatsNode */

/**
 * A standalone nats-server with JetStream. Its handle can stop and start it
 * again on the same port with the same store.
 */
export async function startNats () {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-nats-'))
  const node = natsNode({ name: 'n1', port: await freePort(), httpPort: await freePort(), dir })
  const handle = {
    url: node.url,
    port: node.port,
    dir,
    get pid () { return node.pid },
    async start () {
      node.spawn()
      await waitFor(() => node.ready(), { timeout: 10_000, message: `nats-server on ${node.port}` })
    },
    /** @param {NodeJS.Signals} [signal] */
    stop: (signal) => node.stop(signal),
    kill: () => node.kill(),
    async close () {
      await node.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
  try {
    await handle.start()
  } catch (err) {
    await handle.close()
    throw err
  }
  return handle
}

/**
 * A JetStream cluster of `nodes` nats-servers routed to each other on
 * loopback. `url` names every node (comma-separated, as WSPS_NATS_URL takes
 * them). kill(i) and start(i) take one node down and bring it back as
 * itself; ready() waits for a meta leader again.
 *
 * @param {{nodes?: number}} [options]
 */
export async function startNatsCluster ({ nodes: count = 3 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-nats-cluster-'))
  const routes = []
  for (let i = 0; i < count; i++) routes.push(await freePort())
  /** @type {NatsNode[]} */
  const nodes = []
  for (let i = 0; i < count; i++) {
    nodes.push(natsNode({
      name: `n${i + 1}`,
      port: await freePort(),
      httpPort: await freePort(),
      dir,
      route: { port: routes[i], peers: routes.filter((_, j) => j !== i) }
    }))
  }
  const up = () => nodes.filter((n) => n.pid !== 0)
  const handle = {
    nodes,
    url: nodes.map((n) => n.url).join(','),
    dir,
    /** Every running node serves JetStream and they agree on one meta leader, a running one. */
    async ready ({ timeout = 30_000 } = {}) {
      await waitFor(async () => {
        const running = up()
        const ok = await Promise.all(running.map((n) => n.ready()))
        if (!ok.every(Boolean)) return false
        const leaders = new Set(await Promise.all(running.map((n) => n.metaLeader())))
        return leaders.size === 1 && running.some((n) => leaders.has(n.name))
      }, { timeout, interval: 100, message: 'a JetStream meta leader on every node' })
    },
    /** @returns {Promise<string>} the meta leader's name ('' none) */
    metaLeader: () => up()[0]?.metaLeader() ?? Promise.resolve(''),
    /** @param {number} i */
    async start (i) {
      nodes[i].spawn()
      await handle.ready()
    },
    /** @param {number} i */
    kill: (i) => nodes[i].kill(),
    async close () {
      await Promise.all(nodes.map((n) => n.stop()))
      rmSync(dir, { recursive: true, force: true })
    }
  }
  try {
    for (const n of nodes) n.spawn()
    await handle.ready()
  } catch (err) {
    await handle.close()
    throw err
  }
  return handle
}

/** @typedef {Awaited<ReturnType<typeof startNats>>} NatsHandle */
/** @typedef {Awaited<ReturnType<typeof startNatsCluster>>} NatsClusterHandle */
