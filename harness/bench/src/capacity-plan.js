// The pure parts of `make capacity`: how many gateway and load-generator
// processes, which source addresses and how many ports each needs, what the
// publisher must do for every connection to see an update within the hold,
// which kernel limits the run needs, what stopped a run short, and the
// per-connection arithmetic of the report. No I/O here: capacity.js runs it,
// test/capacity.test.js checks it.

/** Every limit the plan is built from, declared once. */
export const LIMITS = Object.freeze({
  /** Open files per process (hard limit here, cannot be raised). */
  fdCap: 20_000,
  /** Connections per gateway process: the gateway's own WSPS_MAX_CONNECTIONS default, 2,000 fds under the cap. */
  perGateway: 18_000,
  /** Connections per load-generator process (same fd cap, same margin). */
  perLoadgen: 18_000,
  /** Source addresses per load-generator process (fleet.js gives each process two fresh 127.0.x.y). */
  ipsPerLoadgen: 2,
  /** Share of the ephemeral port range one source address may use (the rest: other jobs, TIME_WAIT). */
  portShare: 0.8,
  /** Fleets (one per gateway) that connect at the same time. */
  wave: 4
})

/**
 * @typedef {object} PlanInput
 * @property {number} target connections to hold
 * @property {number} holdSeconds
 * @property {number} rate quotes published per second (all symbols)
 * @property {number} symbols symbols in the universe
 * @property {number} k symbols per connection
 * @property {[number, number]} portRange net.ipv4.ip_local_port_range
 * @property {number} [perGateway]
 * @property {number} [perLoadgen]
 * @property {number} [wave]
 */

/**
 * @param {PlanInput} i
 */
export function plan (i) {
  const perGateway = i.perGateway ?? LIMITS.perGateway
  const perLoadgen = i.perLoadgen ?? LIMITS.perLoadgen
  if (!(Number.isInteger(i.target) && i.target > 0)) throw new RangeError(`TARGET must be a positive integer, not ${i.target}`)
  if (perGateway > LIMITS.fdCap - 1000) throw new RangeError(`${perGateway} connections per gateway leaves too few of the ${LIMITS.fdCap} fds for Redis, the listener and logs`)
  if (i.k > i.symbols) throw new RangeError(`k = ${i.k} symbols per connection of only ${i.symbols}`)
  // One load generator per gateway (its fleet targets that gateway only):
  // the smaller per-process cap decides how many of each.
  const procs = Math.ceil(i.target / Math.min(perGateway, perLoadgen))
  const conns = split(i.target, procs)
  const ports = i.portRange[1] - i.portRange[0] + 1
  const portsPerIp = Math.floor(ports * LIMITS.portShare)
  const connsPerIp = Math.ceil(conns[0] / LIMITS.ipsPerLoadgen)
  // Go's dialer binds the source address before connect (no
  // IP_BIND_ADDRESS_NO_PORT), so a port is taken per source address, not per
  // destination: each address serves at most the ephemeral range.
  if (connsPerIp > portsPerIp) throw new RangeError(`${connsPerIp} connections per source address > ${portsPerIp} usable ephemeral ports (${i.portRange.join('-')})`)
  const cycleSeconds = i.symbols / i.rate
  // The publisher goes round the symbols in turn, so every symbol (and so
  // every connection) gets an update once per cycle; two cycles leave room
  // for a publisher that falls behind for a while.
  const minHold = Math.ceil(2 * cycleSeconds)
  if (i.holdSeconds < minHold) throw new RangeError(`HOLD ${i.holdSeconds} s < ${minHold} s: two publisher cycles (${i.symbols} symbols at ${i.rate}/s) are needed for every connection to see an update`)
  const wave = i.wave ?? LIMITS.wave
  return {
    target: i.target,
    gateways: procs,
    loadgens: procs,
    connsPerGateway: conns,
    sourceIps: procs * LIMITS.ipsPerLoadgen,
    connsPerIp,
    portsPerIp,
    waves: chunk([...conns.keys()], wave),
    cycleSeconds,
    minHoldSeconds: minHold,
    deliveriesPerSecond: i.target * i.k * i.rate / i.symbols,
    kernel: kernelNeeds(i.target)
  }
}

