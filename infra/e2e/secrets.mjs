// Issue #28 item 5: secrets stay secret. The values of the release's Secrets
// (the generated Redis password, the publish token the e2e made, the JWT
// secret when the release has one) appear nowhere but in those Secrets: not
// in a log line of any pod or of the cluster's components, not in the e2e's
// own logs, not in an event, a ConfigMap, a pod's spec (env literals,
// args, annotations) or the rendered manifests and hooks.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * What the e2e lends this module.
 * @typedef {{code: number | null, out: string, err: string}} RunResult
 * @typedef {{
 *   run: (cmd: string, args: string[], o?: {timeoutMs?: number, allowFail?: boolean}) => Promise<RunResult>,
 *   fail: (msg: string) => never,
 *   helm: string,
 *   ns: string,
 *   release: string,
 *   extraSecrets: string[],
 *   logDirs: string[]
 * }} SecretsContext
 */

// Shorter values (a "true", a port) would match by chance; every generated secret is longer.
const MIN_LEN = 12

/**
 * The values to look for: every key of the release's Secrets and of the named extra ones.
 * @param {SecretsContext} ctx
 * @returns {Promise<{where: string, value: string}[]>}
 */
async function secretValues (ctx) {
  const own = JSON.parse((await ctx.run('kubectl', ['-n', ctx.ns, 'get', 'secrets', '-l', `app.kubernetes.io/instance=${ctx.release}`, '-o', 'json'])).out).items
  const extra = await Promise.all(ctx.extraSecrets.map(async (n) => JSON.parse((await ctx.run('kubectl', ['-n', ctx.ns, 'get', 'secret', n, '-o', 'json'])).out)))
  return [...own, ...extra].flatMap((/** @type {any} */ s) => Object.entries(s.data || {}).map(([k, v]) => ({ where: `${s.metadata.name}/${k}`, value: Buffer.from(String(v), 'base64').toString('utf8') })))
    .filter((s) => s.value.length >= MIN_LEN)
}

/**
 * Rendered manifests and hooks without their Secret documents.
 * @param {SecretsContext} ctx
 */
async function manifests (ctx) {
  const out = []
  for (const what of ['manifest', 'hooks']) {
    const r = await ctx.run(ctx.helm, ['get', what, ctx.release, '-n', ctx.ns])
    out.push(...r.out.split(/^---$/m).filter((doc) => !/^kind: Secret$/m.test(doc)))
  }
  return out.join('\n---\n')
}

/**
 * Every container's log of every pod in the cluster (init containers too).
 * @param {SecretsContext} ctx
 */
async function podLogs (ctx) {
  const pods = JSON.parse((await ctx.run('kubectl', ['get', 'pods', '-A', '-o', 'json'])).out).items
  const logs = await Promise.all(pods.flatMap((/** @type {any} */ p) => [...(p.spec.initContainers || []), ...p.spec.containers].map(async (/** @type {any} */ c) =>
    (await ctx.run('kubectl', ['-n', p.metadata.namespace, 'logs', p.metadata.name, '-c', c.name], { allowFail: true, timeoutMs: 60000 })).out)))
  return { text: logs.join('\n'), containers: logs.length }
}

/**
 * The *.log files of the given folders (the cluster's component logs, the e2e's own).
 * @param {string[]} dirs
 */
function logFiles (dirs) {
  const texts = []
  for (const dir of dirs) {
    let names = []
    try { names = readdirSync(dir) } catch { continue }
    for (const n of names.filter((x) => x.endsWith('.log'))) texts.push(readFileSync(join(dir, n), 'utf8'))
  }
  return { text: texts.join('\n'), files: texts.length }
}

/**
 * @param {SecretsContext} ctx
 * @returns {Promise<string>} the report line
 */
export async function checkSecretsStaySecret (ctx) {
  const secrets = await secretValues(ctx)
  if (!secrets.length) ctx.fail(`no Secret values to look for in ${ctx.ns}`)
  const kubectlJson = async (/** @type {string[]} */ args) => (await ctx.run('kubectl', [...args, '-o', 'json'], { timeoutMs: 60000 })).out
  const logs = await podLogs(ctx)
  const files = logFiles(ctx.logDirs)
  const haystacks = {
    'pod logs': logs.text,
    'component and e2e logs': files.text,
    events: await kubectlJson(['get', 'events', '-A']),
    ConfigMaps: await kubectlJson(['get', 'configmaps', '-A']),
    'pod specs': await kubectlJson(['-n', ctx.ns, 'get', 'pods,deployments,statefulsets,jobs']),
    'rendered manifests': await manifests(ctx)
  }
  const leaks = []
  for (const { where, value } of secrets) {
    const forms = [value, Buffer.from(value).toString('base64')]
    for (const [name, text] of Object.entries(haystacks)) {
      if (forms.some((f) => text.includes(f))) leaks.push(`${where} in ${name}`)
    }
  }
  if (leaks.length) ctx.fail(`secret values leaked: ${leaks.join('; ')}`)
  const kb = Math.round(Object.values(haystacks).reduce((n, t) => n + t.length, 0) / 1024)
  return `secrets: ${secrets.length} values (${secrets.map((s) => s.where).join(', ')}) found nowhere in ${kb} KB: ` +
    `logs of ${logs.containers} containers, ${files.files} component and e2e log files, events, ConfigMaps, pod specs, rendered manifests and hooks`
}
