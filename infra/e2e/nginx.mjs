// The e2e's nginx path (issue #27): the release's Ingress moves to the F5
// NGINX Ingress Controller (IngressClass "nginx", built from its vendored
// source by infra/local-cluster and installed by cluster-up, NodePort on
// 127.0.0.1) with the chart's `f5-nginx` preset, and everything a client
// needs is checked through it: the page, WebSocket clients on every gateway
// pod, SSE, sockets left idle past nginx's 60 s default, a rolling restart
// with no subscription lost, /metrics not routed, and why TLS is skipped.
//
// The controller's own defaults are nginx's 60 s proxy timeouts
// (infra/local-cluster/manifests/nginx-ingress-values.yaml): only the
// preset's nginx.org/proxy-read-timeout and proxy-send-timeout on the
// chart's Ingress can hold an idle socket open. Idle means idle to nginx:
// the gateway's heartbeat pings are traffic, so this step sets the heartbeat
// to its maximum (300 s) and the idle sockets prove they saw a silence longer
// than 60 s before they answer again.
// Env: NGINX_NODEPORT (30081, infra/local-cluster/cluster.env),
// E2E_NGINX_CLIENTS (100), E2E_NGINX_IDLE_MS (70000).
import { readFileSync } from 'node:fs'
import WebSocket from 'ws'
import { sleep } from '../../harness/testkit/src/wait.js'
import { Fleet, pct } from './fleet.mjs'

// F5 NGINX IC version: tools/versions.env (what cluster-up built and installed).
const IC_VERSION = readFileSync(new URL('../../tools/versions.env', import.meta.url), 'utf8').match(/^NGINX_INGRESS_VERSION=(.+)$/m)?.[1] ?? '?'
const PORT = process.env.NGINX_NODEPORT || '30081'
const CLIENTS = Number(process.env.E2E_NGINX_CLIENTS || 100)
// The silence each idle socket must live through: longer than nginx's 60 s
// default by a margin that leaves no doubt.
const IDLE_MS = Number(process.env.E2E_NGINX_IDLE_MS || 70000)
// The gateway's heartbeat while idle sockets are held (WSPS_HEARTBEAT_MS's maximum).
const HEARTBEAT_MS = 300000
// Idle sockets, spread by the controller over the gateway pods.
const IDLE_SOCKETS = 4
export const LABEL = `nginx ingress (F5 NGINX IC ${IC_VERSION} built from source)`

/**
 * What the e2e lends this module (infra/e2e/e2e.mjs): its command runners,
 * bounded waits, steps and report, and its SSE check.
 *
 * @typedef {object} E2E
 * @property {string} ns
 * @property {string} rel
 * @property {string} host the Ingress host
 * @property {string} helmBin
 * @property {(cmd: string, args: string[], o?: object) => Promise<{code: number | null, out: string, err: string}>} run
 * @property {(args: string[], o?: object) => Promise<{code: number | null, out: string, err: string}>} kubectl in the release's namespace
 * @property {<T>(what: string, timeoutMs: number, check: () => T | Promise<T>, everyMs?: number) => Promise<any>} until
 * @property {<T>(name: string, fn: () => Promise<T>) => Promise<T>} step
 * @property {(msg: string) => never} fail
 * @property {(msg: string) => void} log
 * @property {(component: string) => Promise<any[]>} pods
 * @property {(via: string, port?: string, nginx?: boolean) => Promise<string>} checkSse
 * @property {string[]} report
 */

/** @param {E2E} e @param {string} line */
function say (e, line) {
  e.log('  ' + line)
  e.report.push(`${LABEL}: ${line}`)
}

/**
 * Steps of the nginx path; the release's Ingress stays on nginx afterwards.
 *
 * @param {E2E} e
 */
