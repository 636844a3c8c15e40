#!/usr/bin/env node
// Interleaved low-load latency of several servers (each holding its own
// fleet at once, measured in turn, 5 rounds of 8 s): for effects too small
// for the fan-out ramp, such as the heartbeat pass. Used for
// docs/benchmarks/experiments.md#heartbeat-2026-11-22 (commit d2be303).
//
//   node harness/bench/src/lowload.js wsps,naive [conns=10000] [publish rate=30]
//   (variants of the gateway through WSPS_BENCH_VARIANTS, see servers.js)

import { tmpdir } from 'node:os'
import { sleep, startRedis } from '@wsps/testkit'
import { SERVERS } from './servers.js'
import { start } from './spawn.js'
import { startFleet, quantiles } from './fleet.js'
import { goBin } from './go-bin.js'
import { CpuMeter } from '@wsps/testkit/proc'
const LOADGEN = process.env.WSPS_BENCH_LOADGEN ?? goBin().loadgen
const names = (process.argv[2] ?? 'wsps,naive').split(',')
const conns = Number(process.argv[3] ?? 10000)
const rate = Number(process.argv[4] ?? 30)
const r = await startRedis()
const pub = start(process.execPath, [new URL('./publisher.js', import.meta.url).pathname, `--redis=${r.url}`, '--symbols=2000'], { core: '0', name: 'pub' })
await pub.waitLine((l) => l.type === 'ready', 10000)
const subjects = []
for (const name of names) {
  const prefix = `h${name.replace(/\W/g, '')}`
  pub.send({ cmd: 'setLast', prefix }); await sleep(500)
  const srv = await SERVERS[name].start({ redisUrl: r.url, core: '1', runDir: tmpdir(), prefix })
  const fleet = await startFleet({ bin: LOADGEN, adapter: srv.adapter, url: srv.url, conns, procs: 4, symbols: 2000, k: 20, zipf: 1, core: '0', maxSeconds: 400 })
  subjects.push({ name, prefix, srv, fleet })
}
/** @type {Record<string, {p50: number, p99: number, p999: number, cpu: number, delivered: number}[]>} */
const res = Object.fromEntries(names.map((n) => [n, []]))
for (let round = 0; round < 5; round++) {
  for (const x of subjects) {
    pub.send({ cmd: 'rate', rate, prefix: x.prefix }); await sleep(1500)
    const m = new CpuMeter(x.srv.roots); const t0 = Date.now(); await sleep(8000); const t1 = Date.now(); const cpu = m.read()
    pub.send({ cmd: 'rate', rate: 0, prefix: x.prefix })
    await x.fleet.tickedAfter(t1)
    const w = x.fleet.window(t0, t1)
    const [p50, p99, p999] = quantiles(w.hist, [0.5, 0.99, 0.999])
    res[x.name].push({ p50, p99, p999, cpu: +cpu.toFixed(3), delivered: Math.round(w.covered / (w.ticks / 4)) })
    console.log(x.name, JSON.stringify(res[x.name].at(-1)))
    await sleep(1000)
  }
}
for (const x of subjects) { await x.fleet.stop(); await x.srv.stop() }
await pub.stop('SIGTERM', { graceMs: 3000, killAfterMs: 3000 }); await r.close()
const med = (/** @type {number[]} */ a) => a.sort((p, q) => p - q)[Math.floor(a.length / 2)]
for (const n of names) console.log('median', n, 'p50', med(res[n].map((x) => x.p50)).toFixed(1), 'p99', med(res[n].map((x) => x.p99)).toFixed(1), 'cpu', med(res[n].map((x) => x.cpu)))
process.exit(0)
