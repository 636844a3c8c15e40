// The e2e's Redis failover (issue #25 item 4), for a release installed with
// redis.mode=sentinel (infra/e2e/values.yaml): the primary's pod is deleted
// while the host clients (infra/e2e/fleet.mjs) hold distinct subscriptions;
// the Sentinels name another primary, every subscription gets ticks again,
// the replacement pod joins as a replica, and the chart's Sentinel-mode
// alert (WspsRedisFailover) fires and later resolves while WspsRedisDown,
// whose `for` a failover is far shorter than, never fires.
// Called from infra/e2e/e2e.mjs, which owns the cluster helpers it passes in.
import { sleep } from '../../harness/testkit/src/wait.js'

/**
 * @typedef {object} Cluster what infra/e2e/e2e.mjs hands in
 * @property {string} ns the release's namespace
 * @property {string} rel the release name
 * @property {string} masterName redis.sentinel.masterName
 * @property {string[]} cli redis-cli and the options that reach the pods' Redis (with redis.tls: --tls --cacert <the chart's CA>)
 * @property {(args: string[], o?: {timeoutMs?: number, allowFail?: boolean}) => Promise<{code: number | null, out: string, err: string}>} kubectl in the namespace
 * @property {(component: string) => Promise<any[]>} pods the release's pods of a component
 * @property {(p: any) => boolean} isReady
 * @property {import('./prometheus.mjs').Prometheus} prom
 * @property {<T>(what: string, timeoutMs: number, check: () => T | Promise<T>, everyMs?: number) => Promise<any>} until
 * @property {(msg: string) => void} log
 * @property {(msg: string) => never} fail
 */

const secs = (/** @type {number} */ ms) => (ms / 1000).toFixed(1)
// How long WspsRedisFailover stays active after a failover (its [5m] window, charts/wsps/files/prometheus/wsps-alerts.yaml), plus scrape and evaluation.
const ALERT_WINDOW_MS = 5 * 60000 + 60000

/** Alert states over time, polled from Prometheus until stopped. */
class AlertWatch {
  /** @param {Cluster} c @param {string} name */
  constructor (c, name) {
    this.c = c
    this.name = name
    /** @type {{state: string, at: number}[]} */
    this.seen = []
    this.stopped = false
    this.done = this.#poll()
  }

  async #poll () {
    while (!this.stopped) {
      const a = await this.c.prom.alerts(this.name, this.c.ns).catch(() => null)
      if (a) {
        const state = a.some((x) => x.state === 'firing') ? 'firing' : a.length ? 'pending' : 'inactive'
        if (this.seen.at(-1)?.state !== state) { this.seen.push({ state, at: Date.now() }); this.c.log(`  alert ${this.name}: ${state}`) }
      }
      await sleep(1000)
    }
  }

  get path () { return this.seen.map((x) => x.state).join(' -> ') || 'none' }
  firing () { return this.seen.find((x) => x.state === 'firing') }
  async stop () { this.stopped = true; await this.done }
}

/**
 * The primary's address as a Sentinel names it (`<pod>.<set>-headless`), '' when it does not answer.
 *
 * @param {Cluster} c
 * @param {string} sentinelPod
 */
async function askSentinel (c, sentinelPod) {
  // REDISCLI_AUTH is set in the container (the chart's StatefulSet).
  const r = await c.kubectl(['exec', sentinelPod, '-c', 'sentinel', '--', ...c.cli, '--no-auth-warning', '--raw', '-p', '26379',
    'sentinel', 'get-master-addr-by-name', c.masterName], { allowFail: true, timeoutMs: 15000 })
  return r.code === 0 ? r.out.split('\n')[0].trim() : ''
}

/**
 * `ROLE` of a Redis node pod: master or slave, and for a replica its link state.
 *
 * @param {Cluster} c
 * @param {string} pod
 */
async function role (c, pod) {
  const r = await c.kubectl(['exec', pod, '-c', 'redis', '--', ...c.cli, '--no-auth-warning', '--raw', 'role'], { allowFail: true, timeoutMs: 15000 })
  const lines = r.out.split('\n').map((l) => l.trim())
  return { role: r.code === 0 ? lines[0] : '', state: lines[3] ?? '' }
}

