// nginx in front of gateways, rendered from the same template `make up`
// uses (infra/local/nginx.conf.tmpl), on a free port and a directory of its
// own: the proxy settings under test are the ones users get.

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT, children, freePort, getJson, waitFor } from './index.js'

/**
 * Writes infra/local/nginx.conf.tmpl rendered for `gateways`, listening on
 * 127.0.0.1:`port`, with nginx's files under `dir` (nginx/, logs/), to run in
 * the foreground (`nginx -p <dir>/nginx -c <returned file>`). The one
 * template: `make up`, these tests and the bench run the same settings.
 *
 * @param {string} dir
 * @param {{port: number}[]} gateways
 * @param {number} port
 * @returns {string} the config file
 */
export function writeNginxConf (dir, gateways, port) {
  mkdirSync(join(dir, 'nginx/tmp'), { recursive: true })
  mkdirSync(join(dir, 'logs'), { recursive: true })
  const conf = readFileSync(join(ROOT, 'infra/local/nginx.conf.tmpl'), 'utf8')
    .replaceAll('__UPSTREAMS__', gateways.map((g) => `    server 127.0.0.1:${g.port} max_fails=1 fail_timeout=2s;`).join('\n'))
    .replaceAll('__LISTEN__', `    listen 127.0.0.1:${port};`)
    .replaceAll('__RUN__', dir)
    // In the foreground, so the process that starts it owns it and can stop it.
    .replace('daemon on;', 'daemon off;')
  const confFile = join(dir, 'nginx/nginx.conf')
  writeFileSync(confFile, conf)
  return confFile
}

/**
 * @param {{port: number}[]} gateways
 */
export async function startNginx (gateways) {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-nginx-'))
  const port = await freePort()
  const confFile = writeNginxConf(dir, gateways, port)
  const proc = spawn('nginx', ['-p', join(dir, 'nginx'), '-c', confFile], { stdio: ['ignore', 'ignore', 'pipe'] })
  children.add(proc)
  let stderr = ''
  proc.stderr.on('data', (d) => { stderr += d })
  const exited = once(proc, 'exit').then(() => children.delete(proc))
  const url = `http://127.0.0.1:${port}`
  try {
    await waitFor(async () => {
      if (proc.exitCode !== null) throw new Error(`nginx exited with ${proc.exitCode}: ${stderr}`)
      return (await getJson(`${url}/healthz`)).status === 200
    }, { timeout: 15_000, message: `nginx on ${port}` })
  } catch (err) {
    proc.kill('SIGKILL')
    throw err
  }
  return {
    port,
    url,
    /** The access log (buffered by nginx: flushed within a second). */
    accessLog: join(dir, 'logs/nginx-access.log'),
    async stop () {
      // SIGTERM: fast shutdown, which also flushes the buffered access log.
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