/** @typedef {ReturnType<typeof plan>} Plan */

/**
 * Kernel limits a run of `target` connections needs (loopback: two sockets
 * per connection). harness/capacity/kernel.sh raises what is lower and
 * restores it afterwards; nothing is ever lowered.
 *
 * @param {number} target
 */
export function kernelNeeds (target) {
  const sockets = 2 * target
  return {
    // Every socket is a file, plus the processes' own.
    'fs.file-max': sockets + 200_000,
    // One conntrack entry per connection when loopback is tracked (kernel.sh
    // prefers NOTRACK on the run's ports; this is the fallback).
    'net.netfilter.nf_conntrack_max': Math.ceil(target * 1.2) + 65_536,
    // The gateways' listen queues during the ramp.
    'net.core.somaxconn': 4096,
    'net.ipv4.tcp_max_syn_backlog': 8192,
    // SYNs and data on lo queue here per CPU before the stack sees them.
    'net.core.netdev_max_backlog': 16_384,
    // Socket buffer memory, in pages (min, pressure, max: kernel.sh compares
    // the max): 2 pages per socket when every buffer holds a little.
    'net.ipv4.tcp_mem': sockets * 2
  }
}

/**
 * n split into parts as even as possible, larger first.
 *
 * @param {number} n
 * @param {number} parts
 * @returns {number[]}
 */
export function split (n, parts) {
  const base = Math.floor(n / parts)
  return Array.from({ length: parts }, (_, j) => base + (j < n % parts ? 1 : 0))
}

/**
 * @template T
 * @param {T[]} xs
 * @param {number} size
 * @returns {T[][]}
 */
export function chunk (xs, size) {
  const out = []
  for (let j = 0; j < xs.length; j += size) out.push(xs.slice(j, j + size))
  return out
}

/**
 * What a load generator's connection error says about the machine. The
 * messages are Go's net errors (errno text) and gorilla's handshake errors.
 */
const ERROR_CAUSES = /** @type {const} */ ([
  // Our own stop (the ramp's budget or a guard cut the connecting): not a cause.
  [/context canceled|operation was canceled/i, 'cut'],
  [/cannot assign requested address/i, 'ports'],
  [/too many open files/i, 'fds'],
  [/HTTP 503/, 'gateway-full'],
  [/cannot allocate memory|no buffer space/i, 'memory'],
  [/i\/o timeout|deadline exceeded|connection timed out/i, 'cpu-or-time'],
  [/connection refused|connection reset|broken pipe|EOF/i, 'gateway-refused']
])

/** @param {string} message @returns {string} */
export function errorCause (message) {
  for (const [re, cause] of ERROR_CAUSES) if (re.test(message)) return cause
  return 'other'
}

/**
 * Why a run held fewer than its target, from what was measured: the first
 * guard that tripped wins (it stopped the ramp); else, if the ramp reached
 * the target, the connections lost during the hold (with the gateways'
 * close codes); else the commonest cause among the connection errors.
 *
 * @param {object} s
 * @param {number} s.held open at the end of the hold
 * @param {number} s.target
 * @param {number} s.ramped ready at the end of the ramp
 * @param {string | null} s.guard
 * @param {string[]} s.errors the load generators' connection errors during the ramp
 * @param {string[]} [s.holdErrors] their errors during the hold
 * @param {Record<string, number>} [s.closes] gateway closes by code during the hold
 * @param {boolean} s.rampTimedOut
 * @returns {{cause: string, detail: string} | null} null when the target was held
 */
export function stopCause ({ held, target, ramped, guard, errors, holdErrors = [], closes = {}, rampTimedOut }) {
  if (held >= target) return null
  if (guard) return { cause: guard.split(':')[0], detail: guard }
  if (ramped >= target) {
    const codes = Object.entries(closes).map(([c, n]) => `${n} x ${c}${c === '1006' ? ' (no close frame: missed heartbeat or a dropped socket)' : ''}`).join(', ')
    return { cause: 'hold-loss', detail: `${ramped - held} of ${ramped} connections closed during the hold; gateway closes: ${codes || 'none'}; load generator errors: ${holdErrors.slice(0, 3).join('; ') || 'none'}` }
  }
  /** @type {Map<string, number>} */
  const counts = new Map()
  for (const e of errors) {
    const c = errorCause(e)
    if (c !== 'cut') counts.set(c, (counts.get(c) ?? 0) + 1)
  }
  const top = [...counts].sort((a, b) => b[1] - a[1])[0]
  if (top) return { cause: top[0], detail: `${top[1]} of ${errors.length} connection errors read as ${top[0]}; e.g. ${errors.find((e) => errorCause(e) === top[0])}` }
  // Only our own cuts (or nothing): the budget ran out before the machine refused anything.
  if (rampTimedOut) return { cause: 'cpu-or-time', detail: 'the ramp ran out of time with no connection errors: the machine connected too slowly' }
  return { cause: 'unknown', detail: 'fewer connections ready than planned, with no error reported' }
}

