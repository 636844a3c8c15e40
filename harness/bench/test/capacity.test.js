// Unit tests of `make capacity`'s pure parts: the process / address / port
// plan, the publisher cycle against the hold, kernel needs, what stopped a
// run, the per-connection arithmetic and the summary. (The run itself is
// `make capacity`, never `make test`.)

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { LIMITS, chunk, errorCause, extrapolate, kernelNeeds, parseMeminfo, parseSockstat, perConnection, plan, split, stopCause } from '../src/capacity-plan.js'
import { renderSummary } from '../src/capacity-report.js'

const base = { holdSeconds: 120, rate: 20, symbols: 1000, k: 3, portRange: /** @type {[number, number]} */ ([32768, 60999]) }

test('a million connections: 56 gateways and 56 load generators under the 18,000 cap, 112 source addresses', () => {
  const p = plan({ ...base, target: 1_000_000 })
  assert.equal(p.gateways, 56)
  assert.equal(p.loadgens, 56)
  assert.equal(p.connsPerGateway.reduce((a, b) => a + b, 0), 1_000_000)
  assert.ok(p.connsPerGateway.every((n) => n <= LIMITS.perGateway))
  assert.equal(p.sourceIps, 112)
  assert.equal(p.connsPerIp, Math.ceil(p.connsPerGateway[0] / 2))
  assert.equal(p.portsPerIp, Math.floor(28_232 * LIMITS.portShare))
  assert.equal(p.waves.length, 14)
  assert.deepEqual(p.waves.flat(), [...Array(56).keys()], 'every gateway is in exactly one wave, in order')
})

test('TARGET=40000 is three gateways of 13,334 / 13,333 / 13,333', () => {
  const p = plan({ ...base, target: 40_000 })
  assert.deepEqual(p.connsPerGateway, [13_334, 13_333, 13_333])
  assert.equal(p.deliveriesPerSecond, 40_000 * 3 * 20 / 1000)
  assert.equal(p.cycleSeconds, 50)
  assert.equal(p.minHoldSeconds, 100)
})

test('a source address never gets more connections than its share of the ephemeral range', () => {
  // 1,000 ports: 800 usable per address; 18,000 per loadgen over 2 addresses is far more.
  assert.throws(() => plan({ ...base, target: 40_000, portRange: [60_000, 60_999] }), /per source address > 800 usable ephemeral ports/)
  assert.doesNotThrow(() => plan({ ...base, target: 1600, portRange: [60_000, 60_999] }))
  assert.throws(() => plan({ ...base, target: 1602, portRange: [60_000, 60_999] }), RangeError)
})

test('the hold must cover two publisher cycles, or some connection may see no update', () => {
  assert.throws(() => plan({ ...base, target: 1000, holdSeconds: 99 }), /HOLD 99 s < 100 s/)
  assert.doesNotThrow(() => plan({ ...base, target: 1000, holdSeconds: 100 }))
  assert.doesNotThrow(() => plan({ ...base, target: 1000, holdSeconds: 10, symbols: 100, rate: 20 }))
})

test('impossible inputs are refused with the reason', () => {
  assert.throws(() => plan({ ...base, target: 0 }), /positive integer/)
  assert.throws(() => plan({ ...base, target: 1.5 }), /positive integer/)
  assert.throws(() => plan({ ...base, target: 10, perGateway: 19_500 }), /too few of the 20000 fds/)
  assert.throws(() => plan({ ...base, target: 10, k: 5, symbols: 4 }), /k = 5/)
})

test('kernel needs scale with two sockets per loopback connection', () => {
  const n = kernelNeeds(1_000_000)
  assert.equal(n['fs.file-max'], 2_200_000)
  assert.equal(n['net.ipv4.tcp_mem'], 4_000_000)
  assert.equal(n['net.netfilter.nf_conntrack_max'], 1_265_536)
  assert.ok(kernelNeeds(40_000)['fs.file-max'] < kernelNeeds(1_000_000)['fs.file-max'])
})

