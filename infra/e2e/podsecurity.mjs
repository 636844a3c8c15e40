// Issue #28 item 2: the release's namespace enforces the Pod Security
// Standard `restricted` (namespace label, checked by the apiserver's
// PodSecurity admission), and every pod of the run was admitted under it:
// the chart's gateways, fetchers and Redis (or Redis nodes and Sentinels),
// the `helm test` pod, the k6 Job's pod and the e2e's own pods (its
// OpenTelemetry Collector too). A pod that breaks the standard is refused,
// which shows the label is enforced.
import { writeFileSync } from 'node:fs'

export const ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce'

/**
 * What the e2e lends this module.
 * @typedef {{code: number | null, out: string, err: string}} RunResult
 * @typedef {{
 *   run: (cmd: string, args: string[], o?: {timeoutMs?: number, allowFail?: boolean}) => Promise<RunResult>,
 *   fail: (msg: string) => never,
 *   ns: string,
 *   release: string
 * }} PodSecurityContext
 */

/**
 * Label the namespace (before anything is installed in it).
 * @param {PodSecurityContext} ctx
 */
export async function enforceRestricted (ctx) {
  await ctx.run('kubectl', ['label', 'namespace', ctx.ns, `${ENFORCE_LABEL}=restricted`, `${ENFORCE_LABEL}-version=latest`, '--overwrite'])
}

/**
 * Pods the run got admitted, by what they are (pod names from the
 * namespace's Scheduled events: deleted pods count too).
 * @param {string} release
 * @param {string} pod
 */
function kind (release, pod) {
  const kinds = /** @type {[string, string][]} */ ([
    [`${release}-gateway-`, 'gateway'], [`${release}-fetcher-`, 'fetcher'], [`${release}-redis`, 'redis'],
    [`${release}-test`, 'helm test'], [`${release}-loadtest-`, 'k6 Job'], ['e2e-publisher-', 'publisher'], ['netpol-', 'netpol probe'], ['otel-collector-', 'otel collector']
  ])
  return kinds.find(([prefix]) => pod.startsWith(prefix))?.[1] ?? 'other'
}

/**
 * @param {PodSecurityContext} ctx
 * @returns {Promise<string>} the report line
 */
export async function checkPodSecurity (ctx) {
  const ns = JSON.parse((await ctx.run('kubectl', ['get', 'namespace', ctx.ns, '-o', 'json'])).out)
  const level = ns.metadata.labels?.[ENFORCE_LABEL]
  if (level !== 'restricted') ctx.fail(`namespace ${ctx.ns}: ${ENFORCE_LABEL}=${level} (want restricted)`)

  const events = JSON.parse((await ctx.run('kubectl', ['-n', ctx.ns, 'get', 'events', '-o', 'json'])).out).items
  const refused = events.filter((/** @type {any} */ e) => /PodSecurity/.test(e.message || ''))
  if (refused.length) ctx.fail(`Pod Security refused pods in ${ctx.ns}: ${refused.map((/** @type {any} */ e) => `${e.involvedObject.kind}/${e.involvedObject.name}: ${e.message}`).join('; ').slice(0, 1500)}`)
  const admitted = new Set(events.filter((/** @type {any} */ e) => e.reason === 'Scheduled' && e.involvedObject.kind === 'Pod').map((/** @type {any} */ e) => e.involvedObject.name))
  /** @type {Record<string, number>} */
  const byKind = {}
  for (const p of admitted) byKind[kind(ctx.release, p)] = (byKind[kind(ctx.release, p)] || 0) + 1
  const missing = ['gateway', 'fetcher', 'redis', 'helm test', 'k6 Job'].filter((k) => !byKind[k])
  if (missing.length) ctx.fail(`no ${missing.join(', ')} pod was scheduled in ${ctx.ns} (admitted: ${JSON.stringify(byKind)})`)

  // The apiserver judges a pod without the restricted securityContext (dry run: nothing is created).
  const bad = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'pod-security-probe', namespace: ctx.ns },
    spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10.1', securityContext: { allowPrivilegeEscalation: true } }] }
  })
  const file = '.run/e2e/pod-security-probe.json'
  writeFileSync(file, bad)
  const r = await ctx.run('kubectl', ['apply', '--dry-run=server', '-f', file], { allowFail: true })
  if (r.code === 0 || !/violates PodSecurity "restricted/.test(r.err)) ctx.fail(`a pod breaking the restricted standard was not refused in ${ctx.ns}: exit ${r.code} ${r.err.trim() || r.out.trim()}`)
  const why = (r.err.match(/violates PodSecurity "[^"]+": ([^,(]+)/)?.[1] ?? '').trim()

  return `pod security: ${ENFORCE_LABEL}=restricted on ${ctx.ns}; ${admitted.size} pods admitted ` +
    `(${Object.entries(byKind).map(([k, n]) => `${k} ${n}`).join(', ')}), none refused; a pod that breaks it is refused (${why})`
}