/**
 * The release's Redis with Sentinel is complete: every node and Sentinel
 * ready, one primary as the Sentinels name it, the other nodes its
 * connected replicas.
 *
 * @param {Cluster} c
 * @param {number} nodes redis.sentinel.nodes
 * @param {number} sentinels redis.sentinel.replicas
 * @returns {Promise<string | {primary: string, replicas: string[]}>} what is missing, or the set
 */
export async function sentinelSet (c, nodes = 3, sentinels = 3) {
  const n = (await c.pods('redis-node')).filter(c.isReady)
  const s = (await c.pods('redis-sentinel')).filter(c.isReady)
  if (n.length !== nodes || s.length !== sentinels) return `${n.length}/${nodes} Redis nodes and ${s.length}/${sentinels} Sentinels ready`
  const named = await askSentinel(c, s[0].metadata.name)
  const primary = named.split('.')[0]
  if (!n.some((p) => p.metadata.name === primary)) return `Sentinel ${s[0].metadata.name} names the primary '${named}'`
  const replicas = n.map((p) => p.metadata.name).filter((x) => x !== primary)
  const roles = await Promise.all([primary, ...replicas].map((p) => role(c, p)))
  if (roles[0].role !== 'master') return `${primary} (named the primary) has role ${roles[0].role || '?'}`
  const bad = replicas.filter((_, i) => roles[i + 1].role !== 'slave' || roles[i + 1].state !== 'connected')
  return bad.length ? `replicas not connected to ${primary}: ${bad.map((b) => `${b} ${JSON.stringify(roles[replicas.indexOf(b) + 1])}`).join(', ')}` : { primary, replicas }
}

/**
 * Deletes the primary's pod under the host clients' distinct subscriptions.
 *
 * @param {Cluster} c
 * @param {import('./fleet.mjs').Fleet} fleet the host clients
 * @param {Promise<void>} rulesLoaded the chart's rules loaded into Prometheus
 * @returns {Promise<{lines: string[], resolved: Promise<string>}>} report lines; `resolved` settles when WspsRedisFailover has resolved (about 5 minutes later) with its line
 */
