// The proxies of the bench's proxy section, each in front of one gateway:
// how to start one (pinned to a core, on a free loopback port, from its one
// config source) and what its process tree is (CPU and RSS are read there).

import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, httpOk, waitFor } from '@wsps/testkit'
import { renderNginxConf, writeNginxConf } from '@wsps/testkit/nginx-conf'
import { start } from '../spawn.js'
import { writeF5Conf, F5_ORIGIN } from './f5-conf.js'
import { nginxTimeouts, writeHaproxyConf } from './haproxy-conf.js'

/**
 * @typedef {object} ProxyHandle
 * @property {string} url ws:// base the load generator connects to
 * @property {() => number[]} roots the proxy's first process (nginx's master, HAProxy): its tree is
 *   the proxy (CpuMeter and tree() walk the descendants themselves; a list that already holds them
 *   would count each worker twice)
 * @property {() => Promise<void>} stop
 *
 * @typedef {object} ProxyStart
 * @property {string} upstream the gateway, host:port
 * @property {string | null} core CPU list for taskset
 * @property {string} dir scratch directory of this proxy
 */

/**
 * Variants of the local stack's nginx, each changing one directive of the
 * same render: one worker (the local config runs two, which share the one
 * core the bench gives a proxy), and response buffering on in the WebSocket
 * location (off there).
 *
 * @type {Record<string, {label: string, change: string, re: RegExp, to: string}>}
 */
export const NGINX_VARIANTS = {
  'nginx-1w': { label: 'nginx (local stack, 1 worker)', change: '`worker_processes 1`', re: /^worker_processes \d+;$/m, to: 'worker_processes 1;' },
  'nginx-buffered': { label: 'nginx (local stack, proxy_buffering on)', change: '`proxy_buffering on` in `location /`', re: /(location \/ \{[^}]*?)proxy_buffering off;/, to: '$1proxy_buffering on;' }
}

/** @type {Record<string, {label: string, config: string, start: (o: ProxyStart) => Promise<ProxyHandle>}>} */
export const PROXIES = {
  nginx: {
    label: 'nginx (local stack)',
    config: 'infra/local/nginx.conf.tmpl rendered by harness/testkit/src/nginx-conf.js (what `make up` runs)',
    async start ({ upstream, core, dir }) {
      const port = await freePort()
      const conf = writeNginxConf(dir, { listen: [`127.0.0.1:${port}`], upstreams: [upstream] })
      return running(start(nginxBin(), ['-p', join(dir, 'nginx'), '-c', conf], { core, name: 'nginx', stdin: false }), port)
    }
  },
  ...Object.fromEntries(Object.entries(NGINX_VARIANTS).map(([k, v]) => [k, localNginxVariant(v)])),
  haproxy: {
    label: 'HAProxy (Debian)',
    config: 'harness/bench/src/proxies/haproxy-conf.js, timeouts from the local nginx config',
    async start ({ upstream, core, dir }) {
      const port = await freePort()
      const { readSeconds } = nginxTimeouts(renderNginxConf(dir, { listen: ['127.0.0.1:1'], upstreams: [upstream] }))
      const conf = writeHaproxyConf(dir, { listen: `127.0.0.1:${port}`, upstreams: [upstream], timeoutSeconds: readSeconds })
      // -db: in the foreground, one process (no master-worker), so its pid is the proxy.
      return running(start('/usr/sbin/haproxy', ['-db', '-f', conf], { core, name: 'haproxy', stdin: false }), port)
    }
  },
  'f5-nginx': {
    label: 'nginx (F5 ingress controller config)',
    config: F5_ORIGIN,
    async start ({ upstream, core, dir }) {
      const port = await freePort()
      const conf = writeF5Conf(dir, { listen: `127.0.0.1:${port}`, upstream })
      return running(start(nginxBin(), ['-p', dir, '-c', conf], { core, name: 'f5-nginx', stdin: false }), port)
    }
  }
}

/**
 * The local stack's nginx with one directive changed in its rendered file.
 *
 * @param {{label: string, change: string, re: RegExp, to: string}} v
 */
function localNginxVariant ({ label, change, re, to }) {
  return {
    label,
    config: `the same render with ${change}`,
    async start (/** @type {ProxyStart} */ { upstream, core, dir }) {
      const port = await freePort()
      const conf = writeNginxConf(dir, { listen: [`127.0.0.1:${port}`], upstreams: [upstream] })
      const text = readFileSync(conf, 'utf8')
      if (!re.test(text)) throw new Error(`the local nginx config has no match for ${re}`)
      writeFileSync(conf, text.replace(re, to))
      return running(start(nginxBin(), ['-p', join(dir, 'nginx'), '-c', conf], { core, name: label, stdin: false }), port)
    }
  }
}

/** @returns {string} Debian's nginx (setup.sh installs it) */
function nginxBin () {
  const bin = ['/usr/sbin/nginx', 'nginx'].find((b) => { try { execFileSync(b, ['-v'], { stdio: 'ignore' }); return true } catch { return false } })
  if (!bin) throw new Error('nginx not installed (make bench-deps)')
  return bin
}

/**
 * A proxy once its port answers the gateway's /healthz through it.
 *
 * @param {import('../spawn.js').Child} p
 * @param {number} port
 * @returns {Promise<ProxyHandle>}
 */
async function running (p, port) {
  const url = `http://127.0.0.1:${port}`
  try {
    await waitFor(async () => {
      if (!p.alive) throw new Error(`${p.name} exited: ${p.logs.slice(-20).join('\n')}`)
      return httpOk(`${url}/healthz`)
    }, { timeout: 15_000, message: `${p.name} on ${port}` })
  } catch (err) {
    await p.stop('SIGKILL')
    throw err
  }
  return {
    url: `ws://127.0.0.1:${port}`,
    roots: () => [p.pid],
    async stop () { await p.stop('SIGTERM', { killAfterMs: 3000 }) }
  }
}
