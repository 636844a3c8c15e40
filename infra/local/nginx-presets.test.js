// The local stack's nginx (infra/local/nginx.conf.tmpl, the stand-in for the
// Kubernetes ingress) and the chart's two nginx presets (gateway.ingress.preset
// f5-nginx and community-nginx) say the same things to the gateways: the same
// proxy read/send timeouts, response buffering off (SSE), the WebSocket
// upgrade headers, and the forwarded headers. Run by `make chart-test`
// (it needs helm: tools/tools.sh).
//
// The presets are annotations; what a controller does with them, and what it
// does without one, is the controller's template. For the F5 NGINX Ingress
// Controller that template is checked too when the vendored build is in the
// cache (infra/local-cluster/build-bins.sh nginx-ingress); ingress-nginx's
// defaults (upgrade and forwarded headers on every location) are stated below.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { test } from 'node:test'

const ROOT = new URL('../../', import.meta.url)
const HELM = process.env.HELM || 'helm'
const read = (/** @type {string} */ p) => readFileSync(new URL(p, ROOT), 'utf8')

/**
 * The directives of one `location` block of the local template, by name
 * (`proxy_set_header` keyed by the header: `proxy_set_header Upgrade`).
 *
 * @param {string} conf
 * @param {string} match the location line's argument, e.g. `= /sse` or `/`
 * @returns {Map<string, string>}
 */
function location (conf, match) {
  const at = conf.indexOf(`location ${match} {`)
  assert.ok(at >= 0, `infra/local/nginx.conf.tmpl has no "location ${match}"`)
  const body = conf.slice(conf.indexOf('{', at) + 1, conf.indexOf('}', at))
  /** @type {Map<string, string>} */
  const out = new Map()
  for (const line of body.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean)) {
    const [name, ...args] = line.replace(/;$/, '').split(/\s+/)
    if (name === 'proxy_set_header') out.set(`${name} ${args[0]}`, args.slice(1).join(' '))
    else out.set(name, args.join(' '))
  }
  return out
}

/**
 * The chart's gateway Ingress annotations for a preset, rendered by helm.
 *
 * @param {string} preset
 * @returns {Record<string, string>}
 */
function presetAnnotations (preset) {
  const out = execFileSync(HELM, ['template', 'wsps', new URL('charts/wsps', ROOT).pathname, '--show-only', 'templates/gateway-ingress.yaml',
    '--set', 'gateway.ingress.enabled=true', '--set', 'gateway.ingress.className=nginx', '--set', `gateway.ingress.preset=${preset}`], { encoding: 'utf8' })
  const block = out.match(/\n {2}annotations:\n((?: {4}.*\n)+)/)
  assert.ok(block, `the ${preset} preset rendered no annotations:\n${out}`)
  return Object.fromEntries(block[1].trimEnd().split('\n').map((l) => {
    const m = l.trim().match(/^([^:]+(?::[^:\s]+)?): "(.*)"$/)
    assert.ok(m, `unexpected annotation line: ${l}`)
    return [m[1], m[2]]
  }))
}

// The chart's default gateway.ingress.timeoutSeconds: what the presets render with.
const values = read('charts/wsps/values.yaml')
const timeoutSeconds = Number(values.slice(values.indexOf('\n  ingress:\n')).match(/^ {4}timeoutSeconds: (\d+)$/m)?.[1])
const conf = read('infra/local/nginx.conf.tmpl')
const ws = location(conf, '/')
const sse = location(conf, '= /sse')
const f5 = presetAnnotations('f5-nginx')
const community = presetAnnotations('community-nginx')

test('the proxy read and send timeouts are the same in the local nginx and both presets', () => {
  assert.ok(timeoutSeconds > 60, `charts/wsps/values.yaml gateway.ingress.timeoutSeconds: ${timeoutSeconds}`)
  for (const [where, loc] of /** @type {[string, Map<string, string>][]} */ ([['location /', ws], ['location = /sse', sse]])) {
    for (const d of ['proxy_read_timeout', 'proxy_send_timeout']) {
      assert.equal(loc.get(d), `${timeoutSeconds}s`, `local nginx ${where} ${d} vs the presets' gateway.ingress.timeoutSeconds ${timeoutSeconds}`)
    }
  }
  for (const d of ['read', 'send']) {
    assert.equal(f5[`nginx.org/proxy-${d}-timeout`], `${timeoutSeconds}s`, `f5-nginx nginx.org/proxy-${d}-timeout`)
    assert.equal(community[`nginx.ingress.kubernetes.io/proxy-${d}-timeout`], String(timeoutSeconds), `community-nginx proxy-${d}-timeout`)
  }
})

