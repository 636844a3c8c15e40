// capacity.json -> the text summary `make capacity` prints and writes.

const f = (/** @type {number | null | undefined} */ x, d = 0) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : Number(x).toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }))
const kib = (/** @type {number | undefined} */ b) => (b === undefined ? 'n/a' : `${f(b / 1024, 2)} KiB`)
/** @param {Record<string, number> | undefined} c */
const cores = (c) => (c ? Object.entries(c).map(([k, v]) => `${k} ${f(v, 2)}`).join(', ') : 'n/a')

/**
 * @param {any} r capacity.json
 * @returns {string}
 */
export function renderSummary (r) {
  const out = []
  const p = r.params
  out.push(`make capacity: TARGET ${f(r.target)}, held ${f(r.held)} (${r.startedAt}, ${r.durationSeconds ?? '?'} s; ${r.machine.cpus} cores, ${r.machine.memGiB} GiB, load ${r.machine.loadavgStart.map((/** @type {number} */ x) => x.toFixed(1)).join(' ')})`)
  out.push(`  plan: ${r.plan.gateways} gateways x <= ${f(p.perGateway)}, ${r.plan.loadgens} load generators, ${r.plan.sourceIps} source addresses (${f(r.plan.connsPerIp)} connections each of ${f(r.plan.portsPerIp)} ports); K ${p.k} of ${f(p.symbols)} symbols, publisher ${p.rate}/s round the symbols (each every ${f(r.plan.cycleSeconds, 1)} s), heartbeat ${p.heartbeatMs} ms`)
  if (r.ramp) {
    out.push(`  ramp: ${f(r.ramp.ready)} subscribed with snapshots in ${f(r.ramp.seconds, 1)} s = ${f(r.ramp.connectPerSecond)} connections/s; CPU (cores) ${cores(r.ramp.cpu)}`)
  }
  if (r.hold) {
    const c = r.hold.check
    out.push(`  hold ${f(r.hold.seconds, 1)} s: ${f(c.ready)} ready, ${f(c.open)} open at the end, ${f(c.quoted)} got >= 1 update (exact, every connection): ${r.hold.everyConnectionQuoted ? 'ALL QUOTED' : 'NOT ALL'}`)
    if (c.lostSample.length) out.push(`    lost (first): ${c.lostSample.join(' ')}`)
    if (c.unquotedSample.length) out.push(`    without an update (first): ${c.unquotedSample.join(' ')}`)
    out.push(`    ${f(r.hold.deliveredPerSecond)} deliveries/s; latency p50 ${f(r.hold.latencyMs.p50, 1)} / p99 ${f(r.hold.latencyMs.p99, 1)} / p999 ${f(r.hold.latencyMs.p999, 1)} ms over ${f(r.hold.latencyMs.n)} deliveries; CPU ${cores(r.hold.cpu)}`)
    const closes = Object.entries(r.hold.gatewayClosesByCode)
    out.push(`    gateway closes during the hold: ${closes.length ? closes.map(([k, v]) => `${v} x ${k}`).join(', ') : 'none'}`)
    for (const e of r.hold.loadgenErrors?.sample ?? []) out.push(`    load generator: ${e}`)
  }
  if (r.memory) {
    const m = r.memory
    const pc = m.perConnectionBytes
    out.push('  memory per held connection:')
    out.push(`    gateway RSS ${kib(pc.gatewayRss)} (after a full GC; base ${f(m.gatewayBaseMiB, 1)} MiB per process; per gateway ${m.gateways.map((/** @type {any} */ g) => f(g.perConnBytes)).join(' / ')} B)`)
    const heap = m.gateways.map((/** @type {any} */ g) => g.heapPerConnBytes).filter((/** @type {any} */ b) => b != null)
    if (heap.length) out.push(`      of it V8 heap ${heap.map((/** @type {number} */ b) => f(b)).join(' / ')} B per gateway (exact; RSS adds allocator slack and native socket state)`)
    if (m.gatewaysWithoutGc?.length) out.push(`    (no full GC, RSS as read: the gateways on ports ${m.gatewaysWithoutGc.join(', ')})`)
    const go = m.loadgenGoPerConnBytes
    if (go) out.push(`    load generator (Go runtime): stacks ${kib(go.stackInuse)}, heap in use ${kib(go.heapInuse)} (live ${kib(go.heapAlloc)})`)
    out.push(`    load generator RSS ${kib(pc.loadgenRss)}; kernel slab ${kib(pc.kernelSlab)} (both sockets), socket buffers ${kib(pc.socketBuffers)} (sockstat TCP mem ${f(m.sockstatHeld['TCP.mem'])} pages, ${f(m.sockstatHeld['TCP.inuse'])} TCP sockets in use)`)
    out.push(`    machine: ${kib(pc.machine)} (MemAvailable ${f(m.machine.availableBeforeMiB)} -> ${f(m.machine.availableHeldMiB)} MiB of ${f(m.machine.totalMiB)}, lowest ${f(m.machine.availableMinMiB)}; other jobs on the machine count here too)`)
  }
  if (r.stop) out.push(`  SHORT OF TARGET: ${r.stop.cause}: ${r.stop.detail}`)
  for (const e of r.extrapolated ?? []) {
    out.push(`  extrapolated to ${f(e.target)} on one machine: ${e.gatewayProcs} gateways ${f(e.gatewaysGiB, 1)} GiB + load generators ${f(e.loadgensGiB, 1)} GiB + kernel ${f(e.kernelGiB, 1)} GiB = ${f(e.totalGiB, 1)} GiB`)
  }
  return out.join('\n') + '\n'
}
