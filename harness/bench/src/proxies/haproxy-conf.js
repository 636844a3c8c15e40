// The bench's HAProxy config (Debian's haproxy, 2.6): the least that proxies
// wsps's WebSocket and SSE traffic, with the timeouts of the local stack's
// nginx (which the chart's presets match: infra/local/nginx-presets.test.js).
// The only place it is written; the proxy section renders it per run.

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The local nginx's `proxy_read_timeout` and `proxy_send_timeout` of its
 * WebSocket location (`location /`), in seconds: HAProxy holds an idle
 * socket exactly as long.
 *
 * @param {string} nginxConf a rendered nginx.conf (harness/testkit/src/nginx-conf.js)
 * @returns {{readSeconds: number, sendSeconds: number}}
 */
export function nginxTimeouts (nginxConf) {
  const at = nginxConf.indexOf('location / {')
  if (at < 0) throw new Error('the nginx config has no "location / {"')
  const body = nginxConf.slice(at, nginxConf.indexOf('}', at))
  const seconds = (/** @type {string} */ d) => {
    const m = new RegExp(`^\\s*${d}\\s+(\\d+)(s|m|h)?;`, 'm').exec(body)
    if (!m) throw new Error(`the nginx config's location / has no ${d}`)
    return Number(m[1]) * ({ s: 1, m: 60, h: 3600 })[m[2] ?? 's']
  }
  return { readSeconds: seconds('proxy_read_timeout'), sendSeconds: seconds('proxy_send_timeout') }
}

/**
 * @typedef {object} HaproxyConfOptions
 * @property {string} listen address to listen on (`127.0.0.1:8080`)
 * @property {string[]} upstreams gateway addresses (`127.0.0.1:8081`)
 * @property {number} timeoutSeconds idle timeout of a proxied socket, both ways (the local nginx's)
 * @property {number} [maxconn] proxied connections (two descriptors each; the machine caps a process at 20000)
 * @property {number} [threads] nbthread (HAProxy's default is one per CPU it may run on)
 */

/**
 * @param {HaproxyConfOptions} o
 * @returns {string}
 */
export function renderHaproxyConf ({ listen, upstreams, timeoutSeconds, maxconn = 9500, threads = 1 }) {
  if (!upstreams.length) throw new TypeError('haproxy needs at least one upstream')
  if (!(timeoutSeconds > 0)) throw new TypeError(`timeoutSeconds must be > 0: ${timeoutSeconds}`)
  return [
    '# Rendered by harness/bench/src/proxies/haproxy-conf.js for the bench\'s proxy section.',
    'global',
    `  maxconn ${maxconn}`,
    // One thread, as nginx's workers are single-threaded; pinned by taskset.
    `  nbthread ${threads}`,
    '',
    'defaults',
    '  mode http',
    // The WebSocket upgrade is plain HTTP/1.1 to HAProxy 2.x (HTX): after the
    // 101 the connection is a tunnel and `timeout tunnel` replaces client/server.
    '  timeout connect 5s',
    '  timeout http-request 10s',
    `  timeout client ${timeoutSeconds}s`,
    `  timeout server ${timeoutSeconds}s`,
    `  timeout tunnel ${timeoutSeconds}s`,
    '  option forwardfor',
    '',
    'frontend wsps',
    `  bind ${listen}`,
    // What nginx sends as X-Forwarded-Proto: $scheme (plain HTTP here).
    '  http-request set-header X-Forwarded-Proto http',
    '  default_backend wsps_gateways',
    '',
    'backend wsps_gateways',
    // Long-lived sockets: balance on open connections, as nginx's least_conn.
    '  balance leastconn',
    ...upstreams.map((u, i) => `  server gw${i} ${u}`),
    ''
  ].join('\n')
}

/**
 * Writes the config to `dir`/haproxy.cfg; run it as `haproxy -db -f <file>`.
 *
 * @param {string} dir
 * @param {HaproxyConfOptions} o
 * @returns {string} the config file
 */
export function writeHaproxyConf (dir, o) {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, 'haproxy.cfg')
  writeFileSync(file, renderHaproxyConf(o))
  return file
}
