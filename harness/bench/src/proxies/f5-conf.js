// The F5 NGINX Ingress Controller's nginx config for the wsps gateway
// Ingress, run outside a pod: harness/bench/fixtures/f5-nginx holds what the
// controller's own code and templates render for the chart's f5-nginx
// Ingress with the e2e's ConfigMap (scripts/f5-nginx-conf.js regenerates it
// from the vendored release). To run it here, adaptF5Conf changes only what
// ties it to the pod; every directive of the proxied path stays as rendered.

import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const FIXTURE = fileURLToPath(new URL('../../fixtures/f5-nginx/', import.meta.url))
/** The gateway address the fixture was rendered with (scripts/f5-nginx-conf.js ENDPOINT). */
const RENDERED_ENDPOINT = '127.0.0.1:8081'

export const F5_ORIGIN = 'harness/bench/fixtures/f5-nginx: what the vendored F5 NGINX Ingress Controller\'s own code and templates render for the chart\'s f5-nginx Ingress with the e2e controller\'s ConfigMap (scripts/f5-nginx-conf.js); run without its njs import, status and config-version servers and empty stream block, on a loopback port as default server, with the paths of a pod (access log included) moved to a scratch directory'

/**
 * The fixture made runnable by Debian's nginx outside a pod. Removed: the
 * njs module and its import (nginx-light has no njs; only API-key policies
 * use it), the stub_status server on :8080 and the config-version include
 * (the controller's own probes), the stream block (no stream servers; Debian
 * builds the stream module as a dynamic module this nginx lacks). Moved to
 * `dir`: the access log (the pod's /dev/stdout: written unbuffered, one
 * line per request, as there; here stdout is a socket nginx cannot open), the pid file, the 502/418 unix sockets, conf.d, and nginx's temp
 * paths. Changed: the Ingress server listens on `listen` as the default
 * server (the clients' Host is not quotes.example.com), and its upstream is
 * `upstream`.
 *
 * @param {{main: string, ingress: string}} rendered the fixture's nginx.conf and its conf.d file
 * @param {{dir: string, listen: string, upstream: string}} o
 * @returns {{main: string, ingress: string}}
 */
export function adaptF5Conf ({ main, ingress }, { dir, listen, upstream }) {
  const edits = [
    [/^load_module modules\/ngx_http_js_module\.so;\n/m, ''],
    [/^ {4}js_(?:import|set) .*;\n/gm, ''],
    [/^ {4}# stub_status\n {4}server \{\n[\s\S]*?\n {4}\}\n/m, ''],
    [/^ {4}include \/etc\/nginx\/config-version\.conf;\n/m, ''],
    [/^stream \{\n[\s\S]*?\n\}\n?/m, ''],
    [/^pid\s+\/var\/lib\/nginx\/nginx\.pid;/m, `pid ${dir}/nginx.pid;`],
    [/^( {4})access_log \/dev\/stdout main;/m, `$1access_log ${dir}/access.log main;`],
    [/\/var\/lib\/nginx\/(nginx-\d+-server\.sock)/g, `${dir}/$1`],
    [/^( {4})include \/etc\/nginx\/conf\.d\/\*\.conf;/m, `$1include ${dir}/conf.d/*.conf;`],
    [/^http \{\n/m, `http {\n${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `    ${t}_temp_path ${dir}/tmp/${t};\n`).join('')}`]
  ]
  const out = { main, ingress }
  for (const [re, to] of /** @type {[RegExp, string][]} */ (edits)) {
    if (!re.test(out.main)) throw new Error(`the F5 fixture's nginx.conf changed: no match for ${re}`)
    out.main = out.main.replace(re, to)
  }
  const listenRe = /^\tlisten 80;listen \[::\]:80;$/m
  const serverRe = new RegExp(`^(\\tserver )${RENDERED_ENDPOINT.replaceAll('.', '\\.')}( )`, 'm')
  if (!listenRe.test(ingress) || !serverRe.test(ingress)) throw new Error('the F5 fixture\'s Ingress config changed: no "listen 80;listen [::]:80;" or no upstream server ' + RENDERED_ENDPOINT)
  out.ingress = ingress.replace(listenRe, `\tlisten ${listen} default_server;`).replace(serverRe, `$1${upstream}$2`)
  return out
}

/**
 * Writes the adapted config under `dir`; run it as `nginx -p <dir> -c <file>`.
 *
 * @param {string} dir
 * @param {{listen: string, upstream: string}} o
 * @returns {string} the main config file
 */
export function writeF5Conf (dir, { listen, upstream }) {
  const [name] = readdirSync(join(FIXTURE, 'conf.d'))
  const conf = adaptF5Conf({ main: readFileSync(join(FIXTURE, 'nginx.conf'), 'utf8'), ingress: readFileSync(join(FIXTURE, 'conf.d', name), 'utf8') }, { dir, listen, upstream })
  mkdirSync(join(dir, 'conf.d'), { recursive: true })
  mkdirSync(join(dir, 'tmp'), { recursive: true })
  // nginx's log before it has read the config: <prefix>/logs/error.log.
  mkdirSync(join(dir, 'logs'), { recursive: true })
  writeFileSync(join(dir, 'conf.d', name), conf.ingress)
  const file = join(dir, 'nginx.conf')
  writeFileSync(file, conf.main)
  return file
}