export async function nginxIngress (e) {
  const base = `http://127.0.0.1:${PORT}`
  await e.step(`${LABEL}: the release's Ingress on IngressClass nginx with preset f5-nginx (gateway heartbeat ${HEARTBEAT_MS / 1000} s); the page, /metrics not routed`, () => switchToNginx(e, base))
  const fleet = new Fleet({ url: `ws://127.0.0.1:${PORT}/ws`, host: e.host })
  try {
    await e.step(`${LABEL}: ${IDLE_SOCKETS} sockets silent ${IDLE_MS / 1000} s (past nginx's 60 s default) stay open; meanwhile ${CLIENTS} WebSocket clients on every pod and SSE`, async () => {
      await upstreamsSettled(e)
      const idle = holdIdle(e, base)
      idle.catch(() => {})
      await clients(e, fleet)
      say(e, `sse: ${await e.checkSse('nginx ingress', PORT, true)}`)
      say(e, await idle)
    })
    await e.step(`${LABEL}: rolling restart of the gateways: every client reconnects through nginx, no subscription lost`, () => rollingRestart(e, fleet))
  } finally {
    fleet.stop()
  }
  await e.step(`${LABEL}: TLS`, () => tls(e))
}

/**
 * helm upgrade (the earlier values kept): the Ingress replaces the
 * HTTPRoute, class nginx, preset f5-nginx; then the controller serves the
 * page for the host and does not route /metrics.
 *
 * @param {E2E} e
 * @param {string} base
 */
async function switchToNginx (e, base) {
  await e.run(e.helmBin, ['upgrade', e.rel, 'charts/wsps', '-n', e.ns, '--reuse-values',
    '--set', 'gateway.httpRoute.enabled=false', '--set', 'gateway.ingress.enabled=true',
    '--set', 'gateway.ingress.className=nginx', '--set', 'gateway.ingress.preset=f5-nginx',
    '--set', `gateway.config.WSPS_HEARTBEAT_MS=${HEARTBEAT_MS}`, '--wait', '--timeout', '5m'], { timeoutMs: 330000 })
  await e.run('kubectl', ['-n', e.ns, 'rollout', 'status', `deployment/${e.rel}-gateway`, '--timeout=300s'], { timeoutMs: 320000 })
  const ing = JSON.parse((await e.kubectl(['get', 'ingress', `${e.rel}-gateway`, '-o', 'json'])).out)
  const ann = Object.fromEntries(Object.entries(ing.metadata.annotations || {}).filter(([k]) => k.startsWith('nginx.org/')))
  if (ing.spec.ingressClassName !== 'nginx') e.fail(`the Ingress has class ${ing.spec.ingressClassName}, not nginx`)
  if (ann['nginx.org/websocket-services'] !== `${e.rel}-gateway`) e.fail(`the f5-nginx preset did not name the gateway Service in nginx.org/websocket-services: ${JSON.stringify(ann)}`)
  const page = await e.until('the nginx ingress to serve the page for the host', 120000, async () => {
    const r = await curl(e, `${base}/`)
    return (r.code === '200' && r.type.startsWith('text/html') && r.body.includes('<title>wsps')) ? r : `GET / HTTP ${r.code} ${r.type}`
  })
  const metrics = await curl(e, `${base}/metrics`)
  if (metrics.code === '200') e.fail('/metrics is reachable through the nginx ingress')
  // The controller reports its address in the Ingress status (reportIngressStatus).
  say(e, `Ingress ${ing.metadata.name} class nginx, preset annotations ${JSON.stringify(ann)}; GET / ${page.code} ${page.type} (${page.body.length} bytes); GET /metrics ${metrics.code} (not routed)`)
}

/**
 * Waits until nginx's upstream for the gateway lists exactly the ready
 * gateway pods. The helm upgrade before this rolled the gateways, and the
 * controller learns of endpoint changes and reloads nginx some time after
 * `rollout status` returns: until then a new socket may land on a pod that
 * is draining (and is closed with 1012 a moment later, which says nothing
 * about nginx's timeouts).
 *
 * @param {E2E} e
 */
