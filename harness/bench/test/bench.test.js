// Unit tests of the bench's pure parts: latency histogram quantiles, the
// Markdown report. (The benchmark itself is `make bench`, never `make test`.)

import { test } from 'node:test'
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import assert from 'node:assert/strict'
import { bucketMs, quantiles } from '../src/fleet.js'
import { renderMarkdown } from '../src/report.js'
import { judgeShape } from '../src/sections/shape.js'
import { limitReason } from '../src/sections/fanout.js'
import { CoreBusyMeter, CpuMeter, OthersCpuMeter, StealMeter, coreTimes, machineTimes, othersSeconds, processTimes } from '@wsps/testkit/proc'

test('bucketMs matches the Go load generator buckets (0.1 ms below 100 ms, 1 ms above)', () => {
  assert.equal(bucketMs(0), 0.1)
  assert.equal(bucketMs(999), 100)
  assert.equal(bucketMs(1000), 101)
  assert.equal(bucketMs(1899), 1000)
})

test('quantiles walk the histogram in bucket order', () => {
  const h = new Map([[10, 50], [0, 49], [1500, 1]])
  const [p50, p99, p100] = quantiles(h, [0.5, 0.99, 1])
  assert.equal(p50, bucketMs(10))
  assert.equal(p99, bucketMs(10))
  assert.equal(p100, bucketMs(1500))
  assert.ok(Number.isNaN(quantiles(new Map(), [0.5])[0]))
})

