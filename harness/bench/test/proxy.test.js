// Unit tests of the proxy section's pure parts: the HAProxy config and its
// timeouts, the F5 fixture made runnable, the plan (layouts, rounds), the
// arithmetic (/proc figures per connection and per frame, the summary) and
// the table. The section itself runs in `make bench`.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { renderNginxConf } from '@wsps/testkit/nginx-conf'
import { nginxTimeouts, renderHaproxyConf } from '../src/proxies/haproxy-conf.js'
import { adaptF5Conf } from '../src/proxies/f5-conf.js'
import { NGINX_VARIANTS } from '../src/proxies/start.js'
import { LAYOUTS, PATHS, bytesPerConn, coreBusy, median, proxyScenarios, rounds, summarize, usPerFrame } from '../src/sections/proxy-plan.js'
import { proxySection } from '../src/sections/proxy-report.js'

const localNginx = renderNginxConf('/run', { listen: ['127.0.0.1:1'], upstreams: ['127.0.0.1:2'] })

test('HAProxy takes its timeouts from the local nginx config (3600 s, as the chart presets)', () => {
  assert.deepEqual(nginxTimeouts(localNginx), { readSeconds: 3600, sendSeconds: 3600 })
  assert.deepEqual(nginxTimeouts('location / {\n  proxy_read_timeout 2m;\n  proxy_send_timeout 90;\n}'), { readSeconds: 120, sendSeconds: 90 })
  assert.throws(() => nginxTimeouts('location /x {\n}'), /no "location \/ \{"/)
  assert.throws(() => nginxTimeouts('location / {\n  proxy_read_timeout 1s;\n}'), /no proxy_send_timeout/)
})

test('the HAProxy config proxies WebSocket with the given idle timeout, least-connections, one thread', () => {
  const conf = renderHaproxyConf({ listen: '127.0.0.1:9000', upstreams: ['127.0.0.1:9001', '127.0.0.1:9002'], timeoutSeconds: 3600 })
  const lines = conf.split('\n').map((l) => l.trim())
  for (const want of ['mode http', 'timeout client 3600s', 'timeout server 3600s', 'timeout tunnel 3600s', 'bind 127.0.0.1:9000', 'balance leastconn', 'server gw0 127.0.0.1:9001', 'server gw1 127.0.0.1:9002', 'nbthread 1', 'maxconn 9500', 'option forwardfor']) {
    assert.ok(lines.includes(want), `haproxy.cfg has "${want}":\n${conf}`)
  }
  assert.throws(() => renderHaproxyConf({ listen: 'x', upstreams: [], timeoutSeconds: 1 }), TypeError)
  assert.throws(() => renderHaproxyConf({ listen: 'x', upstreams: ['y'], timeoutSeconds: 0 }), TypeError)
})

test('each local nginx variant changes one line of the same render', () => {
  for (const [name, v] of Object.entries(NGINX_VARIANTS)) {
    const before = localNginx.split('\n')
    const after = localNginx.replace(v.re, v.to).split('\n')
    const changed = after.filter((l, i) => l !== before[i])
    assert.equal(changed.length, 1, `${name}: ${changed.join(' | ')}`)
  }
  const at = (/** @type {string} */ t, /** @type {string} */ loc) => t.slice(t.indexOf(`location ${loc} {`), t.indexOf('}', t.indexOf(`location ${loc} {`)))
  const buffered = localNginx.replace(NGINX_VARIANTS['nginx-buffered'].re, NGINX_VARIANTS['nginx-buffered'].to)
  assert.match(at(buffered, '/'), /proxy_buffering on;/)
  assert.match(at(buffered, '= /sse'), /proxy_buffering off;/, 'SSE keeps its buffering off')
  assert.match(localNginx.replace(NGINX_VARIANTS['nginx-1w'].re, NGINX_VARIANTS['nginx-1w'].to), /^worker_processes 1;$/m)
})