export async function upstreamsSettled (e) {
  const conf = `/etc/nginx/conf.d/${e.ns}-${e.rel}-gateway.conf`
  await e.until(`nginx's upstream (${conf}) to list exactly the ready gateway pods`, 120000, async () => {
    const ready = new Set((await e.pods('gateway'))
      .filter((p) => !p.metadata.deletionTimestamp && (p.status.conditions || []).some((c) => c.type === 'Ready' && c.status === 'True'))
      .map((p) => p.status.podIP))
    const r = await e.run('kubectl', ['-n', 'nginx-ingress', 'exec', 'deploy/nginx-ingress-controller', '--', 'cat', conf], { allowFail: true })
    const listed = new Set([...r.out.matchAll(/^\s*server\s+(\d+\.\d+\.\d+\.\d+):\d+/gm)].map((m) => m[1]))
    const same = listed.size === ready.size && [...ready].every((ip) => listed.has(ip))
    return same || `nginx lists [${[...listed].join(', ')}], ready pods [${[...ready].join(', ')}]`
  }, 1000)
}

/**
 * GET through the controller with the Ingress host.
 *
 * @param {E2E} e
 * @param {string} url
 */
async function curl (e, url) {
  const r = await e.run('curl', ['-s', '-m', '10', '-H', `Host: ${e.host}`, '-w', '\n%{http_code} %{content_type}', url], { allowFail: true })
  const at = r.out.lastIndexOf('\n')
  const tail = r.out.slice(at + 1)
  const sp = tail.indexOf(' ')
  return { code: sp < 0 ? tail || '000' : tail.slice(0, sp), type: sp < 0 ? '' : tail.slice(sp + 1), body: r.out.slice(0, Math.max(0, at)) }
}

/**
 * WebSocket clients through nginx: every one snapshotted and updated, every gateway pod used.
 *
 * @param {E2E} e
 * @param {Fleet} fleet
 */
async function clients (e, fleet) {
  const t = Date.now()
  fleet.add(CLIENTS, 2000)
  await e.until(`${CLIENTS} clients through nginx to hold a snapshot and get an update`, 120000, () => {
    const missing = fleet.clients.filter((c) => !c.snapAt || c.lastUpdateAt < c.snapAt)
    return missing.length === 0 || `${missing.length}/${CLIENTS} without snapshot+update; closes ${JSON.stringify(fleet.closes)} errors ${JSON.stringify(fleet.errors)}`
  })
  const gw = (await e.pods('gateway')).filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name)
  const per = fleet.perNode()
  const missingPods = gw.filter((n) => !per[n])
  if (missingPods.length) e.fail(`no client through nginx landed on ${missingPods.join(', ')} (per pod: ${JSON.stringify(per)})`)
  const tot = fleet.totals()
  if (tot.wrong || tot.gaps) e.fail(`clients through nginx: wrong-symbol ${tot.wrong}, seq gaps ${tot.gaps}: ${JSON.stringify(fleet.gapLog.slice(0, 5))}`)
  say(e, `${CLIENTS} WebSocket clients, all with snapshot and updates ${((Date.now() - t) / 1000).toFixed(1)}s after the first connect; per pod ${JSON.stringify(per)}; wrong ${tot.wrong}, gaps ${tot.gaps}`)
}

/**
 * Sockets with no subscription, so nothing flows but the gateway's
 * heartbeat pings (and the client's pongs, sent at once). Each is held
 * until it has been silent for IDLE_MS, longer than nginx's 60 s default
 * (a ping comes once per heartbeat, 300 s here, at a point of the interval
 * that depends on the pod's sweep: so the wait is for the silence, bounded),
 * and must then still answer a `sub` with its `ack`. nginx with its default
 * closes a socket silent that long: this fails if the preset's timeouts stop
 * reaching nginx.
 *
 * @param {E2E} e
 * @param {string} base
 * @returns {Promise<string>} the report line
 */
