// Issue #28 item 1: the chart's NetworkPolicies, enforced by the local
// cluster's kube-network-policies (infra/local-cluster/README.md), let the
// paths the chart names through and refuse a pod the chart does not name.
//
// Every probe is one TCP connect from inside a pod's network namespace
// (`kubectl exec ... bash -c 'exec 3<>/dev/tcp/IP/PORT'`, bounded by
// `timeout`): the enforcer judges the first packet of each new connection,
// so a connect is exactly what a policy allows or refuses. A refused connect
// is a dropped SYN, i.e. a timeout (exit 124); a reset (exit 1) means
// nothing listens there, which is a different failure and reported as one.
// Targets are pod IPs and container ports (by name), so the probes test the
// policies, not a Service.
import { writeFileSync } from 'node:fs'

/**
 * What the e2e lends this module (its kubectl runner, bounded waits, log and fail).
 * @typedef {{code: number | null, out: string, err: string}} RunResult
 * @typedef {{
 *   run: (cmd: string, args: string[], o?: {timeoutMs?: number, allowFail?: boolean}) => Promise<RunResult>,
 *   until: <T>(what: string, timeoutMs: number, check: () => T | Promise<T>, everyMs?: number) => Promise<any>,
 *   log: (msg: string) => void,
 *   fail: (msg: string) => never,
 *   ns: string,
 *   release: string,
 *   publisherLabels: Record<string, string>,
 *   image: string
 * }} NetpolContext
 * @typedef {{ns: string, name: string, container: string, what: string}} From
 * @typedef {{ip: string, port: number, what: string}} To
 */

const CONNECT_S = 4
// Probe pods: restricted Pod Security (the release's namespace enforces it).
const RESTRICTED = {
  pod: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } },
  container: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } }
}

/**
 * @param {NetpolContext} ctx
 * @param {string} ns
 * @param {string} selector
 */
async function podsIn (ctx, ns, selector) {
  const r = await ctx.run('kubectl', ['-n', ns, 'get', 'pods', '-l', selector, '--field-selector=status.phase=Running', '-o', 'json'])
  return JSON.parse(r.out).items.filter((/** @type {any} */ p) => !p.metadata.deletionTimestamp && p.status.podIP)
}

/**
 * @param {any} pod
 * @param {string} what
 * @returns {From}
 */
const from = (pod, what) => ({ ns: pod.metadata.namespace, name: pod.metadata.name, container: pod.spec.containers[0].name, what })

/**
 * Every pod's container port of that name.
 * @param {any[]} pods
 * @param {string} portName
 * @param {string} what
 * @returns {To[]}
 */
function targets (pods, portName, what) {
  return pods.map((p) => {
    const port = p.spec.containers.flatMap((/** @type {any} */ c) => c.ports || []).find((/** @type {any} */ x) => x.name === portName)?.containerPort
    if (!port) throw new Error(`pod ${p.metadata.name} has no port named ${portName}`)
    return { ip: p.status.podIP, port, what: `${what} ${p.metadata.name}:${port}` }
  })
}

/**
 * One TCP connect from `src` to `dst`: 'connected', 'timeout' (dropped) or 'reset'.
 * @param {NetpolContext} ctx
 * @param {From} src
 * @param {To} dst
 */
async function connect (ctx, src, dst) {
  const r = await ctx.run('kubectl', ['-n', src.ns, 'exec', src.name, '-c', src.container, '--',
    'timeout', String(CONNECT_S), 'bash', '-c', 'exec 3<>"/dev/tcp/$0/$1"', dst.ip, String(dst.port)], { allowFail: true, timeoutMs: 30000 })
  if (r.code === 0) return 'connected'
  if (r.code === 124) return 'timeout'
  if (r.code === 1 && /refused|reset/i.test(r.err)) return 'reset'
  ctx.fail(`probe ${src.what} -> ${dst.what}: kubectl exec exit ${r.code}: ${r.err.trim().slice(-300)}`)
}

/**
 * Create the probe pods (a publisher named by the chart, a stranger in the
 * release's namespace, an outsider in `default`) and wait until they run.
 * @param {NetpolContext} ctx
 * @param {string} tag
 */