/**
 * /proc/meminfo text -> bytes by field.
 *
 * @param {string} text
 * @returns {Record<string, number>}
 */
export function parseMeminfo (text) {
  /** @type {Record<string, number>} */
  const out = {}
  for (const m of text.matchAll(/^(\w+):\s+(\d+)(?: kB)?$/gm)) out[m[1]] = Number(m[2]) * (m[0].endsWith('kB') ? 1024 : 1)
  return out
}

/**
 * /proc/net/sockstat text -> {'TCP.inuse': n, 'TCP.mem': pages, ...}.
 *
 * @param {string} text
 * @returns {Record<string, number>}
 */
export function parseSockstat (text) {
  /** @type {Record<string, number>} */
  const out = {}
  for (const line of text.split('\n')) {
    const [proto, rest] = line.split(':')
    if (!rest) continue
    const f = rest.trim().split(/\s+/)
    for (let j = 0; j + 1 < f.length; j += 2) out[`${proto}.${f[j]}`] = Number(f[j + 1])
  }
  return out
}

/**
 * Per-connection costs of a held run, from before/at-hold readings.
 *
 * @param {object} m
 * @param {number} m.held
 * @param {number} m.gatewayRssBase summed over the gateways, after a full GC, before any connection
 * @param {number} m.gatewayRssHeld summed, after a full GC, at the end of the hold
 * @param {number} m.loadgenRssHeld summed over the load generators at the end of the hold
 * @param {Record<string, number>} m.memBefore meminfo before the ramp
 * @param {Record<string, number>} m.memHeld meminfo at the end of the hold
 * @param {Record<string, number>} m.sockHeld sockstat at the end of the hold
 * @param {number} [m.pageSize]
 */
export function perConnection ({ held, gatewayRssBase, gatewayRssHeld, loadgenRssHeld, memBefore, memHeld, sockHeld, pageSize = 4096 }) {
  const n = Math.max(1, held)
  const used = (/** @type {Record<string, number>} */ m) => m.MemTotal - m.MemAvailable
  const slab = (memHeld.Slab ?? 0) - (memBefore.Slab ?? 0)
  return {
    gatewayRss: (gatewayRssHeld - gatewayRssBase) / n,
    loadgenRss: loadgenRssHeld / n,
    // Slab (socket, inode, dentry, epoll objects) for both ends of a loopback connection.
    kernelSlab: slab / n,
    // Bytes queued in socket buffers (sockstat TCP mem is in pages).
    socketBuffers: (sockHeld['TCP.mem'] ?? 0) * pageSize / n,
    // Everything the machine lost, our processes, the kernel and any other job alike.
    machine: (used(memHeld) - used(memBefore)) / n
  }
}

/**
 * Memory one machine needs to hold `target` connections with the
 * per-connection costs measured (load generators on the same machine), and
 * the gateway fleet for a real deployment.
 *
 * @param {ReturnType<typeof perConnection>} c per-connection bytes
 * @param {{gatewayBase: number, loadgenBase: number}} base bytes per process before connections
 * @param {number} target
 */
export function extrapolate (c, base, target) {
  const procs = Math.ceil(target / LIMITS.perGateway)
  const gateways = procs * base.gatewayBase + target * c.gatewayRss
  const loadgens = procs * base.loadgenBase + target * c.loadgenRss
  const kernel = target * (c.kernelSlab + c.socketBuffers)
  return { target, gatewayProcs: procs, gateways, loadgens, kernel, total: gateways + loadgens + kernel }
}
