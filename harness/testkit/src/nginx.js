// nginx in front of gateways, rendered from the same template `make up`
// uses (nginx-conf.js), on a free port and a directory of its own: the proxy
// settings under test are the ones users get.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, httpOk } from './net.js'
import { writeNginxConf } from './nginx-conf.js'
import { startProcess } from './process.js'
import { waitFor } from './wait.js'

/**
 * @param {{port: number}[]} gateways
 */
export async function startNginx (gateways) {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-nginx-'))
  const port = await freePort()
  const confFile = writeNginxConf(dir, { listen: [`127.0.0.1:${port}`], upstreams: gateways.map((g) => `127.0.0.1:${g.port}`) })
  const nginx = startProcess('nginx', ['-p', join(dir, 'nginx'), '-c', confFile], { name: 'nginx' })
  const url = `http://127.0.0.1:${port}`
  try {
    await waitFor(async () => {
      if (!nginx.alive) throw new Error(`nginx exited with ${nginx.proc.exitCode}: ${nginx.logs.join('\n')}`)
      return httpOk(`${url}/healthz`)
    }, { timeout: 15_000, message: `nginx on ${port}` })
  } catch (err) {
    await nginx.kill()
    throw err
  }
  return {
    port,
    url,
    /** The access log (buffered by nginx: flushed within a second). */
    accessLog: join(dir, 'logs/nginx-access.log'),
    async stop () {
      // SIGTERM: fast shutdown, which also flushes the buffered access log.
      await nginx.stop('SIGTERM')
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