test('the F5 fixture runs outside a pod with its proxied location as the controller rendered it', () => {
  const dir = new URL('../fixtures/f5-nginx/', import.meta.url)
  const [name] = readdirSync(new URL('conf.d/', dir))
  const rendered = { main: readFileSync(new URL('nginx.conf', dir), 'utf8'), ingress: readFileSync(new URL(`conf.d/${name}`, dir), 'utf8') }
  const { main, ingress } = adaptF5Conf(rendered, { dir: '/scratch', listen: '127.0.0.1:7000', upstream: '127.0.0.1:7001' })
  for (const gone of ['load_module', 'js_import', 'stub_status', 'config-version', 'stream {', '/var/lib/nginx', '/etc/nginx/conf.d', '/dev/stdout']) assert.ok(!main.includes(gone), `adapted nginx.conf still has ${gone}`)
  for (const kept of ['include /scratch/conf.d/*.conf;', 'pid /scratch/nginx.pid;', 'access_log /scratch/access.log main;', 'worker_connections  9500;', 'worker_processes  auto;', 'listen unix:/scratch/nginx-502-server.sock;']) assert.ok(main.includes(kept), `adapted nginx.conf has ${kept}`)
  assert.match(ingress, /\tlisten 127\.0\.0\.1:7000 default_server;\n/)
  assert.match(ingress, /\tserver 127\.0\.0\.1:7001 max_fails=1/)
  // Every line of the location is the controller's.
  const location = (/** @type {string} */ t) => t.slice(t.indexOf('location / {'), t.indexOf('}', t.indexOf('location / {')))
  assert.equal(location(ingress), location(rendered.ingress))
  for (const d of ['proxy_read_timeout 3600s;', 'proxy_send_timeout 3600s;', 'proxy_buffering off;', 'proxy_set_header Upgrade $http_upgrade;']) assert.ok(location(ingress).includes(d), d)
  assert.throws(() => adaptF5Conf({ main: 'events {}', ingress: rendered.ingress }, { dir: '/s', listen: 'a', upstream: 'b' }), /fixture's nginx\.conf changed/)
})

test('layouts: the main one keeps the proxy off the load generator\'s core; the old one puts it there', () => {
  const main = LAYOUTS[proxyScenarios({ proxyDeliveries: 1, proxyReps: 1, proxyAltReps: 1, proxyOldDeliveries: 2 })[0].layout]
  assert.notEqual(main.proxy, main.load)
  assert.notEqual(main.proxy, main.gateway)
  assert.equal(LAYOUTS['proxy-with-loadgen'].proxy, LAYOUTS['proxy-with-loadgen'].load)
  assert.equal(LAYOUTS['proxy-with-gateway'].proxy, LAYOUTS['proxy-with-gateway'].gateway)
})

test('scenarios: every path at one rate in each layout, and the old run with nginx only at its own rate', () => {
  const sc = proxyScenarios({ proxyDeliveries: 20_000, proxyReps: 3, proxyAltReps: 2, proxyOldDeliveries: 60_000 })
  assert.deepEqual(sc.map((s) => [s.id, s.layout, s.deliveries, s.reps, s.mode]), [
    ['main', 'proxy-alone', 20_000, 3, 'epoll'],
    ['with-gateway', 'proxy-with-gateway', 20_000, 2, 'epoll'],
    ['with-loadgen', 'proxy-with-loadgen', 20_000, 2, 'epoll'],
    ['old-run', 'proxy-with-loadgen', 60_000, 2, 'goroutine']
  ])
  assert.deepEqual(sc[0].paths, PATHS)
  const proxies = ['direct', 'nginx', 'haproxy', 'f5-nginx']
  assert.deepEqual(sc[1].paths, proxies, 'the local nginx\'s variants (one directive changed) only in the main layout')
  assert.deepEqual(sc[2].paths, proxies)
  assert.deepEqual(sc[3].paths, ['direct', 'nginx'])
  assert.deepEqual(proxyScenarios({ proxyDeliveries: 1, proxyReps: 1, proxyAltReps: 1, proxyOldDeliveries: 1 }, ['direct', 'haproxy'])[3].paths, ['direct'])
})

test('rounds alternate the paths, each round starting one path later', () => {
  assert.deepEqual(rounds(['a', 'b', 'c'], 3).map((r) => `${r.rep}${r.path}`), ['0a', '0b', '0c', '1b', '1c', '1a', '2c', '2a', '2b'])
  assert.deepEqual(rounds(['a'], 0), [])
})

test('coreBusy adds each party\'s CPU on the core its layout gives it', () => {
  const cpu = { server: 0.3, proxy: 0.2, loadgen: 0.25, redis: 0.05, publisher: 0.1 }
  assert.deepEqual(coreBusy(LAYOUTS['proxy-alone'], cpu), { 0: 0.7, 1: 0.2 })
  assert.deepEqual(coreBusy(LAYOUTS['proxy-with-gateway'], cpu), { 0: 0.4, 1: 0.5 })
  assert.deepEqual(coreBusy(LAYOUTS['proxy-with-loadgen'], cpu), { 0: 0.6, 1: 0.3 })
  assert.deepEqual(coreBusy(LAYOUTS['proxy-alone'], { ...cpu, proxy: undefined }), { 0: 0.7, 1: 0 }, 'direct: the proxy core is idle, not missing')
})

test('per connection and per frame: RSS growth over connections, CPU over frames', () => {
  assert.equal(bytesPerConn(10 * 2 ** 20, 30 * 2 ** 20, 1024), 20 * 1024)
  assert.equal(bytesPerConn(1, 2, 0), null)
  assert.equal(usPerFrame(0.5, 50_000), 10)
  assert.equal(usPerFrame(undefined, 50_000), null)
  assert.equal(usPerFrame(0.5, 0), null)
})

/** One run of the section, as sections/proxy.js records it. */
const run = (/** @type {string} */ path, /** @type {number} */ rep, /** @type {number} */ p50, /** @type {number} */ p99, extra = {}) => ({
  scenario: 'main', path, rep, conns: 100, held: 100, failed: 0, handshakesPerSec: 1000, handshakeMs: { p50: 5, p99: 9 }, expected: 2000, entries: 1990, delivered: 2000, frames: 1500, p50, p99,
  cpu: { server: 0.1, loadgen: 0.1, redis: 0, publisher: 0, ...(path === 'direct' ? {} : { proxy: 0.05 }) },
  coreBusy: { 0: 0.2, 1: path === 'direct' ? 0 : 0.05 },
  ...(path === 'direct' ? {} : { proxyProcesses: 3, proxyBytesPerConn: 20 * 1024, proxyUsPerFrame: 33.3 }),
  gatewayUsPerFrame: 66.7,
  ...extra
})

test('median: the middle value, or the mean of the middle two', () => {
  assert.equal(median([3, 1, 2]), 2)
  assert.equal(median([-229, 263]), 17)
  assert.ok(Number.isNaN(median([])))
})

test('the summary: medians per path, and added latency paired with the direct run of the same round', () => {
  const scenarios = [{ id: 'main', title: 'main layout', layout: /** @type {const} */ ('proxy-alone'), deliveries: 2000, paths: ['direct', 'nginx'], reps: 3, mode: /** @type {const} */ ('epoll') }]
  const runs = [run('direct', 0, 1, 10), run('nginx', 0, 2, 12), run('direct', 1, 5, 50), run('nginx', 1, 5.5, 49), run('direct', 2, 1, 9), run('nginx', 2, 1.5, 30), { scenario: 'main', path: 'nginx', rep: 3, error: 'boom' }]
  const s = summarize(scenarios, runs).main
  assert.equal(s.direct.p50, 1)
  assert.equal(s.nginx.p50, 2)
  // Per round: +1 / +2, +0.5 / -1, +0.5 / +21: medians +0.5 and +2.
  assert.equal(s.nginx.addedP50, 0.5)
  assert.equal(s.nginx.addedP99, 2)
  assert.equal(s.direct.addedP50, null)
  assert.equal(s.nginx.runs, 3, 'a failed run is left out')
  assert.equal(s.nginx.proxyBytesPerConn, 20 * 1024)
  assert.deepEqual(s.nginx.coreBusy, { 0: 0.2, 1: 0.05 })
})

test('the proxy table: one row per path in the main layout, and the old run explained by its cores', () => {
  const scenarios = proxyScenarios({ proxyDeliveries: 2000, proxyReps: 1, proxyAltReps: 1, proxyOldDeliveries: 6000 }, ['direct', 'nginx', 'haproxy'])
  const runs = [
    run('direct', 0, 1, 10), run('nginx', 0, 1.5, 12), run('haproxy', 0, 1.2, 10.5, { proxyProcesses: 1, proxyBytesPerConn: 7 * 1024 }),
    run('direct', 0, 30, 90, { scenario: 'old-run', coreBusy: { 0: 0.7, 1: 0.9 } }), run('nginx', 0, 140, 270, { scenario: 'old-run', coreBusy: { 0: 0.99, 1: 0.9 } })
  ]
  const pr = { scenarios, layouts: LAYOUTS, proxies: { nginx: { label: 'nginx (local stack)', config: 'tmpl' }, haproxy: { label: 'HAProxy (Debian)', config: 'gen' } }, runs, summary: summarize(scenarios, runs) }
  const md = proxySection(pr, { proxyConns: 100, k: 5, symbols: 100, zipf: 1, proxyMeasureMs: 2000, settleMs: 1000 }).join('\n')
  assert.match(md, /\| path \| proxy processes \| held \(connected\) \| proxy RSS per conn \| handshakes\/s \|/)
  assert.match(md, /\| direct \| {2}\| 100 \(100\) \| {2}\| 1,000 \| 5\.0 \/ 9\.0 \| 1,990 \(2,000\) \| 1,500 \| 1\.0 \/ 10\.0 \| {2}\| {2}\| {2}\| 66\.7 \|/)
  assert.match(md, /\| nginx \(local stack\) \| 3 \| 100 \(100\) \| 20\.0 KiB \| 1,000 \| 5\.0 \/ 9\.0 \| 1,990 \(2,000\) \| 1,500 \| 1\.5 \/ 12\.0 \| \+0\.5 \/ \+2\.0 \| 33\.3 \| 0\.05 \| 66\.7 \|/)
  assert.match(md, /\| HAProxy \(Debian\) \| 1 \| 100 \(100\) \| 7\.0 KiB \|/)
  assert.match(md, /nginx added \+110\.0 \/ \+180\.0 ms with core 0 \(load generator, Redis, publisher, nginx\) 99% busy \(direct: 70%\)/)
  for (const start of ['| path |', '| scenario |']) {
    const lines = md.split('\n')
    const at = lines.findIndex((l) => l.startsWith(start))
    const cells = (/** @type {string} */ l) => l.split('|').length
    for (const row of lines.slice(at + 1, lines.indexOf('', at))) assert.equal(cells(row), cells(lines[at]), `as many cells as the header: ${row}`)
  }
  assert.deepEqual(proxySection({ error: 'no nginx' }, {}), ['## Proxies in front of one gateway: direct, nginx, HAProxy, the F5 controller\'s nginx', '', 'failed: no nginx', ''])
})
