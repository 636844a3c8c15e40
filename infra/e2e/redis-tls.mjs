// Issue #28 item 3: the release's Redis with Sentinel runs with redis.tls
// (infra/e2e/values.yaml). Every node and Sentinel serves TLS only: plain
// text and TLS 1.2 are refused, TLS 1.3 with the chart's CA is answered, a
// client with another CA (the cluster's own, kube-root-ca.crt) refuses the
// server; the services are configured for rediss:// with the CA file, and
// their own connection code with the wrong CA fails with WSPS_ERR_REDIS_TLS.
// The probes run inside a gateway pod (redis-tls-probe.mjs), which the
// NetworkPolicies let through to Redis: what is refused is refused by TLS.
import { readFileSync } from 'node:fs'

/**
 * What the e2e lends this module.
 * @typedef {{code: number | null, out: string, err: string}} RunResult
 * @typedef {{
 *   run: (cmd: string, args: string[], o?: {timeoutMs?: number, allowFail?: boolean}) => Promise<RunResult>,
 *   pods: (component: string) => Promise<any[]>,
 *   isReady: (p: any) => boolean,
 *   log: (msg: string) => void,
 *   fail: (msg: string) => never,
 *   ns: string,
 *   release: string
 * }} RedisTlsContext
 */

// Node's codes for a server certificate that no CA it was given vouches for.
const UNTRUSTED = ['SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'DEPTH_ZERO_SELF_SIGNED_CERT']

/**
 * @param {RedisTlsContext} ctx
 * @returns {Promise<string>} the report line
 */
export async function checkRedisTls (ctx) {
  const kubectl = (/** @type {string[]} */ args, /** @type {{timeoutMs?: number, allowFail?: boolean}} */ o = {}) => ctx.run('kubectl', ['-n', ctx.ns, ...args], o)
  const json = async (/** @type {string[]} */ args) => JSON.parse((await kubectl([...args, '-o', 'json'])).out)

  // The chart made the CA: its Secret, and the certificate's Secret carrying it.
  const caSecret = await json(['get', 'secret', `${ctx.release}-redis-tls-ca`])
  const certSecret = await json(['get', 'secret', `${ctx.release}-redis-tls`])
  if (certSecret.data['ca.crt'] !== caSecret.data['tls.crt']) ctx.fail(`Secret ${ctx.release}-redis-tls's ca.crt is not the CA of ${ctx.release}-redis-tls-ca`)
  // The services are configured for TLS with that CA.
  for (const c of ['gateway', 'fetcher']) {
    const cm = (await json(['get', 'configmap', `${ctx.release}-${c}`])).data
    if (!cm.WSPS_REDIS_URL?.startsWith('rediss://') || !cm.WSPS_REDIS_TLS_CA_FILE) ctx.fail(`the ${c} is not configured for TLS: WSPS_REDIS_URL=${cm.WSPS_REDIS_URL} WSPS_REDIS_TLS_CA_FILE=${cm.WSPS_REDIS_TLS_CA_FILE}`)
  }
  const [nodes, sentinels, gateways] = await Promise.all(['redis-node', 'redis-sentinel', 'gateway'].map((c) => ctx.pods(c)))
  const gateway = gateways.find(ctx.isReady)
  if (!gateway) ctx.fail('no ready gateway to probe Redis from')
  const targets = [
    ...nodes.map((p) => `${p.metadata.name}.${ctx.release}-redis-node-headless:6379`),
    ...sentinels.map((p) => `${p.metadata.name}.${ctx.release}-redis-sentinel-headless:26379`)
  ]
  const wrongCa = (await json(['get', 'configmap', 'kube-root-ca.crt'])).data['ca.crt']
  const script = readFileSync(new URL('./redis-tls-probe.mjs', import.meta.url), 'utf8')
  const r = await kubectl(['exec', gateway.metadata.name, '-c', gateway.spec.containers[0].name, '--',
    'env', `PROBE_TARGETS=${targets.join(',')}`, `PROBE_WRONG_CA=${wrongCa}`, 'node', '--input-type=module', '-e', script], { timeoutMs: 90000, allowFail: true })
  /** @type {any} */
  let out
  try { out = JSON.parse(r.out.trim().split('\n').at(-1) ?? '') } catch { ctx.fail(`the TLS probe in ${gateway.metadata.name} printed no result (exit ${r.code}): ${(r.err || r.out).slice(-800)}`) }
  ctx.log(`  probed from ${gateway.metadata.name}: ${JSON.stringify(out.targets.map((/** @type {any} */ t) => ({ [t.target.split('.')[0]]: [t.plain, t.right.protocol, t.tls12.code, t.wrong.code] })))}`)
  ctx.log(`  the service's own connection: ${JSON.stringify(out.service)}; with the wrong CA: ${JSON.stringify(out.serviceWrongCa)}`)

  const bad = tlsProblems(out, targets.length)
  if (bad.length) ctx.fail(`redis tls: ${bad.join('; ')}`)

  const codes = [...new Set(out.targets.map((/** @type {any} */ t) => t.wrong.code))].join('/')
  const n = `${nodes.length} nodes + ${sentinels.length} sentinels`
  return `redis tls: sentinels and nodes TLS-only (TLS 1.3, CA made by the chart), services verify it (rediss:// + WSPS_REDIS_TLS_CA_FILE, PING over ${out.service.protocol}); ` +
    `a client with the wrong CA refused (${n}: ${codes}; the service's own connection code: WSPS_ERR_REDIS_TLS); plain text and TLS 1.2 refused at ${n}`
}

/**
 * What is wrong in a result of redis-tls-probe.mjs; empty when every node and
 * Sentinel is TLS-only (TLS 1.3), verified with the chart's CA, refused with
 * another, and the service's own code connects and refuses as it should.
 *
 * @param {any} out the probe's JSON line
 * @param {number} expected how many targets were probed
 * @returns {string[]}
 */
export function tlsProblems (out, expected) {
  const bad = []
  for (const t of out.targets) {
    if (t.plain !== 'refused') bad.push(`${t.target}: answered in plain text`)
    if (!t.right.ok || t.right.protocol !== 'TLSv1.3' || !/^(-NOAUTH|\+PONG)/.test(t.right.reply ?? '')) bad.push(`${t.target}: with the chart's CA ${JSON.stringify(t.right)} (want TLSv1.3 and a reply)`)
    if (t.tls12.ok) bad.push(`${t.target}: accepted TLS 1.2`)
    if (t.wrong.ok || !UNTRUSTED.includes(t.wrong.code)) bad.push(`${t.target}: with another CA ${JSON.stringify(t.wrong)} (want one of ${UNTRUSTED.join(', ')})`)
  }
  if (out.targets.length !== expected) bad.push(`${out.targets.length} of ${expected} targets probed`)
  if (!out.service.ok || out.service.reply !== 'PONG' || out.service.protocol !== 'TLSv1.3') bad.push(`the service's settings: ${JSON.stringify(out.service)} (want PONG over TLSv1.3)`)
  if (out.serviceWrongCa.ok || out.serviceWrongCa.code !== 'WSPS_ERR_REDIS_TLS') bad.push(`the service's settings with the wrong CA: ${JSON.stringify(out.serviceWrongCa)} (want WSPS_ERR_REDIS_TLS)`)
  return bad
}
