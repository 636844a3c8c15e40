// nginx (the local ingress stand-in, rendered from infra/local's template)
// in front of one gateway, against the gateway direct.

import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { freePort, httpOk, sleep, waitFor, writeNginxConf } from '@wsps/testkit'
import { SERVERS } from '../servers.js'
import { startFleet } from '../fleet.js'
import { start } from '../spawn.js'
import { log, median, mergeSummaries, round } from '../bench-run.js'

/** @param {import('../bench-run.js').BenchRun} run */
export async function nginxVsDirect (run) {
  log('nginx vs direct')
  await run.setLast()
  const srv = await SERVERS.wsps.start({ redisUrl: run.redisUrl, core: run.serverCore, runDir: run.runDir })
  const nginxPort = await freePort()
  const dir = join(run.runDir, 'nginx')
  // The template `make up` renders: the bench measures the settings users get.
  const conf = writeNginxConf(dir, { listen: [`127.0.0.1:${nginxPort}`], upstreams: [`127.0.0.1:${srv.port}`] })
  const nginxBin = ['/usr/sbin/nginx', 'nginx'].find((b) => { try { execFileSync(b, ['-v'], { stdio: 'ignore' }); return true } catch { return false } })
  if (!nginxBin) throw new Error('nginx not installed (make deps)')
  const nginx = start(nginxBin, ['-p', join(dir, 'nginx'), '-c', conf], { core: run.loadCore, name: 'nginx', stdin: false })
  await waitFor(() => httpOk(`http://127.0.0.1:${nginxPort}/healthz`), { timeout: 10_000, message: 'nginx' })
  const runs = []
  try {
    for (let rep = 0; rep < run.P.nginxReps; rep++) {
      for (const via of ['direct', 'nginx']) {
        const url = via === 'direct' ? srv.url : `ws://127.0.0.1:${nginxPort}`
        const fleet = await startFleet({
          bin: run.bin.loadgen, adapter: 'wsps', url, conns: run.P.nginxConns, procs: 2,
          symbols: run.P.symbols, k: run.P.k, zipf: run.P.zipf, core: run.loadCore, maxSeconds: 300, concurrency: 64, seed: 11 + rep
        })
        const seconds = Math.max(...fleet.readies.map((r) => r.elapsedMs)) / 1000
        const hs = mergeSummaries(fleet.readies.map((r) => r.handshakeMs))
        const rate = run.P.nginxDeliveries / (fleet.totalSubs / run.P.symbols)
        const s = await run.step({ fleet, roots: via === 'direct' ? srv.roots : () => [...srv.roots(), nginx.pid], rate, settleMs: run.P.settleMs, measureMs: run.P.measureMs })
        run.setRate(0)
        runs.push({ via, rep, conns: fleet.conns, failed: fleet.failed, connectSeconds: round(seconds, 2), handshakesPerSec: Math.round(fleet.conns / seconds), handshakeMs: hs, step: s })
        log(`  ${via}: ${Math.round(fleet.conns / seconds)} handshakes/s (p50 ${hs.p50} p99 ${hs.p99} ms); at ${s.delivered} deliveries/s p50 ${s.p50} p99 ${s.p99} ms`)
        await fleet.stop()
        await sleep(1500)
      }
    }
  } finally {
    await nginx.stop('SIGTERM', { killAfterMs: 3000 })
    await srv.stop()
  }
  const med = (/** @type {string} */ via, /** @type {(r: any) => number} */ f) => median(runs.filter((r) => r.via === via).map(f))
  const summary = {}
  for (const via of ['direct', 'nginx']) {
    // @ts-ignore
    summary[via] = {
      handshakesPerSec: med(via, (r) => r.handshakesPerSec),
      handshakeP50: med(via, (r) => r.handshakeMs.p50),
      handshakeP99: med(via, (r) => r.handshakeMs.p99),
      p50: med(via, (r) => r.step.p50),
      p99: med(via, (r) => r.step.p99),
      delivered: med(via, (r) => r.step.delivered)
    }
  }
  return { runs, summary }
}