test('split is even, larger parts first; chunk keeps order', () => {
  assert.deepEqual(split(10, 3), [4, 3, 3])
  assert.deepEqual(split(9, 3), [3, 3, 3])
  assert.deepEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])
})

test('a connection error names the resource that ran out', () => {
  assert.equal(errorCause('dial tcp 127.0.1.21:0->127.0.0.1:40001: connect: cannot assign requested address'), 'ports')
  assert.equal(errorCause('dial tcp: socket: too many open files'), 'fds')
  assert.equal(errorCause('websocket: bad handshake (HTTP 503)'), 'gateway-full')
  assert.equal(errorCause('read: connection reset by peer'), 'gateway-refused')
  assert.equal(errorCause('dial tcp 127.0.0.1:1: i/o timeout'), 'cpu-or-time')
  assert.equal(errorCause('something else'), 'other')
  assert.equal(errorCause('dial tcp 127.0.1.21:0->127.0.0.1:4000: operation was canceled'), 'cut')
})

test('the stop cause: none at target, the guard that tripped first, losses in the hold, else the commonest error', () => {
  assert.equal(stopCause({ held: 10, target: 10, ramped: 10, guard: 'memory: x', errors: [], rampTimedOut: false }), null)
  assert.deepEqual(stopCause({ held: 5, target: 10, ramped: 5, guard: 'memory: 900 MiB available', errors: ['too many open files'], rampTimedOut: false }), { cause: 'memory', detail: 'memory: 900 MiB available' })
  const s = stopCause({ held: 5, target: 10, ramped: 5, guard: null, errors: ['connect: cannot assign requested address', 'too many open files', 'connect: cannot assign requested address'], rampTimedOut: false })
  assert.equal(s?.cause, 'ports')
  assert.match(s?.detail ?? '', /^2 of 3 connection errors/)
  assert.equal(stopCause({ held: 5, target: 10, ramped: 5, guard: null, errors: [], rampTimedOut: true })?.cause, 'cpu-or-time')
  assert.equal(stopCause({ held: 5, target: 10, ramped: 5, guard: null, errors: ['dial tcp 127.0.1.21:0->127.0.0.1:4000: operation was canceled', 'context canceled'], rampTimedOut: true })?.cause, 'cpu-or-time', 'our own cut is not the cause')
  assert.equal(stopCause({ held: 5, target: 10, ramped: 5, guard: null, errors: [], rampTimedOut: false })?.cause, 'unknown')
  const lost = stopCause({ held: 9, target: 10, ramped: 10, guard: null, errors: [], holdErrors: ['conn 7: EOF'], closes: { 1006: 1 }, rampTimedOut: false })
  assert.equal(lost?.cause, 'hold-loss')
  assert.match(lost?.detail ?? '', /^1 of 10 connections closed during the hold; gateway closes: 1 x 1006 \(no close frame/)
  assert.match(lost?.detail ?? '', /conn 7: EOF/)
})

test('meminfo and sockstat parse to bytes and counters', () => {
  const m = parseMeminfo('MemTotal:       24683520 kB\nMemAvailable:   20000000 kB\nHugePages_Total:       0\nSlab:             102400 kB\n')
  assert.equal(m.MemTotal, 24_683_520 * 1024)
  assert.equal(m.Slab, 100 * 2 ** 20)
  assert.equal(m.HugePages_Total, 0)
  const s = parseSockstat('sockets: used 16\nTCP: inuse 1 orphan 0 tw 0 alloc 1 mem 189\nUDP: inuse 0 mem 0\n')
  assert.equal(s['TCP.mem'], 189)
  assert.equal(s['TCP.inuse'], 1)
  assert.equal(s['sockets.used'], 16)
})

test('per-connection costs divide the deltas by the connections held', () => {
  const GiB = 2 ** 30
  const c = perConnection({
    held: 1000,
    gatewayRssBase: 200 * 2 ** 20,
    gatewayRssHeld: 200 * 2 ** 20 + 4_096_000,
    loadgenRssHeld: 10_240_000,
    memBefore: { MemTotal: 24 * GiB, MemAvailable: 20 * GiB, Slab: 1_000_000 },
    memHeld: { MemTotal: 24 * GiB, MemAvailable: 20 * GiB - 20_000_000, Slab: 5_000_000 },
    sockHeld: { 'TCP.mem': 250 }
  })
  assert.equal(c.gatewayRss, 4096)
  assert.equal(c.loadgenRss, 10_240)
  assert.equal(c.kernelSlab, 4000)
  assert.equal(c.socketBuffers, 1024)
  assert.equal(c.machine, 20_000)
  const e = extrapolate(c, { gatewayBase: 60 * 2 ** 20, loadgenBase: 0 }, 1_000_000)
  assert.equal(e.gatewayProcs, 56)
  assert.equal(e.gateways, 56 * 60 * 2 ** 20 + 4096e6)
  assert.equal(e.total, e.gateways + 10_240e6 + 5024e6)
})

test('the summary says when the run fell short and why', () => {
  const r = {
    target: 40_000,
    held: 30_000,
    startedAt: 'now',
    durationSeconds: 100,
    machine: { cpus: 2, memGiB: 24, loadavgStart: [1, 2, 3] },
    params: { perGateway: 18_000, k: 3, symbols: 1000, rate: 20, heartbeatMs: 30_000 },
    plan: { gateways: 3, loadgens: 3, sourceIps: 6, connsPerIp: 6667, portsPerIp: 22_585, cycleSeconds: 50 },
    ramp: { ready: 30_000, seconds: 10, connectPerSecond: 3000, cpu: { gateways: 1.2 } },
    hold: { seconds: 120, check: { ready: 30_000, open: 30_000, quoted: 30_000, lostSample: [], unquotedSample: [] }, everyConnectionQuoted: true, deliveredPerSecond: 1800, latencyMs: { n: 10, p50: 1, p99: 2, p999: 3 }, cpu: {}, gatewayClosesByCode: {} },
    stop: { cause: 'memory', detail: 'memory: 900 MiB available' },
    extrapolated: []
  }
  const text = renderSummary(r)
  assert.match(text, /TARGET 40,000, held 30,000/)
  assert.match(text, /ALL QUOTED/)
  assert.match(text, /SHORT OF TARGET: memory: memory: 900 MiB available/)
  assert.match(text, /gateway closes during the hold: none/)
})

test('the summary names the gateways whose memory was read without a full GC', () => {
  const r = {
    target: 1000,
    held: 1000,
    startedAt: 'now',
    machine: { cpus: 2, memGiB: 24, loadavgStart: [1, 2, 3] },
    params: { perGateway: 18_000, k: 3, symbols: 1000, rate: 5, heartbeatMs: 120_000 },
    plan: { gateways: 1, loadgens: 1, sourceIps: 2, connsPerIp: 500, portsPerIp: 22_585, cycleSeconds: 200 },
    memory: {
      perConnectionBytes: { gatewayRss: 4600, loadgenRss: 970, kernelSlab: 10_000, socketBuffers: 0, machine: 12_000 },
      gateways: [{ perConnBytes: 4600 }],
      gatewayBaseMiB: 79,
      gatewaysWithoutGc: [40001],
      sockstatHeld: { 'TCP.mem': 10, 'TCP.inuse': 2000 },
      machine: { totalMiB: 24_000, availableBeforeMiB: 20_000, availableHeldMiB: 19_990, availableMinMiB: 19_980 }
    },
    stop: null
  }
  assert.match(renderSummary(r), /no full GC, RSS as read: the gateways on ports 40001/)
  assert.doesNotMatch(renderSummary({ ...r, memory: { ...r.memory, gatewaysWithoutGc: [] } }), /no full GC/)
})