async function holdIdle (e, base) {
  const url = `${base.replace('http:', 'ws:')}/ws`
  const t = Date.now()
  const sockets = await Promise.all(Array.from({ length: IDLE_SOCKETS }, () => openIdle(url, e.host)))
  // A socket the gateway closes with 1012 (its drain: docs/protocol.md) was
  // on a pod leaving the Deployment, which is not nginx timing it out (that
  // closes without a close frame, 1006): it is replaced once, and said.
  let replaced = 0
  try {
    await e.until(`${IDLE_SOCKETS} idle sockets through nginx to be silent ${IDLE_MS / 1000} s each`, IDLE_MS + HEARTBEAT_MS / 2, async () => {
      for (let i = 0; i < sockets.length; i++) {
        if (sockets[i].closed?.code === 1012 && replaced < IDLE_SOCKETS) {
          replaced++
          sockets[i] = await openIdle(url, e.host)
        }
      }
      const closed = sockets.filter((s) => s.closed)
      if (closed.length) {
        e.fail(`${closed.length}/${IDLE_SOCKETS} idle sockets through nginx were closed (${closed.map((s) => `code ${s.closed?.code} after ${(s.silence() / 1000).toFixed(1)}s of silence`).join('; ')}): ` +
          'the f5-nginx preset\'s nginx.org/proxy-read-timeout / proxy-send-timeout did not keep them past nginx\'s 60 s default')
      }
      const silences = sockets.map((s) => s.silence())
      return silences.every((ms) => ms >= IDLE_MS) || `silent for ${silences.map((ms) => (ms / 1000).toFixed(0)).join(', ')} s`
    }, 500)
    const silences = sockets.map((s) => s.silence())
    const acks = await Promise.all(sockets.map((s) => s.probe()))
    if (acks.some((ms) => ms < 0)) e.fail(`${acks.filter((ms) => ms < 0).length}/${IDLE_SOCKETS} idle sockets did not answer a sub after ${IDLE_MS / 1000} s of silence`)
    return `idle sockets: ${IDLE_SOCKETS} with no subscription (gateway heartbeat ${HEARTBEAT_MS / 1000} s) each silent ${silences.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s, ` +
      `past nginx's 60 s default (held ${((Date.now() - t) / 1000).toFixed(0)} s in all${replaced ? `; ${replaced} replaced after a 1012 drain close` : ''}); all open and answering a sub afterwards (ack p50 ${pct(acks, 50)} ms): the preset's timeouts hold them`
  } finally {
    for (const s of sockets) s.ws.terminate()
  }
}

/**
 * @param {string} url
 * @param {string} host
 */
async function openIdle (url, host) {
  const ws = new WebSocket(url, { headers: { Host: host }, handshakeTimeout: 10000 })
  /** When a frame last went either way: the gateway's frames and pings (our pong goes at once). */
  let last = Date.now()
  /** @type {((m: any) => void) | null} */
  let onAck = null
  const idle = {
    ws,
    /** @type {{code: number} | null} */
    closed: null,
    silence: () => (idle.closed ? idle.closedAt : Date.now()) - last,
    closedAt: 0,
    /** @returns {Promise<number>} ms until the sub's ack, -1 when none came */
    async probe () {
      const t = Date.now()
      const acked = new Promise((resolve) => { onAck = resolve })
      ws.send(JSON.stringify({ op: 'sub', symbols: ['AAPL'], id: 7 }))
      const ack = await Promise.race([acked, sleep(10000).then(() => null)])
      return ack ? Date.now() - t : -1
    }
  }
  ws.on('message', (buf) => {
    last = Date.now()
    const m = JSON.parse(String(buf))
    if (m.op === 'ack' && onAck) onAck(m)
  })
  ws.on('ping', () => { last = Date.now() })
  ws.on('close', (code) => { if (!idle.closed) { idle.closed = { code }; idle.closedAt = Date.now() } })
  ws.on('error', () => {})
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
  return idle
}

/**
 * kubectl rollout restart of the gateways while the clients hold their
 * subscriptions through nginx: each must come back on a new pod, resume,
 * and miss no tick.
 *
 * @param {E2E} e
 * @param {Fleet} fleet
 */
