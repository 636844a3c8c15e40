// results.json -> results.md: one run's report (the README's table is the
// median of three runs' cells: docs/benchmarks/README.md).

import { booksSection } from './sections/books-report.js'
import { compressionSection } from './sections/compression.js'
import { proxySection } from './sections/proxy-report.js'

const f = (/** @type {number | null | undefined} */ x, d = 0) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : Number(x).toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }))
/** A share (0..1: CPU steal, other processes' CPU) as a percentage cell; empty where a run did not measure it. */
const shareCell = (/** @type {number | undefined} */ x) => (x === undefined ? '' : f(x * 100, 1))
/** A core's busy share (softirq included) as a percentage; empty when not measured. */
const coreCell = (/** @type {number | null | undefined} */ x) => (x === undefined || x === null ? '' : `${f(x * 100)}%`)
/** A step's longest host stall (ms) as a cell; empty where a run had no meter. */
const hiccupCell = (/** @type {number | null | undefined} */ x) => (x === undefined ? '' : f(x, 1))
const pct = (/** @type {number} */ x) => `${Math.round(x * 100)}%`
/** Server CPU microseconds per item: cores busy / items per second. */
const usPer = (/** @type {number} */ cores, /** @type {number} */ perSec) => (perSec > 0 ? f(cores * 1e6 / perSec, 1) : 'n/a')

