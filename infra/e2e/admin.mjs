// The operator's console in the cluster (issue 52): the admin API on a
// gateway pod's metrics port (gateway.admin in infra/e2e/values.yaml; no
// ingress routes it), reached by `kubectl port-forward` as
// docs/operations.md says. The fleet view lists every gateway and fetcher
// pod of the release, ready and on time, from their status records in the
// release's Redis (Sentinel, TLS); the admin page is served; a client with
// an HS256 token through the nginx ingress is found by its user on
// whichever gateway holds it, and disconnecting that user closes it with
// 4010 by way of the command stream in Redis. Runs after the auth step
// (the release is authed).
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { TestClient } from '../../harness/testkit/src/test-client.js'
import { CloseCode } from '../../services/protocol/index.js'
import { signHs256 } from '../../clients/cli/src/jwt.js'
import { AUTH_SECRET_FILE } from './auth.mjs'

/** gateway.admin.token in infra/e2e/values.yaml. */
export const ADMIN_TOKEN = 'wsps-e2e-admin-token-0123456789'
const PORT = process.env.NGINX_NODEPORT || '30081'
const USER = 'e2e-operator-console'

/**
 * @typedef {object} AdminContext
 * @property {string} ns
 * @property {string} host the ingress host
 * @property {(component: string) => Promise<any[]>} pods
 * @property {(p: any) => boolean} isReady
 * @property {<T>(what: string, timeoutMs: number, check: () => T | Promise<T>, everyMs?: number) => Promise<any>} until
 * @property {(msg: string) => never} fail
 * @property {(msg: string) => void} log
 */

/**
 * `kubectl port-forward` to a pod's port on a free loopback port.
 *
 * @param {string} ns
 * @param {string} pod
 * @param {number} port
 * @returns {Promise<{url: string, stop: () => void}>}
 */
function portForward (ns, pod, port) {
  const child = spawn('kubectl', ['-n', ns, 'port-forward', '--address', '127.0.0.1', `pod/${pod}`, `:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] })
  const stop = () => { child.kill('SIGTERM') }
  return new Promise((resolve, reject) => {
    let said = ''
    const timer = setTimeout(() => { stop(); reject(new Error(`kubectl port-forward pod/${pod}: no port within 20 s (${said.trim()})`)) }, 20_000)
    const read = (/** @type {Buffer} */ d) => {
      said += d
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(said)
      if (!m) return
      clearTimeout(timer)
      resolve({ url: `http://127.0.0.1:${m[1]}`, stop })
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`kubectl port-forward pod/${pod} exited (${code}): ${said.trim()}`)) })
  })
}

/**
 * @param {string} base
 * @param {string} path
 * @param {unknown} [body] POST it when given
 */
async function api (base, path, body) {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000)
  })
  const text = await res.text()
  return { status: res.status, type: res.headers.get('content-type') ?? '', text, body: /^application\/json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(text) : null }
}

/**
 * @param {AdminContext} e
 * @returns {Promise<string>} the report line
 */
export async function operatorConsole (e) {
  const gateways = (await e.pods('gateway')).filter(e.isReady)
  if (!gateways.length) e.fail('no ready gateway pod')
  const pod = gateways[0].metadata.name
  const metricsPort = gateways[0].spec.containers[0].ports.find((/** @type {any} */ p) => p.name === 'metrics')?.containerPort ?? 9090
  const forward = await portForward(e.ns, pod, metricsPort)
  /** @type {TestClient | null} */
  let client = null
  try {
    const page = await api(forward.url, '/admin/')
    if (page.status !== 200 || !/text\/html/.test(page.type)) e.fail(`GET /admin/ on ${pod}: ${page.status} ${page.type}`)
    const names = (/** @type {any[]} */ list) => list.map((p) => p.metadata.name).sort()
    const fleet = await e.until('every gateway and fetcher pod in the fleet view, ready and on time', 30_000, async () => {
      const { status, body } = await api(forward.url, '/admin/fleet')
      if (status !== 200) return `GET /admin/fleet: ${status}`
      const of = (/** @type {string} */ role) => body.processes.filter((/** @type {any} */ p) => p.role === role)
      // The pods of this moment: a pod that just went (a scale-in) leaves the view within its status interval.
      const want = { gateway: names((await e.pods('gateway')).filter(e.isReady)), fetcher: names((await e.pods('fetcher')).filter(e.isReady)) }
      for (const role of /** @type {const} */ (['gateway', 'fetcher'])) {
        const shown = of(role).map((/** @type {any} */ p) => p.node).sort()
        if (JSON.stringify(shown) !== JSON.stringify(want[role])) return `${role}s shown ${shown.join(', ')}; pods ${want[role].join(', ')}`
        const off = of(role).filter((/** @type {any} */ p) => !p.ready || p.late)
        if (off.length) return `${off.map((/** @type {any} */ p) => `${p.node} ${p.late ? 'late' : 'not ready'}`).join(', ')}`
      }
      return body
    })
    const now = Math.floor(Date.now() / 1000)
    const token = signHs256(readFileSync(AUTH_SECRET_FILE, 'utf8'), { sub: USER, iat: now, exp: now + 600 })
    client = new TestClient(`ws://127.0.0.1:${PORT}/ws`, { headers: { host: e.host, authorization: `Bearer ${token}` }, handshakeTimeout: 10_000 })
    await client.opened.catch((/** @type {any} */ err) => e.fail(`a client of user ${USER} through nginx: ${err.status ? `HTTP ${err.status}` : err.message}`))
    await client.sub(['AAPL'])
    await client.waitQuotes('AAPL', 1, 20_000)
    const holder = client.hello?.node
    const found = await api(forward.url, `/admin/connections?user=${USER}`)
    const held = found.body?.answers?.flatMap((/** @type {any} */ a) => (a.connections ?? []).map((/** @type {any} */ c) => ({ node: a.node, ...c }))) ?? []
    if (held.length !== 1 || held[0].node !== holder || held[0].symbols?.[0]?.symbol !== 'AAPL') e.fail(`GET /admin/connections?user=${USER} on ${pod}: ${JSON.stringify(found.body).slice(0, 400)}; the client is on ${holder}`)
    const done = await api(forward.url, '/admin/disconnect', { user: USER })
    if (done.status !== 200 || done.body?.matched !== 1) e.fail(`POST /admin/disconnect: ${done.status} ${done.text.slice(0, 300)}`)
    const closed = await Promise.race([client.closedPromise, new Promise((resolve) => setTimeout(resolve, 10_000, null))])
    if (/** @type {any} */ (closed)?.code !== CloseCode.OPERATOR_DISCONNECT) e.fail(`the disconnected user's socket: ${JSON.stringify(closed)}, want ${CloseCode.OPERATOR_DISCONNECT}`)
    const counts = (/** @type {string} */ role) => fleet.processes.filter((/** @type {any} */ p) => p.role === role).length
    return `admin view via port-forward to ${pod}: fleet ${counts('gateway')} gateways + ${counts('fetcher')} fetchers ready and on time; user ${USER} found on ${holder}${holder === pod ? '' : ' (another gateway)'} and disconnected there with ${CloseCode.OPERATOR_DISCONNECT}`
  } finally {
    client?.close()
    forward.stop()
  }
}