async function rollingRestart (e, fleet) {
  const before = new Set((await e.pods('gateway')).map((p) => p.metadata.name))
  fleet.reconnectMs.length = 0
  const onAt = new Map(fleet.clients.map((c) => [c, c.reconnects]))
  const t0 = fleet.totals()
  const t = Date.now()
  await e.kubectl(['rollout', 'restart', `deployment/${e.rel}-gateway`])
  await e.kubectl(['rollout', 'status', `deployment/${e.rel}-gateway`, '--timeout=300s'], { timeoutMs: 320000 })
  const rolled = Date.now()
  await e.until('every client through nginx on a new pod with its snapshot and a fresh update', 180000, async () => {
    const now = (await e.pods('gateway')).filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name)
    if (now.some((n) => before.has(n))) return `old pods still there: ${now.filter((n) => before.has(n))}`
    const pending = fleet.clients.filter((c) => !c.ws || !c.snapAt || !now.includes(c.node) || c.lastUpdateAt <= c.snapAt)
    return pending.length === 0 || `${pending.length}/${fleet.clients.length} clients not yet resubscribed on a new pod`
  })
  const lost = fleet.clients.filter((c) => c.reconnects <= (onAt.get(c) ?? 0)).length
  const tot = fleet.totals()
  const ticksLost = tot.ticksLost - t0.ticksLost
  // The open-source controller has no API to change upstreams: every
  // endpoint change is an nginx reload (old workers keep their sockets).
  const logs = await e.run('kubectl', ['-n', 'nginx-ingress', 'logs', 'deploy/nginx-ingress-controller', `--since=${Math.ceil((Date.now() - t) / 1000) + 1}s`], { allowFail: true })
  const reloads = (logs.out.match(/signal 1 \(SIGHUP\) received/g) || []).length
  say(e, `rolling restart: ${((rolled - t) / 1000).toFixed(1)}s to restart ${before.size} pods (${reloads} nginx reloads for the endpoint changes); ${fleet.reconnectMs.length} reconnects through nginx, ` +
    `reconnect-to-snapshot p50 ${pct(fleet.reconnectMs, 50)} ms, p99 ${pct(fleet.reconnectMs, 99)} ms; per pod ${JSON.stringify(fleet.perNode())}; ` +
    `subscriptions lost ${lost}, wrong ${tot.wrong - t0.wrong}, seq gaps ${tot.gaps - t0.gaps}, distinct ticks lost ${ticksLost} of ${tot.ticks - t0.ticks}`)
  if (lost) e.fail(`${lost} clients through nginx never reconnected although every old pod is gone`)
  if (ticksLost) e.fail(`${ticksLost} ticks lost by the clients through nginx during the rolling restart`)
  if (tot.wrong - t0.wrong) e.fail(`wrong-symbol ${tot.wrong - t0.wrong} through nginx: ${JSON.stringify(fleet.gapLog.slice(-5))}`)
}

/**
 * TLS needs nginx >= 1.25 (the controller's TLS servers say `http2 on`).
 * The image has Debian's nginx: say which, and why TLS is not tried.
 *
 * @param {E2E} e
 */
async function tls (e) {
  const r = await e.run('kubectl', ['-n', 'nginx-ingress', 'exec', 'deploy/nginx-ingress-controller', '--', '/usr/sbin/nginx', '-v'], { allowFail: true })
  const version = `${r.out}${r.err}`.match(/nginx\/(\d+)\.(\d+)\.(\d+)/) ?? e.fail(`nginx -v in the controller pod: ${r.out}${r.err}`)
  const [, major, minor] = version.map(Number)
  if (major > 1 || minor >= 25) e.fail(`the controller's nginx is ${version[0]}: TLS through it can be tested now (infra/e2e/nginx.mjs)`)
  say(e, `TLS skipped: the image's nginx is ${version[0]}, Debian 12's (bookworm and bookworm-security; bookworm-backports has no nginx), ` +
    'and the controller\'s TLS server template uses `http2 on`, which needs nginx >= 1.25: its TLS listeners fail on 1.22; plain HTTP is what runs here')
}