async function startProbes (ctx, tag) {
  const specs = [
    { ns: ctx.ns, name: `netpol-publisher-${tag}`, labels: ctx.publisherLabels },
    { ns: ctx.ns, name: `netpol-stranger-${tag}`, labels: { 'app.kubernetes.io/name': 'e2e-stranger' } },
    { ns: 'default', name: `netpol-outsider-${tag}`, labels: { 'app.kubernetes.io/name': 'e2e-outsider' } }
  ]
  const list = { apiVersion: 'v1', kind: 'List', items: specs.map((s) => podManifest(ctx.image, s.ns, s.name, s.labels)) }
  const file = `.run/e2e/netpol-probes-${tag}.json`
  writeFileSync(file, JSON.stringify(list))
  await ctx.run('kubectl', ['apply', '-f', file])
  const pods = await ctx.until('the NetworkPolicy probe pods to run', 120000, async () => {
    const got = await Promise.all(specs.map(async (s) => JSON.parse((await ctx.run('kubectl', ['-n', s.ns, 'get', 'pod', s.name, '-o', 'json'])).out)))
    const waiting = got.filter((p) => p.status.phase !== 'Running' || !p.status.podIP)
    return waiting.length === 0 ? { got } : `${waiting.map((p) => `${p.metadata.name} ${p.status.phase}`).join(', ')}`
  })
  return { publisher: pods.got[0], stranger: pods.got[1], outsider: pods.got[2], file }
}

/**
 * @param {string} image
 * @param {string} ns
 * @param {string} name
 * @param {Record<string, string>} labels
 */
function podManifest (image, ns, name, labels) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { ...labels, 'wsps.io/e2e-probe': 'netpol' } },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      securityContext: RESTRICTED.pod,
      containers: [{
        name: 'probe',
        image,
        imagePullPolicy: 'Never',
        command: ['sleep', '600'],
        resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
        securityContext: RESTRICTED.container
      }]
    }
  }
}

/**
 * Run `fn` over `items`, at most `n` at a time (each probe is a kubectl exec).
 * @template T, R
 * @param {T[]} items
 * @param {number} n
 * @param {(item: T) => Promise<R>} fn
 * @returns {Promise<R[]>}
 */
async function limited (items, n, fn) {
  /** @type {R[]} */
  const out = new Array(items.length)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) { const i = next++; out[i] = await fn(items[i]) }
  }))
  return out
}

/**
 * The allowed paths connect and the chart's unnamed pods are refused.
 * @param {NetpolContext} ctx
 * @returns {Promise<string>} the report line
 */