test('response buffering is off in the local nginx and both presets (SSE events go out as written)', () => {
  assert.equal(ws.get('proxy_buffering'), 'off', 'local nginx location /')
  assert.equal(sse.get('proxy_buffering'), 'off', 'local nginx location = /sse')
  assert.equal(f5['nginx.org/proxy-buffering'], 'False', 'f5-nginx nginx.org/proxy-buffering')
  assert.equal(community['nginx.ingress.kubernetes.io/proxy-buffering'], 'off', 'community-nginx proxy-buffering')
})

// What both controllers send upstream on a WebSocket location: the local
// nginx must send the same. ingress-nginx sets all of them on every
// location without an annotation; the F5 controller sets the upgrade pair
// only for the Services in nginx.org/websocket-services.
const UPGRADE = { 'proxy_http_version': '1.1', 'proxy_set_header Upgrade': '$http_upgrade', 'proxy_set_header Connection': '$connection_upgrade' }
const FORWARDED = { 'proxy_set_header Host': '$host', 'proxy_set_header X-Forwarded-For': '$proxy_add_x_forwarded_for', 'proxy_set_header X-Forwarded-Proto': '$scheme' }

test('the local nginx sends the upgrade and forwarded headers the controllers send', () => {
  for (const [k, v] of Object.entries({ ...UPGRADE, ...FORWARDED })) assert.equal(ws.get(k), v, `local nginx location / ${k}`)
  // /sse is no upgrade: its upstream connection is kept alive (Connection "").
  for (const [k, v] of Object.entries(FORWARDED)) assert.equal(sse.get(k), v, `local nginx location = /sse ${k}`)
  assert.equal(f5['nginx.org/websocket-services'], 'wsps-gateway', 'f5-nginx must name the gateway Service in nginx.org/websocket-services, or the controller sends no Upgrade header (no 101)')
  assert.deepEqual(Object.keys(community).filter((k) => /websocket|upgrade|connection/i.test(k)), [], 'community-nginx needs no upgrade annotation (ingress-nginx upgrades on every location)')
})

// The vendored F5 controller's Ingress template, where cluster-up built it.
const cache = process.env.WSPS_CACHE || `${homedir()}/.cache/wsps`
const versions = read('tools/versions.env')
const icDir = `${cache}/cluster/nginx-ingress-${versions.match(/^NGINX_INGRESS_VERSION=(.+)$/m)?.[1]}-${versions.match(/^NGINX_INGRESS_SHA256=(.{12})/m)?.[1]}`
const icTemplate = `${icDir}/templates/nginx.ingress.tmpl`

test('the F5 controller\'s Ingress template turns the f5-nginx annotations into what the local nginx says', { skip: existsSync(icTemplate) ? false : `no vendored controller build at ${icDir} (infra/local-cluster/build-bins.sh nginx-ingress)` }, () => {
  const t = readFileSync(icTemplate, 'utf8')
  const lines = new Set(t.split('\n').map((l) => l.trim()))
  // Upgrade headers only under {{if $location.Websocket}} (set from nginx.org/websocket-services).
  const websocket = t.slice(t.indexOf('{{- if $location.Websocket}}'), t.indexOf('{{end}}', t.indexOf('{{- if $location.Websocket}}')))
  for (const k of ['Upgrade', 'Connection']) assert.ok(websocket.includes(`proxy_set_header ${k} ${UPGRADE[`proxy_set_header ${k}`]};`), `F5 template: ${k} under $location.Websocket`)
  assert.ok(lines.has('proxy_http_version 1.1;'), 'F5 template: proxy_http_version 1.1')
  for (const [k, v] of Object.entries(FORWARDED)) {
    const want = k.endsWith('Proto') ? `${k} {{if $server.RedirectToHTTPS}}https{{else}}${v}{{end}};` : `${k} ${v};`
    assert.ok(lines.has(want), `F5 template: ${want}`)
  }
  // The timeouts and buffering come from the annotations as written.
  assert.ok(lines.has('proxy_read_timeout {{$location.ProxyReadTimeout}};') && lines.has('proxy_send_timeout {{$location.ProxySendTimeout}};'), 'F5 template: per-location proxy timeouts')
  assert.ok(lines.has('proxy_buffering {{if $location.ProxyBuffering}}on{{else}}off{{end}};'), 'F5 template: per-location proxy_buffering')
})