/** @param {any} r */
export function renderMarkdown (r) {
  const out = []
  out.push('# wsps benchmark results', '')
  out.push(`Profile \`${r.profile}\`, run ${r.startedAt}${r.durationSeconds ? ` (${Math.round(r.durationSeconds / 60)} min)` : ''} on ${r.machine.cpus} cores (${r.machine.model}), ${r.machine.memGiB} GiB, Node ${r.machine.node}.`)
  out.push(`Servers pinned to core ${r.placement.serverCore ?? '-'}; load generator, Redis and publisher on core ${r.placement.loadCore ?? '-'}. Load average at start ${r.machine.loadavgStart.map((/** @type {number} */ x) => x.toFixed(1)).join(' ')}${r.machine.loadavgEnd ? `, at end ${r.machine.loadavgEnd.map((/** @type {number} */ x) => x.toFixed(1)).join(' ')}` : ''}${r.machine.steal !== undefined ? `; CPU steal ${shareCell(r.machine.steal)}% of the run (time this VM's CPUs waited for the host: it stalls every process at once; per step in the ramp tables)` : ''}${r.machine.others !== undefined ? `; processes the bench did not start used ${shareCell(r.machine.others)}% of a core over the run (a test run or a build beside the bench shows here; per step in the fan-out table)` : ''} (the machine is shared: compare ratios within this run, not absolute numbers across runs).`)
  const hic = r.machine.hiccup
  if (hic) {
    const cores = hic.cores.map((/** @type {any} */ c) => `core ${c.core}: max ${f(c.maxMs, 1)}, p99 ${f(c.p99Ms, 1)}`).join('; ')
    out.push('', `Host hiccup meter (one thread per core sleeping 1 ms${hic.realtime ? ' at real-time priority, so it does not see the servers\' own load' : `, at NORMAL priority: real-time was refused (${hic.refusals.join('; ')}), so it also sees the load of its core`}): longest late wake-up per 100 ms interval over the run: ${cores} ms. Each step's \`hiccup ms\` is the longest such stall on any core in its window: a failed window with a small one failed for the server or its neighbours on the machine, not for the platform (README.md, "Host stalls").`)
  }
  out.push('')
  const p = r.params
  const fan = r.fanout ?? {}
  const names = Object.keys(fan)
  if (names.length) {
    out.push('## Fan-out: latency-bounded max quote updates delivered per second (one process)', '')
    out.push(`${f(p.fanConns ?? p.conns)} connections, each subscribed to ${p.fanK ?? p.k} of ${f(p.fanSymbols ?? p.symbols)} symbols (Zipf ${p.fanZipf ?? p.zipf} popularity), one Redis publisher raising the rate until p99 publish→client latency > 100 ms or deliveries fall below 85% of what was published × subscribers.`, '')
    const sh = r.fanoutShape
    if (sh?.verdict) {
      // Runs before the every-reader pass was judged have no such field.
      const every = sh.everyReaderPassMs === undefined ? '' : ` A server that batches writes each of the ${f(sh.connections)} readers once per pass, and near its bound every reader has something in every pass: ${f(sh.everyReaderPassMs, 1)} ms at the floor.`
      out.push(`Shape check: the floor (a bare write loop on the server core) pays ${f(sh.usPerWrite, 2)} µs of CPU per write; this shape's largest audience is ${f(sh.largestAudience)} readers, so one publish of the hottest symbol is a ${f(sh.largestPassMs, 1)} ms pass for any server.${every} ${sh.ranking ? 'Within half the 100 ms bound and a third of it: **the table ranks the servers.**' : `**Over ${sh.tooLong === 'everyReader' ? 'a third of' : 'half'} the 100 ms bound: this table is not a ranking** (the bound measures the machine's cost per write, not the server).`}`, '')
    } else if (sh?.error) out.push(`Shape check failed: ${sh.error}`, '')
    out.push('How deliveries are counted: **merge** (wsps default) counts a merged delta for every tick it carries (the client ends in the same state as if it had got each tick: state-equivalent); **distinct** (wsps `mode: distinct`) counts tick by tick and a step fails on any seq gap or tick lost; the other servers send every tick as its own message. A figure marked ≥ is a lower bound: the load core (load generator, Redis, publisher) was over 85% busy at it or at the step that failed, so the load generator may have been the limit.', '')
    const modes = names.filter((n) => fan[n].loadgenMode).map((n) => `${n}: ${fan[n].loadgenMode}`)
    if (modes.length) out.push(`The load generator's client per server (\`loadgen -mode\`): ${modes.join(', ')}. The epoll mode (event loops over non-blocking sockets) costs the load core far less per frame than a goroutine and a gorilla connection each; it speaks the protocols whose client only subscribes, so Centrifugo and Socket.IO (handshakes, pings to answer) get the goroutine mode. Either way the server core is measured alone.`, '')
    const naive = fan.naive?.max?.delivered
    const cf = fan.centrifugo?.max?.delivered
    out.push('| server | max deliveries/s (p99 ≤ 100 ms) | vs naive | vs Centrifugo | quotes/frame | server CPU (cores) | server RSS | load core | limit hit | p50 / p99 / p999 at 50% of max (ms) | saturated: deliveries/s | per server core-second | vs naive |')
    out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |')
    const naiveSat = fan.naive?.saturated?.perCore
    /** @type {string[]} */
    const notes = []
    for (const n of names) {
      const x = fan[n]
      const sat = x.saturated
      const satCells = `${sat ? f(sat.delivered) : 'n/a'} | ${sat ? f(sat.perCore) : 'n/a'} | ${sat && naiveSat ? `${(sat.perCore / naiveSat).toFixed(1)}×` : 'n/a'}`
      if (x.error || !x.max) {
        if (x.partial) notes.push(`${x.label}: ${x.partial}.`)
        out.push(`| ${x.label ?? n} | none passed | | | | | | | ${x.error ?? x.limit ?? ''} | | ${satCells} |`)
        continue
      }
      const a = x.at50
      if (x.partial) notes.push(`${x.label}: ${x.partial}.`)
      if (x.left) notes.push(`${x.label}: left the run (${x.left}), so that its backlog would not take the server core from the others; no later steps.`)
      const ge = x.lowerBound ? '≥ ' : ''
      out.push(`| ${x.label} | ${ge}${f(x.max.delivered)} | ${naive ? `${ge}${(x.max.delivered / naive).toFixed(1)}×` : 'n/a'} | ${cf ? `${ge}${(x.max.delivered / cf).toFixed(1)}×` : 'n/a'} | ${f(x.max.quotesPerFrame, 1)} | ${f(x.max.cpu.server, 2)} | ${f(x.max.rssMiB)} MiB | ${x.max.loadCore === undefined ? 'n/a' : pct(x.max.loadCore)} | ${x.limit} | ${a ? `${f(a.p50, 1)} / ${f(a.p99, 1)} / ${f(a.p999, 1)}` : 'n/a'} | ${satCells} |`)
    }
    out.push('')
    for (const n of notes) out.push(`Note: ${n}`, '')
    out.push('Every step of the ramps (delivered counts every published update whose content reached the client: a wsps delta merged under load counts for the updates it carries; `core busy` is the whole core\'s busy share, softirq included: the kernel\'s loopback TCP work for a process is not always in its own CPU time; p50/p99/p999 are to the load generator\'s reads, which judge the step; `p99 at sockets` is to the kernel\'s receive timestamp of each read instead, and `read wait p99` how long the read\'s bytes had sat in the socket: the load generator\'s own lag, epoll mode only; `others %`: the CPU of processes the bench did not start, in % of a core):', '')
    out.push('| server | publish/s | expected/s | delivered/s | frames/s | q/frame | p50 | p99 | p999 | p99 at sockets | read wait p99 | CPU server | server core busy | per core-s | CPU loadgen | CPU redis | load core busy | steal % | others % | hiccup ms | RSS MiB | ok |')
    out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
    for (const n of names) {
      for (const s of fan[n].steps ?? []) {
        out.push(`| ${n}${s.refine ? ' (refine)' : ''}${s.retry ? ' (again)' : ''}${s.saturation ? ' (saturation)' : ''} | ${f(s.published)} | ${f(s.expected)} | ${f(s.delivered)} | ${f(s.frames)} | ${f(s.quotesPerFrame, 1)} | ${f(s.p50, 1)} | ${f(s.p99, 1)} | ${f(s.p999, 1)} | ${f(s.socketP99, 1)} | ${f(s.readWaitP99, 1)} | ${f(s.cpu.server, 2)} | ${coreCell(s.cores?.server)} | ${f(s.perCore)} | ${f(s.cpu.loadgen, 2)} | ${f(s.cpu.redis, 2)} | ${coreCell(s.cores?.load)} | ${shareCell(s.steal)} | ${shareCell(s.others)} | ${hiccupCell(s.hiccupMs)} | ${f(s.rssMiB)} | ${s.pass ? 'yes' : 'no'} |`)
      }
    }
    out.push('')
  }
  const hot = r.hot
  if (Array.isArray(hot?.levels) && hot.levels.length) {
    const sh = hot.shape
    out.push('## Hot symbols: p99 against connections, one process vs WSPS_WORKERS=2 vs the floor', '')
    out.push(`Each connection subscribed to 1 of ${sh.symbols} symbols (Zipf ${sh.zipf}: most on the first); each of them published ${f(sh.perConnRate, 1)} times a second, so every connection is offered ${f(sh.perConnRate, 1)} deliveries/s (issue #16's reference: 10,000 connections at ~42k deliveries/s). One worker runs on the server core; two workers on cores ${sh.cores2w ?? '(unpinned)'}${sh.cores2w ? ', one of them shared with the load generator' : ''}.`, '')
    if (hot.labels?.floor) out.push(`**floor**: ${hot.labels.floor}, on the server core, fed by the same publisher: one pre-built frame per quote, one write() per subscriber, nothing else. Its p99 is about the least this machine allows at that count; its µs per write is the kernel's price of one delivery.`, '')
    out.push('| connections | server | workers | per process | delivered/s (of offered) | q/frame | p50 / p99 / p999 (ms) | server CPU (cores) | server µs per delivery / per frame | steal % | hiccup ms | gaps / ticks lost (distinct) |')
    out.push('| ---: | --- | ---: | ---: | --- | ---: | --- | ---: | --- | ---: | ---: | --- |')
    for (const l of hot.levels) {
      for (const [name, x] of Object.entries(l.servers)) {
        const lead = `| ${f(l.conns)} | ${name} | ${x.workers} |`
        if (x.error) { out.push(`${lead} | failed: ${x.error} | | | | | | | |`); continue }
        out.push(`${lead} ${f(x.connected / x.workers)} | ${f(x.delivered)} (${f(x.expected)}) | ${f(x.quotesPerFrame, 1)} | ${f(x.p50, 1)} / ${f(x.p99, 1)} / ${f(x.p999, 1)} | ${f(x.cpu.server, 2)} | ${usPer(x.cpu.server, x.delivered)} / ${usPer(x.cpu.server, x.frames)} | ${shareCell(x.steal)} | ${hiccupCell(x.hiccupMs)} | ${x.strict ? `${f(x.gaps)} / ${f(x.ticksLost)}` : ''} |`)
      }
    }
    out.push('')
  }
  const idle = r.idle ?? {}
  if (Object.keys(idle).length) {
    out.push('## Connection storm and idle capacity', '')
    out.push(`${f(p.storm)} clients connect at once (${p.stormProcs} load generator processes, 128 handshakes in flight each), each subscribes to ${p.k} symbols and waits for their snapshot; then they sit idle.`, '')
    out.push('| server | storm: all snapshotted in | conn/s | handshake p50 / p99 (ms) | ready p99 (ms) | server CPU in storm | RSS per idle subscribed conn | held (tried) |')
    out.push('| --- | ---: | ---: | --- | ---: | ---: | ---: | --- |')
    for (const [n, x] of Object.entries(idle)) {
      if (x.error) { out.push(`| ${n} | failed: ${x.error} | | | | | | |`); continue }
      out.push(`| ${x.label} | ${f(x.stormSeconds, 1)} s | ${f(x.stormRatePerSec)} | ${f(x.handshakeMs.p50, 1)} / ${f(x.handshakeMs.p99, 1)} | ${f(x.readyMs.p99)} | ${f(x.stormServerCpu, 2)} | ${f(x.rssPerConnBytes / 1024, 1)} KiB | ${f(x.held)} (${f(x.tried)}) |`)
    }
    out.push('')
  }
  out.push(...proxySection(r.proxy, p))
  if (Array.isArray(r.sim)) {
    out.push('## Capacity simulation: several gateway processes on this machine', '')
    out.push(`${f(p.simConns)} connections split evenly, the same publish rate; all gateways share one core (see docs/capacity.md).`, '')
    out.push('| processes | Redis channels / process | Redis egress msgs/s | quotes in / process / s | delivered/s | p50 / p99 (ms) | CPU gateways | CPU redis |')
    out.push('| ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |')
    for (const x of r.sim) out.push(`| ${x.processes} | ${f(x.redisChannelsPerProcess)} | ${f(x.redisEgressPerSec)} | ${f(x.gatewayQuotesInPerSecPerProcess)} | ${f(x.delivered)} | ${f(x.p50, 1)} / ${f(x.p99, 1)} | ${f(x.cpu.gateways, 2)} | ${f(x.cpu.redis, 2)} |`)
    out.push('')
  }
  if (Array.isArray(r.ingest)) {
    out.push('## Ingest: the publish API', '')
    out.push(`One push-only quote-fetcher on the server core takes \`POST /v1/quotes\` (${p.ingestConcurrency} requests in flight) for ${p.ingestSymbols} symbols that one client watches at a gateway; after each run the client must hold the last quote of every symbol (docs/feeding.md). Target: ≥ 50,000 quotes/s per fetcher core with batches of 100 or more.`, '')
    out.push('| quotes / request | requests | quotes/s accepted | fetcher CPU (cores) | quotes/s per core | client caught up (ms) |')
    out.push('| ---: | ---: | ---: | ---: | ---: | ---: |')
    for (const x of r.ingest) out.push(`| ${f(x.batch)} | ${f(x.requests)} | ${f(x.acceptedPerSec)} | ${f(x.fetcherCores, 2)} | ${f(x.acceptedPerSecPerCore)} | ${f(x.clientCaughtUpMs)} |`)
    out.push('')
  } else if (r.ingest?.error) {
    out.push('## Ingest: the publish API', '', `failed: ${r.ingest.error}`, '')
  }
  out.push(...historySection(r.history, p))
  out.push(...compressionSection(r.compression))
  out.push(...booksSection(r.books ? [r.books] : []))
  out.push(...targets(r))
  out.push('Raw numbers: [results.json](results.json). Method: [README.md](README.md). Profiles, causes and proposed gateway changes: [analysis.md](analysis.md). Scale model: [../capacity.md](../capacity.md).', '')
  return out.join('\n')
}

/**
 * The issue's targets, judged on this run.
 * @param {any} r
 * @returns {string[]}
 */
function targets (r) {
  const fan = r.fanout ?? {}
  const w = fan.wsps
  const n = fan.naive
  if (!w) return []
  const rows = []
  const verdict = (/** @type {boolean | null} */ ok) => (ok === null ? 'not measurable in this run' : ok ? 'met' : 'not met')
  const ratio = (/** @type {number | undefined} */ a, /** @type {number | undefined} */ b) => (a && b ? a / b : null)
  const times = (/** @type {number | null} */ x) => (x === null ? 'n/a (a server passed no step)' : `${x.toFixed(1)}×`)
  const maxRatio = ratio(w.max?.delivered, n?.max?.delivered)
  const sh = r.fanoutShape
  if (sh?.verdict) {
    // Runs before the every-reader pass was judged have neither it nor the limits.
    const judged = sh.everyReaderPassMs !== undefined
    const limits = judged ? `largest pass ≤ ${f(sh.largestPassMaxMs)} ms, every reader ≤ ${f(sh.everyReaderPassMaxMs, 0)} ms` : `largest pass ≤ ${f(sh.boundMs / 2)} ms`
    const every = judged ? `; every reader: ${f(sh.connections)} × ${f(sh.usPerWrite, 2)} µs = ${f(sh.everyReaderPassMs, 1)} ms` : ''
    rows.push(`| the fan-out's shape can rank servers (at the floor: ${limits}) | largest audience: ${f(sh.largestAudience)} readers × ${f(sh.usPerWrite, 2)} µs = ${f(sh.largestPassMs, 1)} ms${every} | ${verdict(sh.ranking)} |`)
  }
  rows.push(`| merge mode ≥ 12× naive at p99 ≤ 100 ms | latency-bounded max ${f(w.max?.delivered)} vs ${f(n?.max?.delivered)} deliveries/s: ${times(maxRatio)} | ${verdict(maxRatio === null ? null : maxRatio >= 12)} |`)
  const d = fan['wsps-distinct']
  if (d) {
    const dRatio = ratio(d.max?.delivered, n?.max?.delivered)
    const ramp = (d.steps ?? []).filter((/** @type {any} */ s) => !s.saturation)
    const gaps = ramp.reduce((/** @type {number} */ a, /** @type {any} */ s) => a + (s.gaps ?? 0), 0)
    // Runs before the load generator counted ticks lost have no such field: say n/a, not 0.
    const lost = ramp.some((/** @type {any} */ s) => s.ticksLost !== undefined) ? ramp.reduce((/** @type {number} */ a, /** @type {any} */ s) => a + (s.ticksLost ?? 0), 0) : undefined
    rows.push(`| distinct mode ≥ 12× naive, every tick in order | latency-bounded max ${f(d.max?.delivered)} deliveries/s (counted tick by tick): ${times(dRatio)}; seq gaps over its ramp: ${f(gaps)}, ticks lost: ${f(lost)} | ${verdict(dRatio === null ? null : dRatio >= 12 && d.max.gaps === 0 && !d.max.ticksLost)} |`)
  }
  for (const other of ['centrifugo', 'socketio', 'pushpin']) {
    const o = fan[other]
    if (!o) continue
    for (const [mode, x] of [['merge', w], ['distinct', d]]) {
      if (!x) continue
      const lb = ratio(x.max?.delivered, o.max?.delivered)
      const rr = ratio(x.saturated?.perCore, o.saturated?.perCore)
      rows.push(`| ${mode} ahead of ${o.label} | latency-bounded max: ${times(lb)}; per core-second at saturation: ${rr === null ? 'n/a' : `${rr.toFixed(1)}×`} | ${verdict(lb === null ? (rr === null ? null : rr > 1) : lb > 1)} |`)
    }
  }
  const levels = Array.isArray(r.hot?.levels) ? r.hot.levels : []
  const top = levels[levels.length - 1]
  const one = top?.servers?.wsps
  const two = top?.servers?.['wsps-2w']
  if (one && !one.error) {
    rows.push(`| hot symbols, one core: p99 ≤ 100 ms | ${f(top.conns)} connections, ${f(one.delivered)} deliveries/s: p99 ${f(one.p99, 1)} ms | ${verdict(one.p99 <= 100)} |`)
    if (two && !two.error) {
      const half = two.p99 / one.p99
      rows.push(`| hot symbols, 2 workers: about half of 1 worker's p99 | ${f(top.conns)} connections: p99 ${f(two.p99, 1)} ms vs ${f(one.p99, 1)} ms (${half.toFixed(2)}×; the second core is shared with the load generator on a 2-core machine) | ${verdict(half <= 0.6)} |`)
    }
  }
  const floor = top?.servers?.floor
  for (const [label, x] of [['merge', one], ['distinct', top?.servers?.['wsps-distinct']]]) {
    if (!x || x.error || !floor || floor.error) continue
    const vs = x.p99 / floor.p99
    const lostNote = x.strict ? `; gaps ${f(x.gaps)}, ticks lost ${f(x.ticksLost)}` : ''
    rows.push(`| hot symbols, ${label}: gateway p99 within 10% of the floor's | ${f(top.conns)} connections: p99 ${f(x.p99, 1)} ms vs the floor's ${f(floor.p99, 1)} ms (${vs.toFixed(2)}×)${lostNote} | ${verdict(vs <= 1.1 && (!x.strict || (x.gaps === 0 && x.ticksLost === 0)))} |`)
  }
  if (floor && !floor.error) rows.push(`| (no target) the floor at the same load: one write() per delivery, nothing else | ${f(top.conns)} connections, ${f(floor.delivered)} deliveries/s: p99 ${f(floor.p99, 1)} ms, ${usPer(floor.cpu.server, floor.delivered)} µs server CPU per delivery${one && !one.error ? ` (wsps: ${usPer(one.cpu.server, one.delivered)})` : ''} | |`)
  const p99 = w.at50?.p99
  rows.push(`| p99 ≤ 50 ms at 50% of the latency-bounded max | ${p99 === undefined ? 'no passing step to take 50% of' : `${f(p99, 1)} ms (p50 ${f(w.at50.p50, 1)}, p999 ${f(w.at50.p999, 1)})`} | ${verdict(p99 === undefined ? null : p99 <= 50)} |`)
  const rss = r.idle?.wsps?.rssPerConnBytes
  rows.push(`| ≤ 4.2 KiB RSS per idle subscribed connection | ${rss === undefined ? 'n/a' : `${f(rss / 1024, 2)} KiB (naive: ${f((r.idle?.naive?.rssPerConnBytes ?? NaN) / 1024, 1)} KiB)`} | ${verdict(rss === undefined ? null : rss <= 4.2 * 1024)} |`)
  const coreRatio = ratio(w.saturated?.perCore, n?.saturated?.perCore)
  rows.push(`| (secondary, no target) saturation per server core-second | ${coreRatio === null ? 'n/a' : `${coreRatio.toFixed(1)}× naive`} at ~${f(r.params?.saturationDeliveries)} offered deliveries/s, latency unbounded | |`)
  const px = r.proxy?.summary?.main
  if (px?.direct && px.nginx) {
    const hs = 1 - px.nginx.handshakesPerSec / px.direct.handshakesPerSec
    rows.push(`| nginx overhead ≤ 10% (proxy section, main layout) | handshake rate ${hs >= 0 ? `${pct(hs)} lower` : `${pct(-hs)} higher`} through nginx; latency added at ${f(r.proxy.scenarios.find((/** @type {any} */ s) => s.id === 'main')?.deliveries)} deliveries/s: p50 ${px.nginx.addedP50 >= 0 ? '+' : ''}${f(px.nginx.addedP50, 1)} ms, p99 ${px.nginx.addedP99 >= 0 ? '+' : ''}${f(px.nginx.addedP99, 1)} ms | ${verdict(hs <= 0.1)} |`)
  }
  const st = r.idle?.wsps
  if (st?.stormSeconds) rows.push(`| connection storm (no target) | ${f(st.stormConns)} clients connected and snapshotted in ${f(st.stormSeconds, 1)} s (${f(st.stormRatePerSec)}/s) | |`)
  return ['## Targets (this run)', '', '| target | measured | verdict |', '| --- | --- | --- |', ...rows, '', 'Why, with profiles: [analysis.md](analysis.md).', '']
}

/**
 * The history section (sections/history.js): ingest with history off and
 * on, Redis memory per symbol, and the recovery storm.
 *
 * @param {any} h results.history
 * @param {any} p the profile
 * @returns {string[]}
 */
export function historySection (h, p) {
  if (!h) return []
  const out = ['## History and recovery (issue 24)', '']
  if (h.error) return [...out, `failed: ${h.error}`, '']
  if (Array.isArray(h.ingest) && h.ingest.length) {
    out.push(`Ingest through the fetcher's \`Publisher\` (the publish script over ioredis pipelines, as the publish API calls it: ${p.historyConcurrency} calls of ${p.historyBatch} quotes in flight over ${p.historySymbols} symbols) against the bench's Redis, each history size on its own keys, filled to its cap first; median of ${p.historyRounds} interleaved rounds of ${f(p.historyMeasureMs)} ms. Counted: quotes the script published per second of wall time (Node and Redis together), and Redis CPU per published quote. Bound (issue 24): history costs at most 20% of ingest.`, '')
    out.push('`per Redis core` is the rate one Redis core would sustain (1 / its CPU per quote) against history off: what is left of ingest where Redis is the bottleneck, and less moved by the machine\'s other load than the wall-clock rate. The bound is judged on both. `commands` is Redis\' own time executing the script and the lease `ZADD` per quote (`INFO commandstats`; without reading requests and writing replies), against history off: a third view, by clock time inside Redis, so a Redis preempted mid-command counts the wait.', '')
    out.push('| WSPS_HISTORY_SIZE | quotes/s published | vs history off | Redis CPU µs per quote | per Redis core vs off | commands µs per quote | commands vs off | within the 20% bound |')
    out.push('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
    const share = (/** @type {number | null | undefined} */ x) => (x === null || x === undefined ? 'n/a' : pct(x))
    for (const x of h.ingest) {
      const ok = x.historySize === 0 ? '' : x.vsOff >= 0.8 && (x.vsOffRedis ?? 1) >= 0.8 ? 'yes' : 'no'
      out.push(`| ${f(x.historySize)} | ${f(x.quotesPerSec)} | ${share(x.vsOff)} | ${f(x.redisUsPerQuote, 1)} | ${share(x.vsOffRedis)} | ${f(x.commandUsPerQuote, 2)} | ${share(x.vsOffCommands)} | ${ok} |`)
    }
    out.push('')
    // Where the commands' time goes: µs per quote of each command the script
    // ran (inside its own time), median over rounds.
    const named = ['incr', 'get', 'set', 'xadd', 'pexpire', 'publish', 'xtrim', 'del']
    const split = h.ingest.filter((/** @type {any} */ x) => x.commands)
    for (const x of split) {
      out.push(`- history ${f(x.historySize)}: script ${f(x.commands.evalsha, 2)} µs per quote, of which ${named.filter((c) => x.commands[c]).map((c) => `${c.toUpperCase()} ${f(x.commands[c], 2)}`).join(', ')}; lease ZADD ${f(x.commands.zadd ?? 0, 2)}`)
    }
    if (split.length) out.push('')
  }
  if (h.replication?.error) out.push(`With a replica, waiting for it: failed: ${h.replication.error}`, '')
  else if (Array.isArray(h.replication) && h.replication.length) {
    out.push('With a replica attached to the bench\'s Redis (its own redis-server on the server core), history 100, published without waiting and with `WSPS_PUBLISH_WAIT_REPLICAS=1` (each call: the writes, `WAIT 1 500`, then the PUBLISHes; issue 25, item 5), same rounds as above. Both pay for the replication stream; the difference is what waiting costs.', '')
    out.push('| WSPS_PUBLISH_WAIT_REPLICAS | quotes/s published | vs not waiting | Redis CPU µs per quote | per Redis core vs not waiting | waits acked / short |')
    out.push('| ---: | ---: | ---: | ---: | ---: | --- |')
    const share = (/** @type {number | null | undefined} */ x) => (x === null || x === undefined ? 'n/a' : pct(x))
    for (const x of h.replication) out.push(`| ${f(x.waitReplicas)} | ${f(x.quotesPerSec)} | ${share(x.vsNoWait)} | ${f(x.redisUsPerQuote, 1)} | ${share(x.vsNoWaitRedis)} | ${x.waitReplicas ? `${f(x.waits?.acked ?? 0)} / ${f(x.waits?.short ?? 0)}` : ''} |`)
    out.push('')
  }
  if (Array.isArray(h.memory) && h.memory.length) {
    out.push('Redis memory per symbol of history: `MEMORY USAGE ... SAMPLES 0` of a full stream (after size + 250 quotes of one symbol: trimmed by whole nodes, so it holds size to size + 100 entries), and of the symbol\'s epoch key (it lives as long as the seq counter).', '')
    out.push('| WSPS_HISTORY_SIZE | entries | stream bytes per symbol | per entry | message bytes | epoch key bytes |')
    out.push('| ---: | ---: | ---: | ---: | ---: | ---: |')
    for (const x of h.memory) out.push(`| ${f(x.historySize)} | ${f(x.entries)} | ${f(x.streamBytes / 1024, 1)} KiB | ${f(x.perEntryBytes)} B | ${f(x.messageBytes)} | ${f(x.epochKeyBytes)} |`)
    out.push('')
  }
  if (Array.isArray(h.recovery) && h.recovery.length) {
    out.push(`Recovery storm: a fetcher (WSPS_HISTORY_SIZE 100) fed through its publish API and one gateway on the server core. ${f(p.recoveryClients)} distinct subscribers (Node \`ws\` clients in ${p.recoveryProcs} processes on the load core) hold ${p.recoveryK} symbols each, disconnect, stay away ${f(p.recoveryGapMs)} ms while every symbol ticks, then reconnect all at once with \`since\` (the seq and epoch they hold). A client is up to live when its ack came and it holds, for each of its symbols, at least the newest seq at the start of the wave (read from Redis); it has recovered when, besides, the ack said \`recovered: true\` for every one of its symbols. Times from the start of the wave, handshake included; per client over the recovered ones. Replayed: \`q\` entries at or below that seq. Ticks lost: seqs no entry delivered (a gap, or a \`"recovered":false\` snap jumping over them), counted through 1 s of live ticks after the last client recovered; must be 0.`, '')
    out.push('| ticks/s per symbol | clients | all recovered in | recovered clients: p50 / p99 (ms) | all up to live in | missed ticks | replayed | ticks lost | symbols recovered true / false | gaps / dups |')
    out.push('| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- | --- |')
    for (const x of h.recovery) {
      if (x.error) { out.push(`| ${f(x.tickRate)} | failed: ${x.error} | | | | | | | | |`); continue }
      const all = x.allRecoveredMs === null ? `not all: ${f(x.clients - x.perClientMs.n)} not` : `${f(x.allRecoveredMs)} ms`
      const live = x.allUpToLiveMs === null ? `not all: ${f(x.unfinished)} not` : `${f(x.allUpToLiveMs)} ms`
      out.push(`| ${f(x.tickRate)} (${f(x.symbols)} symbols) | ${f(x.clients)} | ${all} | ${f(x.perClientMs.p50)} / ${f(x.perClientMs.p99)} (${f(x.perClientMs.n)}) | ${live} | ${f(x.missed)} | ${f(x.replayed)} | ${f(x.ticksLost)} | ${f(x.recovered.true)} / ${f(x.recovered.false)} | ${f(x.gaps)} / ${f(x.dups)} |`)
    }
    out.push('')
  }
  return out
}