export async function checkNetworkPolicies (ctx) {
  const inst = `app.kubernetes.io/instance=${ctx.release}`
  const comp = (/** @type {string} */ c) => podsIn(ctx, ctx.ns, `${inst},app.kubernetes.io/component=${c}`)
  const [gateways, fetchers, redis, redisNodes, sentinels] = await Promise.all(['gateway', 'fetcher', 'redis', 'redis-node', 'redis-sentinel'].map(comp))
  const [traefik] = await podsIn(ctx, 'traefik', 'app.kubernetes.io/name=traefik')
  const [prometheus] = await podsIn(ctx, 'monitoring', 'app.kubernetes.io/name=prometheus')
  if (!gateways.length || !fetchers.length || !(redis.length || redisNodes.length)) ctx.fail(`NetworkPolicy probes: missing chart pods (gateways ${gateways.length}, fetchers ${fetchers.length}, redis ${redis.length + redisNodes.length})`)
  if (!traefik || !prometheus) ctx.fail('NetworkPolicy probes: no running Traefik or Prometheus pod')
  const policies = JSON.parse((await ctx.run('kubectl', ['-n', ctx.ns, 'get', 'networkpolicies', '-o', 'json'])).out).items.map((/** @type {any} */ p) => p.metadata.name)
  ctx.log(`  NetworkPolicies in ${ctx.ns}: ${policies.join(', ')}; Redis ${redis.length ? 'builtin' : `sentinel (${redisNodes.length} nodes, ${sentinels.length} sentinels)`}`)

  const tag = Date.now().toString(36)
  const probes = await startProbes(ctx, tag)
  try {
    const gwHttp = targets(gateways, 'http', 'gateway')
    const gwMetrics = targets(gateways, 'metrics', 'gateway metrics')
    const fetcherHttp = targets(fetchers, 'http', 'fetcher (publish API, /metrics)')
    const redisPorts = [...targets(redis, 'redis', 'redis'), ...targets(redisNodes, 'redis', 'redis node')]
    const sentinelPorts = targets(sentinels, 'sentinel', 'sentinel')
    const promTarget = targets([prometheus], 'http', 'prometheus')
    /** @type {[From, To][]} */
    const allowed = [
      ...gwHttp.map((t) => /** @type {[From, To]} */ ([from(traefik, 'traefik (ingress controller)'), t])),
      ...[...gateways, ...fetchers].flatMap((p) => [...redisPorts, ...sentinelPorts].map((t) => /** @type {[From, To]} */ ([from(p, p.metadata.labels['app.kubernetes.io/component']), t]))),
      ...[...gwMetrics, ...fetcherHttp].map((t) => /** @type {[From, To]} */ ([from(prometheus, 'prometheus'), t])),
      ...fetcherHttp.map((t) => /** @type {[From, To]} */ ([from(probes.publisher, `publisher ${JSON.stringify(ctx.publisherLabels)}`), t])),
      // The stranger's own network works: it is refused below by the policies, not by a broken pod.
      ...promTarget.map((t) => /** @type {[From, To]} */ ([from(probes.stranger, 'unnamed pod'), t]))
    ]
    /** @type {[From, To][]} */
    const refused = [
      ...[...redisPorts, ...sentinelPorts, ...fetcherHttp, ...gwMetrics, ...gwHttp].map((t) => /** @type {[From, To]} */ ([from(probes.stranger, `unnamed pod in ${ctx.ns}`), t])),
      ...[...gwHttp.slice(0, 1), ...gwMetrics.slice(0, 1), ...redisPorts.slice(0, 1)].map((t) => /** @type {[From, To]} */ ([from(probes.outsider, 'pod in namespace default'), t]))
    ]

    // A new probe pod's IP reaches the enforcer through the API a moment
    // after the pod runs: allowed paths are retried for a while, refusals are not.
    const okAllowed = await limited(allowed, 4, async ([src, dst]) => {
      await ctx.until(`${src.what} -> ${dst.what} to connect`, 45000, async () => {
        const r = await connect(ctx, src, dst)
        return r === 'connected' || r
      }, 1000)
      return `${src.what} -> ${dst.what}`
    })
    const results = await limited(refused, 4, async ([src, dst]) => ({ src, dst, r: await connect(ctx, src, dst) }))
    const wrong = results.filter((x) => x.r !== 'timeout')
    if (wrong.length) {
      ctx.fail(`NetworkPolicy: not refused: ${wrong.map((x) => `${x.src.what} -> ${x.dst.what}: ${x.r === 'reset' ? 'reset (nothing listening?)' : 'connected'}`).join('; ')}`)
    }
    ctx.log(`  allowed: ${okAllowed.length} paths (${[...new Set(allowed.map(([s]) => s.what))].join(', ')})`)
    ctx.log(`  refused: ${results.map((x) => `${x.src.what} -> ${x.dst.what}`).join('; ')}`)
    const kinds = [...new Set(refused.map(([, d]) => d.what.replace(/ \S+:\d+$/, '')))]
    return `network policy: ${okAllowed.length} allowed paths ok, ${results.length} refused as expected ` +
      `(kube-network-policies; refused within ${CONNECT_S}s: an unnamed pod in ${ctx.ns} at ${kinds.join(', ')}; a pod in namespace default at the gateway, its metrics and Redis)`
  } finally {
    await ctx.run('kubectl', ['delete', '-f', probes.file, '--wait=false', '--ignore-not-found'], { allowFail: true })
  }
}