test('the report renders a headline row per server with the ratio to the naive baseline', () => {
  const step = (delivered, cpu) => ({ rate: 1, published: 1, expected: delivered, delivered, entries: delivered, frames: delivered, quotesPerFrame: 1, p50: 1, p99: 2, p999: 3, cpu: { server: cpu, loadgen: 0.1, redis: 0.1, publisher: 0.1 }, steal: 0.125, rssMiB: 10, perCore: delivered / cpu, pass: true })
  const md = renderMarkdown({
    profile: 'test',
    startedAt: 'now',
    machine: { cpus: 2, model: 'x', memGiB: 1, node: 'v20', loadavgStart: [1, 1, 1], steal: 0.061, others: 0.234 },
    placement: { serverCore: '1', loadCore: '0' },
    params: { conns: 10, k: 2, symbols: 5, zipf: 1, storm: 10, stormProcs: 1, simConns: 1 },
    fanout: {
      wsps: { label: 'wsps gateway', steps: [step(5000, 0.5)], max: step(5000, 0.5), limit: 'p99', at50: step(2500, 0.2), saturated: step(6000, 1) },
      naive: { label: 'naive', steps: [step(1000, 0.5)], max: step(1000, 0.5), limit: 'p99', at50: step(500, 0.2), saturated: step(1200, 1) },
      centrifugo: { label: 'Centrifugo', steps: [step(2000, 0.5)], max: step(2000, 0.5), limit: 'p99', lowerBound: true, at50: step(1000, 0.2), saturated: step(2400, 1) }
    },
    fanoutShape: judgeShape({ usPerWrite: 10 }, { wsps: { maxSubsPerSymbol: 1150, conns: 2500 }, naive: { maxSubsPerSymbol: 1150, conns: 2500 } }),
    idle: {},
    proxy: {
      scenarios: [{ id: 'main', title: 'main layout', layout: 'proxy-alone', deliveries: 20_000, paths: ['direct', 'nginx'], reps: 1, mode: 'epoll' }],
      runs: [],
      summary: { main: { direct: { handshakesPerSec: 1000, p50: 1, p99: 2 }, nginx: { handshakesPerSec: 950, p50: 2, p99: 4, addedP50: 1, addedP99: 2 } } }
    },
    sim: null
  })
  assert.match(md, /\| wsps gateway \| 5,000 \| 5\.0× \| 2\.5× \|/)
  assert.match(md, /\| naive \| 1,000 \| 1\.0× \| 0\.5× \|/)
  assert.match(md, /\| Centrifugo \| ≥ 2,000 \| ≥ 2\.0× \| ≥ 1\.0× \|/, 'a max the load core may have limited is a lower bound')
  assert.match(md, /11\.5 ms pass for any server\. A server that batches writes each of the 2,500 readers once per pass, .*: 25\.0 ms at the floor\. Within half the 100 ms bound and a third of it: \*\*the table ranks the servers/)
  assert.match(md, /\| the fan-out's shape can rank servers \(at the floor: largest pass ≤ 50 ms, every reader ≤ 33 ms\) \| largest audience: 1,150 readers × 10\.00 µs = 11\.5 ms; every reader: 2,500 × 10\.00 µs = 25\.0 ms \| met \|/)
  assert.match(md, /CPU steal 6\.1% of the run/)
  assert.match(md, /processes the bench did not start used 23\.4% of a core over the run/)
  assert.match(md, /\| nginx overhead ≤ 10% \(proxy section, main layout\) \| handshake rate 5% lower through nginx; latency added at 20,000 deliveries\/s: p50 \+1\.0 ms, p99 \+2\.0 ms \| met \|/)
  assert.match(md, /## Proxies in front of one gateway/)
  assert.match(md, /\| CPU redis \| load core busy \| steal % \| others % \| hiccup ms \| RSS MiB \| ok \|\n\| ---(?: \| ---:){20} \| --- \|/, 'the ramp table has core, steal and others columns, and its separator as many cells')
  assert.match(md, /\| p999 \| p99 at sockets \| read wait p99 \| CPU server \|/, 'the load generator\'s share beside the latency it judges by')
  assert.match(md, /\| 0\.10 \| {2}\| 12\.5 \| {2}\| {2}\| 10 \| yes \|/, 'each step shows its steal (and no core share, others or hiccup: these steps measured none)')
})

test('machineTimes reads steal and the total of /proc/stat\'s cpu line; guest time is not counted twice', () => {
  const stat = 'cpu  100 5 50 800 10 1 2 32 7 0\ncpu0 50 2 25 400 5 0 1 16 0 0\nintr 1\n'
  assert.deepEqual(machineTimes(stat), { steal: 32, total: 1000 })
  assert.deepEqual(machineTimes('cpu  1 2 3 4\n'), { steal: 0, total: 10 }, 'an old kernel without the steal field')
  const share = new StealMeter().read()
  assert.ok(share >= 0 && share <= 1, `a share of the machine's time: ${share}`)
})

test('a failed step names what failed it, and other processes when they took more than a tenth of a core', () => {
  const failed = { p99: 130, keptUp: true, publisherKeptUp: true, loadBound: false, loadCore: 0.6, others: 0.05 }
  assert.equal(limitReason(failed), 'p99 130 ms > 100 ms')
  assert.equal(limitReason({ ...failed, others: 0.34 }), 'p99 130 ms > 100 ms; other processes used 34% of a core: the machine was not the bench\'s alone')
  assert.equal(limitReason({ ...failed, others: undefined }), 'p99 130 ms > 100 ms', 'a step from before the meter')
  assert.match(limitReason({ ...failed, loadBound: true, loadCore: 0.97 }), /load core 97% busy: the load generator may be the limit$/)
})

test('othersSeconds counts the CPU of processes outside ours between two snapshots, not kernel threads', () => {
  const snap = (/** @type {[number, number, number][]} */ rows) => new Map(rows.map(([pid, ppid, cpu]) => [pid, { ppid, cpu }]))
  const before = snap([[1, 0, 10], [2, 0, 5], [30, 2, 7], [100, 1, 3], [200, 1, 4], [201, 200, 1], [300, 1, 2]])
  const after = snap([[1, 0, 10.5], [2, 0, 6], [30, 2, 9], [100, 1, 3.25], [200, 1, 8], [201, 200, 3], [400, 1, 0.75]])
  // Ours: 200 and its child 201. Others: init +0.5, 100 +0.25, 400 (new) +0.75; 300 ended (missed).
  assert.equal(othersSeconds(before, after, new Set([200, 201])), 1.5)
  assert.equal(othersSeconds(before, after, new Set()), 1.5 + 4 + 2, 'with nothing ours, everything but kthreadd and its children')
})

test('OthersCpuMeter counts a busy process outside the roots, and not one inside them', async () => {
  const child = spawn(process.execPath, ['-e', 'const end = Date.now() + 5000; while (Date.now() < end);'], { stdio: 'ignore' })
  const exited = new Promise((resolve) => child.on('exit', resolve))
  const pid = /** @type {number} */ (child.pid)
  // Over one window, three meters: the child's own CPU, the others of roots
  // that do not hold it (a pid that is no process), and the others of roots
  // that do. The rest of the machine is the same for the last two. They
  // share the window's snapshots, as a bench step's meters do; a meter that
  // reads /proc itself measures the same child.
  const start = processTimes()
  const own = new CpuMeter(() => [pid], start)
  const without = new OthersCpuMeter(() => [1_000_000_000], start)
  const withIt = new OthersCpuMeter(() => [pid], start)
  const alone = new CpuMeter(() => [pid])
  await sleep(600)
  const end = processTimes()
  const [a, b, c, d] = [own.read(end), without.read(end), withIt.read(end), alone.read()]
  child.kill()
  await exited
  assert.ok(a > 0.2, `the child is busy: ${a} cores`)
  assert.ok(Math.abs(b - c - a) < 0.1, `the two differ by the child's CPU: ${b} - ${c} against ${a}`)
  assert.ok(Math.abs(d - a) < 0.1, `the meter without snapshots agrees: ${d} against ${a}`)
})

test('coreTimes reads one CPU\'s line: busy is user, nice, system, irq and softirq; not idle, iowait or steal', () => {
  const stat = 'cpu  100 5 50 800 10 1 2 32 7 0\ncpu0 50 2 25 400 5 0 1 16 0 0\ncpu1 50 3 25 400 5 1 1 16 7 0\nintr 1\n'
  assert.deepEqual(coreTimes('0', stat), { busy: 78, softirq: 1, total: 499 })
  assert.deepEqual(coreTimes('1', stat), { busy: 80, softirq: 1, total: 501 }, 'not cpu0 or the aggregate line; guest time is in user already')
  assert.deepEqual(coreTimes('7', stat), { busy: 0, softirq: 0, total: 0 }, 'a CPU the machine does not have')
  const { busy, softirq } = new CoreBusyMeter('0').read()
  assert.ok(busy >= 0 && busy <= 1 && softirq >= 0 && softirq <= busy, `shares of one core: ${busy}, ${softirq}`)
})

test('offered deliveries count each published quote times its symbol\'s subscribers; published is per tick', async () => {
  const { BenchRun } = await import('../src/bench-run.js')
  const { PROFILES } = await import('../src/profiles.js')
  const { goBin } = await import('../src/go-bin.js')
  const publisher = /** @type {any} */ ({
    lines: [
      { type: 'tick', t: 1000, published: 10, perSymbol: { 0: 6, 1: 4 } },
      { type: 'tick', t: 2000, published: 20, perSymbol: { 0: 10, 2: 10 } },
      { type: 'tick', t: 3000, published: 99, perSymbol: { 0: 99 } }
    ]
  })
  const run = new BenchRun({ P: PROFILES.smoke, bin: goBin(), serverCore: null, loadCore: null, runDir: '', redisUrl: '', redisPid: null, publisher })
  const subsPerSymbol = [5, 1, 0]
  // Ticks in (500, 2000]: (6*5 + 4*1) and (10*5 + 10*0) -> 34 and 50 per tick.
  assert.equal(run.offered(500, 2000, subsPerSymbol), 42)
  assert.equal(run.published(500, 2000), 15)
  assert.equal(run.offered(3000, 4000, subsPerSymbol), 0, 'an empty window offers nothing')
})

test('merged per-process summaries weigh by count; median of an even list takes the lower middle', async () => {
  const { median, mergeSummaries } = await import('../src/bench-run.js')
  const m = mergeSummaries([{ n: 3, p50: 10, p90: 20, p99: 30, max: 40 }, { n: 1, p50: 2, p90: 4, p99: 6, max: 100 }])
  assert.deepEqual(m, { n: 4, p50: 8, p90: 16, p99: 24, max: 100 })
  assert.equal(median([4, 1, 3, 2]), 2)
  assert.ok(Number.isNaN(median([])))
})

test('the hot-symbol sweep renders p99 per connection count, server and worker count (the floor among them), and the targets judge the top count', () => {
  const step = (/** @type {number} */ delivered, /** @type {number} */ p99) => ({ rate: 1, published: 1, expected: delivered, delivered, entries: delivered, frames: delivered, quotesPerFrame: 1, p50: 1, p99, p999: p99, gaps: 0, cpu: { server: 0.5, loadgen: 0.1, redis: 0.1, publisher: 0.1 }, rssMiB: 10, perCore: delivered * 2, pass: true })
  const hotAt = (/** @type {number} */ conns, /** @type {number} */ p1, /** @type {number} */ p2) => ({
    conns,
    servers: {
      wsps: { workers: 1, connected: conns, ...step(conns * 4, p1) },
      'wsps-2w': { workers: 2, connected: conns, ...step(conns * 4, p2) },
      floor: { workers: 1, connected: conns, ...step(conns * 4, 45), cpu: { server: 0.2, loadgen: 0.1, redis: 0.1, publisher: 0.1 } }
    }
  })
  const md = renderMarkdown({
    profile: 'test',
    startedAt: 'now',
    machine: { cpus: 2, model: 'x', memGiB: 1, node: 'v24', loadavgStart: [1, 1, 1] },
    placement: { serverCore: '1', loadCore: '0' },
    params: { conns: 10, k: 2, symbols: 5, zipf: 1, storm: 10, stormProcs: 1, saturationDeliveries: 1000 },
    fanout: {
      wsps: { label: 'wsps gateway', steps: [step(13_000, 20)], max: step(13_000, 20), limit: 'p99', at50: step(6500, 40), saturated: step(20_000, 500) },
      'wsps-distinct': { label: 'wsps distinct', steps: [step(3000, 20)], max: step(3000, 20), limit: 'p99', at50: null, saturated: null },
      naive: { label: 'naive', steps: [step(1000, 20)], max: step(1000, 20), limit: 'p99', at50: null, saturated: step(1200, 500) }
    },
    hot: { shape: { symbols: 5, zipf: 2, perConnRate: 4.2, cores2w: '1,0' }, labels: { floor: 'bare write loop (Go, 1 thread): the floor' }, levels: [hotAt(2500, 30, 20), hotAt(10_000, 90, 60)] },
    idle: {},
    proxy: null,
    sim: null
  })
  // server µs per delivery / per frame: 0.5 cores over 40,000/s
  assert.match(md, /\| 10,000 \| wsps \| 1 \| 10,000 \| 40,000 \(40,000\) \| 1\.0 \| 1\.0 \/ 90\.0 \/ 90\.0 \| 0\.50 \| 12\.5 \/ 12\.5 \|/)
  assert.match(md, /\| steal % \| hiccup ms \| gaps \/ ticks lost \(distinct\) \|\n\| ---:(?: \| ---:| \| ---){11} \|/, 'the hot table has hiccup and distinct-loss columns, and as many separator cells')
  assert.match(md, /\| hot symbols, merge: gateway p99 within 10% of the floor's \| 10,000 connections: p99 90\.0 ms vs the floor's 45\.0 ms \(2\.00×\) \| not met \|/)
  assert.match(md, /\| 10,000 \| wsps-2w \| 2 \| 5,000 \|/)
  assert.match(md, /\| 2,500 \| floor \| 1 \| 2,500 \| 10,000 \(10,000\) \| 1\.0 \| 1\.0 \/ 45\.0 \/ 45\.0 \| 0\.20 \| 20\.0 \/ 20\.0 \|/)
  assert.match(md, /\*\*floor\*\*: bare write loop \(Go, 1 thread\): the floor/)
  assert.match(md, /\| \(no target\) the floor at the same load: .* \| 10,000 connections, 40,000 deliveries\/s: p99 45\.0 ms, 5\.0 µs server CPU per delivery \(wsps: 12\.5\) \| \|/)
  assert.match(md, /\| merge mode ≥ 12× naive at p99 ≤ 100 ms \| .*13\.0× \| met \|/)
  assert.match(md, /\| distinct mode ≥ 12× naive, every tick in order \| .*3\.0×; seq gaps over its ramp: 0, ticks lost: n\/a \| not met \|/, 'steps of a load generator that did not count ticks lost: n/a')
  assert.match(md, /\| hot symbols, one core: p99 ≤ 100 ms \| 10,000 connections, 40,000 deliveries\/s: p99 90\.0 ms \| met \|/)
  assert.match(md, /\| hot symbols, 2 workers: about half of 1 worker's p99 \| .*\(0\.67×;.* \| not met \|/)
  assert.match(md, /\| p99 ≤ 50 ms at 50% of the latency-bounded max \| 40\.0 ms/)
})

test('the fan-out shape ranks servers only when, at the floor, its largest pass is within half the latency bound and a pass over every reader within a third', () => {
  const ok = judgeShape({ usPerWrite: 10 }, { a: { maxSubsPerSymbol: 1150, conns: 2500 }, b: { maxSubsPerSymbol: 900, conns: 2480 } })
  assert.equal(ok.largestAudience, 1150)
  assert.equal(ok.largestPassMs, 11.5)
  assert.equal(ok.everyReaderPassMs, 25)
  assert.equal(ok.ranking, true)
  // 5,000 readers at 10.3 µs: a batching server's every pass is 51.5 ms.
  const full = judgeShape({ usPerWrite: 10.3 }, { a: { maxSubsPerSymbol: 1042, conns: 5000 } })
  assert.equal(full.everyReaderPassMs, 51.5)
  assert.equal(full.ranking, false)
  assert.match(full.verdict, /the pass over every reader exceeds a third/)
  assert.equal(full.tooLong, 'everyReader')
  // 5,000 readers at 9.3 µs: within half the bound, but not a third.
  assert.equal(judgeShape({ usPerWrite: 9.3 }, { a: { maxSubsPerSymbol: 1042, conns: 5000 } }).ranking, false)
  // The old shape: 10,000 connections x 20 of 2,000 symbols at Zipf 1, ~6,800 readers of the hottest.
  const old = judgeShape({ usPerWrite: 17 }, { a: { maxSubsPerSymbol: 6800 } })
  assert.equal(old.largestPassMs, 115.6)
  assert.equal(old.ranking, false)
  assert.match(old.verdict, /cannot rank servers/)
  assert.equal(old.tooLong, 'largest')
})

test('over the bound: the clients\' share from the loadgen histogram, the gateway\'s from two scrapes of its own histogram', async () => {
  const { shareOver, serverShareOver } = await import('../src/bench-run.js')
  // Buckets 0..999 are 0.1 ms wide; 1000 and up 1 ms from 100 ms.
  assert.equal(shareOver(new Map([[10, 90], [999, 5], [1000, 5]]), 100), 0.05, 'bucket 999 ends at 100 ms (not over); 1000 ends at 101 ms')
  assert.equal(shareOver(new Map(), 100), null)
  const scrape = (/** @type {number} */ under, /** @type {number} */ all) => ({
    'wsps_gateway_publish_to_send_seconds_bucket{le="0.05"}': under - 1,
    'wsps_gateway_publish_to_send_seconds_bucket{le="0.1"}': under,
    'wsps_gateway_publish_to_send_seconds_bucket{le="+Inf"}': all,
    wsps_gateway_publish_to_send_seconds_count: all
  })
  assert.equal(serverShareOver(scrape(100, 100), scrape(190, 200), 100), 0.1, '10 of the window\'s 100 samples over 100 ms')
  assert.equal(serverShareOver(scrape(5, 5), scrape(5, 5), 100), null, 'no samples in the window (merge mode writes none)')
})

test('a gateway histogram\'s quantile over the samples between two scrapes, linear within its bucket', async () => {
  const { gatewayQuantile } = await import('../src/bench-run.js')
  const h = 'wsps_gateway_receive_lag_seconds'
  const scrape = (/** @type {number[]} */ [le10, le20, inf]) => ({ [`${h}_bucket{le="0.01",node="a"}`]: le10, [`${h}_bucket{le="0.02",node="a"}`]: le20, [`${h}_bucket{le="+Inf",node="a"}`]: inf })
  // 100 samples in the window: 50 under 10 ms, 50 between 10 and 20 ms.
  const before = scrape([10, 10, 10])
  assert.equal(gatewayQuantile(before, scrape([60, 110, 110]), h, 0.5), 10)
  assert.equal(gatewayQuantile(before, scrape([60, 110, 110]), h, 0.99), 19.8)
  assert.equal(gatewayQuantile(before, scrape([60, 100, 110]), h, 0.99), 20, 'past the last finite bucket: its edge')
  assert.equal(gatewayQuantile(before, before, h, 0.99), null, 'no samples in the window')
  assert.equal(gatewayQuantile({}, {}, h, 0.99), null, 'no such histogram (a server without it)')
})
