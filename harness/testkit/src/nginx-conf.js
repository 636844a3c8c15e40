#!/usr/bin/env node
// The one renderer of infra/local/nginx.conf.tmpl: `make up` (infra/local/up.sh,
// through the command line below), the testkit's startNginx and the bench
// all run nginx with the settings users get. Node built-ins only, so it runs
// before `npm ci`.
//
//   node harness/testkit/src/nginx-conf.js RUN_DIR --listen ADDR... --upstream ADDR... [--token ADDR] [--daemon]
//
// writes RUN_DIR/nginx/nginx.conf (nginx's files under RUN_DIR/nginx, logs
// under RUN_DIR/logs) and prints its path.

import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const TEMPLATE = fileURLToPath(new URL('../../../infra/local/nginx.conf.tmpl', import.meta.url))

/**
 * @typedef {object} NginxConfOptions
 * @property {string[]} listen addresses to listen on (`127.0.0.1:8080`, `[::1]:8080`)
 * @property {string[]} upstreams gateway addresses (`127.0.0.1:8081`)
 * @property {string} [token] the local token server (`make up AUTH=hs256`: infra/local/token-server.js),
 *   proxied at /local-token so the page fetches its tokens from its own origin
 * @property {boolean} [daemon] nginx forks into the background (`make up`); default false: it stays in
 *   the foreground, so the process that starts it owns it and can stop it
 */

/**
 * The template rendered for nginx's files under `dir`.
 *
 * @param {string} dir
 * @param {NginxConfOptions} options
 * @returns {string}
 */
export function renderNginxConf (dir, { listen, upstreams, token = '', daemon = false }) {
  if (!listen.length || !upstreams.length) throw new TypeError('nginx needs at least one listen address and one upstream')
  const conf = readFileSync(TEMPLATE, 'utf8')
    .replaceAll('__UPSTREAMS__', upstreams.map((u) => `    server ${u} max_fails=1 fail_timeout=2s;`).join('\n'))
    .replaceAll('__LISTEN__', listen.map((l) => `    listen ${l};`).join('\n'))
    .replaceAll('__TOKEN_LOCATION__', token
      ? `    # The local stack's token server (AUTH=hs256): tokens for the page, never cached.\n    location = /local-token {\n      proxy_pass http://${token};\n      proxy_set_header Host $host;\n    }`
      : '')
    .replaceAll('__RUN__', dir)
  return daemon ? conf : conf.replace('daemon on;', 'daemon off;')
}

/**
 * Writes the rendered config to `dir`/nginx/nginx.conf, with the directories
 * nginx needs (nginx/tmp, logs); run it as `nginx -p <dir>/nginx -c <file>`.
 *
 * @param {string} dir
 * @param {NginxConfOptions} options
 * @returns {string} the config file
 */
export function writeNginxConf (dir, options) {
  mkdirSync(join(dir, 'nginx/tmp'), { recursive: true })
  mkdirSync(join(dir, 'logs'), { recursive: true })
  const file = join(dir, 'nginx/nginx.conf')
  writeFileSync(file, renderNginxConf(dir, options))
  return file
}

/** @returns {boolean} this file is the command being run (a symlinked checkout still counts) */
function isMain () {
  try {
    return realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
  } catch {
    return false
  }
}

if (isMain()) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { listen: { type: 'string', multiple: true, default: [] }, upstream: { type: 'string', multiple: true, default: [] }, token: { type: 'string', default: '' }, daemon: { type: 'boolean', default: false } }
  })
  if (positionals.length !== 1) {
    console.error('usage: nginx-conf.js RUN_DIR --listen ADDR... --upstream ADDR... [--token ADDR] [--daemon]')
    process.exit(2)
  }
  console.log(writeNginxConf(positionals[0], { listen: values.listen, upstreams: values.upstream, token: values.token, daemon: values.daemon }))
}