export async function redisFailover (c, fleet, rulesLoaded) {
  await rulesLoaded
  const before = await c.until('the Sentinel set to be complete', 120000, () => sentinelSet(c))
  const sentinel = (await c.pods('redis-sentinel')).filter(c.isReady)[0].metadata.name
  for (const name of ['WspsRedisFailover', 'WspsRedisDown']) {
    if ((await c.prom.alerts(name, c.ns)).length) c.fail(`${name} is active before Redis was touched`)
  }
  const failoverAlert = new AlertWatch(c, 'WspsRedisFailover')
  const downAlert = new AlertWatch(c, 'WspsRedisDown')
  const old = (await c.pods('redis-node')).find((p) => p.metadata.name === before.primary)
  const tot0 = fleet.totals()
  const closes0 = Object.values(fleet.closes).reduce((a, b) => a + b, 0)
  const subs = fleet.clients.flatMap((client) => client.symbols.map((symbol) => ({ client, symbol })))
  c.log(`  primary ${before.primary}, replicas ${before.replicas.join(', ')}; ${fleet.clients.length} host clients hold ${subs.length} distinct subscriptions`)

  const t0 = Date.now()
  const deletion = c.kubectl(['delete', 'pod', before.primary, '--wait=true', '--timeout=120s'], { timeoutMs: 130000 })
  deletion.catch(() => {})
  // A Sentinel names another node: the new primary.
  let tNew = 0
  let promoted = ''
  await c.until('the Sentinels to name a new primary', 120000, async () => {
    const named = (await askSentinel(c, sentinel)).split('.')[0]
    if (!named || named === before.primary) return `Sentinel ${sentinel} names ${named || 'nothing'}`
    tNew = Date.now()
    promoted = named
    return true
  }, 100)
  c.log(`  ${promoted} named the primary ${secs(tNew - t0)}s after the delete`)
  // Every subscription's cursor as of the promotion; each one must move on.
  const at = new Map(subs.map((s) => [s, JSON.stringify(s.client.held.cursor(s.symbol))]))
  /** @type {Map<typeof subs[number], number>} */
  const resumed = new Map()
  await c.until('every subscription to get a tick from the new primary', 120000, async () => {
    const now = Date.now()
    for (const s of subs) {
      if (!resumed.has(s) && s.client.ws && JSON.stringify(s.client.held.cursor(s.symbol)) !== at.get(s)) resumed.set(s, now)
    }
    return resumed.size === subs.length || `${subs.length - resumed.size}/${subs.length} subscriptions without a tick since the promotion`
  }, 50)
  const tResumed = Math.max(...resumed.values())
  await deletion
  const after = await c.until(`${before.primary} to come back as a replica of ${promoted}`, 180000, async () => {
    const set = await sentinelSet(c)
    if (typeof set === 'string') return set
    return (set.primary === promoted && set.replicas.includes(before.primary)) ? set : `primary ${set.primary}, replicas ${set.replicas.join(', ')}`
  }, 2000)
  const back = (await c.pods('redis-node')).find((p) => p.metadata.name === before.primary)
  if (back?.metadata.uid === old?.metadata.uid) c.fail(`${before.primary} is still the pod that was deleted`)
  // Late ticks of a gap fill arrive as deltas; give the readers a moment before counting.
  await sleep(2000)
  await c.until('WspsRedisFailover to fire', 120000, () => failoverAlert.firing() || `alert states so far: ${failoverAlert.path}`, 1000)
  const tot = fleet.totals()
  const lost = tot.ticksLost - tot0.ticksLost
  const of = tot.ticks - tot0.ticks
  const closes = Object.values(fleet.closes).reduce((a, b) => a + b, 0) - closes0
  const line = `redis failover: new primary in ${secs(tNew - t0)} s, quotes resumed in ${secs(tResumed - t0)} s, subscriptions lost 0, ticks lost ${lost} of ${of}`
  const detail = `redis failover details: kubectl delete pod ${before.primary} (the primary; its preStop hands over to a replica), ${promoted} promoted, ` +
    `${before.primary} replaced and back as a replica of ${after.primary}; ${subs.length} distinct subscriptions on ${fleet.clients.length} host clients, ` +
    `sockets closed ${closes}, seq gaps ${tot.gaps - tot0.gaps}, new epochs ${tot.epochChanges - tot0.epochChanges}, wrong ${tot.wrong - tot0.wrong}`
  c.log('  ' + line)
  c.log('  ' + detail)
  const firedAt = /** @type {{at: number}} */ (failoverAlert.firing()).at
  if (tot.wrong - tot0.wrong) c.fail(`wrong-symbol quotes during the failover: ${tot.wrong - tot0.wrong}`)

  // WspsRedisFailover resolves when its window has passed; the e2e goes on meanwhile.
  const resolved = (async () => {
    try {
      // Quietly: the steps that run meanwhile have the log.
      const end = firedAt + ALERT_WINDOW_MS + 120000
      while (failoverAlert.seen.at(-1)?.state !== 'inactive') {
        if (Date.now() > end) c.fail(`WspsRedisFailover did not resolve within ${secs(end - firedAt)}s of firing (states: ${failoverAlert.path})`)
        await sleep(2000)
      }
    } finally {
      await failoverAlert.stop()
      await downAlert.stop()
    }
    if (downAlert.firing()) c.fail(`WspsRedisDown fired during the failover (${downAlert.path}): a failover must be shorter than its for`)
    const end = /** @type {{at: number}} */ (failoverAlert.seen.at(-1)).at
    return `alerts (redis.mode=sentinel): WspsRedisFailover fired ${secs(firedAt - t0)}s after the primary's pod was deleted and resolved ${secs(end - firedAt)}s later (its 5 min window); ` +
      `WspsRedisDown did not fire (states: ${downAlert.path}; its for: 1m is longer than the failover)`
  })()
  resolved.catch(() => {})
  return { lines: [line, detail], resolved }
}
