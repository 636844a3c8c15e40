// Gateway loss with reconnecting clients (the browser/Node client
// @wsps/client (clients/js), given both gateway URLs):
//
// 1. SIGTERM: clients are closed with 1012 spread over WSPS_DRAIN_MS,
//    reconnect to the other gateway, resubscribe and get a snapshot —
//    close -> snapshot p99 <= 3 s, no subscription lost.
// 2. SIGKILL: on loopback the kernel resets the sockets at once (1006);
//    clients recover the same way, with backoff.
// 3. Hang (SIGSTOP, then SIGKILL): no close at all — a frozen pod or a
//    network partition; clients notice by heartbeat (no frame for
//    2 x heartbeatMs) and recover the same way.

import WebSocket from 'ws'
import { WspsClient } from '@wsps/client'
import { Report } from '../lib/report.js'
import { percentile } from '../../testkit/src/stats.js'
import { Stack, sleep, waitFor } from '../../testkit/src/index.js'

/**
 * @typedef {object} Tracked
 * @property {WspsClient} client
 * @property {string[]} symbols
 * @property {string | null} node gateway of the current connection
 * @property {number} closedAt last time it lost its connection
 * @property {number | null} closeCode
 * @property {Map<string, number>} snapAt symbol -> last snapshot time
 * @property {Map<string, number>} quoteAt symbol -> last quote time
 * @property {number} gaps
 * @property {string[]} rejected
 */

/**
 * @param {{clients?: number, symbols?: number, perClient?: number, drainMs?: number, heartbeatMs?: number}} params
 * @param {(line: string) => void} log
 */
export async function run (params, log) {
  const p = { clients: 1000, symbols: 200, perClient: 5, drainMs: 5000, heartbeatMs: 2000, ...params }
  const report = new Report()
  const stack = await new Stack().start()
  /** @type {Tracked[]} */
  const tracked = []
  const gwEnv = { WSPS_DRAIN_MS: p.drainMs, WSPS_HEARTBEAT_MS: p.heartbeatMs, WSPS_UNSUBSCRIBE_DELAY_MS: 5000 }
  /** @param {number} [port] */
  const gateway = (port) => stack.gateway(port ? { ...gwEnv, WSPS_HTTP_PORT: port } : gwEnv)
  try {
    await stack.fetcher({ WSPS_FETCH_INTERVAL_MS: 500, WSPS_SCHEDULE_TICK_MS: 50 })
    let [a, b] = await Promise.all([gateway(), gateway()])
    const ports = [a.port, b.port]
    const symbols = Array.from({ length: p.symbols }, (_, i) => `GW${i}`)
    for (let i = 0; i < p.clients; i++) {
      const mine = Array.from({ length: p.perClient }, (_, k) => symbols[(i * 31 + k * 7) % symbols.length])
      // Every client starts on A (the first URL) and rotates on reconnect.
      const client = new WspsClient({ url: [a.wsUrl, b.wsUrl], WebSocket: /** @type {any} */ (WebSocket), symbols: mine, initialBackoffMs: 250, restartJitterMs: 500 })
      /** @type {Tracked} */
      const t = { client, symbols: [...new Set(mine)], node: null, closedAt: 0, closeCode: null, snapAt: new Map(), quoteAt: new Map(), gaps: 0, rejected: [] }
      client.on('hello', (h) => { t.node = h.node })
      client.on('status', (s) => {
        if (s.state === 'reconnecting' && t.node !== null) {
          t.closedAt = Date.now()
          t.closeCode = s.closeCode
          t.node = null
        }
      })
      client.on('quote', (q) => {
        const now = Date.now()
        t.quoteAt.set(q.symbol, now)
        if (q.snapshot) t.snapAt.set(q.symbol, now)
      })
      client.on('gap', () => { t.gaps++ })
      client.on('rejected', (r) => { t.rejected.push(...r.symbols) })
      tracked.push(t)
      client.connect()
      if (i % 100 === 99) await sleep(50)
    }
    await waitFor(() => tracked.every((t) => t.node === a.name && t.symbols.every((s) => t.snapAt.has(s))), { timeout: 60_000, interval: 100, message: 'every client on A with its snapshots' })
    log(`${tracked.length} clients on ${a.name}, ${p.perClient} symbols each`)

    /**
     * After an incident at `since`: resolves when every client is on `target`
     * with a fresh snapshot of each of its symbols; returns per-client times.
     * @param {import('../../testkit/src/index.js').ServiceHandle} target
     * @param {number} since
     * @param {number} timeout
     */
    const recovered = async (target, since, timeout) => {
      /** @type {Map<Tracked, number>} */
      const doneAt = new Map()
      await waitFor(() => {
        for (const t of tracked) {
          if (doneAt.has(t)) continue
          if (t.node === target.name && t.symbols.every((s) => (t.snapAt.get(s) ?? 0) > since)) {
            doneAt.set(t, Math.max(...t.symbols.map((s) => t.snapAt.get(s) ?? 0)))
          }
        }
        return doneAt.size === tracked.length
      }, { timeout, interval: 20, message: `every client back on ${target.name} with snapshots` })
      return doneAt
    }
    /**
     * @param {string} label
     * @param {import('../../testkit/src/index.js').ServiceHandle} target
     * @param {string} name
     */
    const noneLost = async (label, target, name) => {
      const now = Date.now()
      await waitFor(() => tracked.every((t) => t.symbols.every((s) => (t.quoteAt.get(s) ?? 0) > now)), { timeout: 10_000, message: 'every subscription updating' })
      const m = await target.metrics()
      const expected = tracked.reduce((n, t) => n + t.symbols.length, 0)
      report.check(`${label}: no subscription lost (every symbol of every client updating on ${name})`,
        m.wsps_gateway_subscriptions === expected && tracked.every((t) => t.client.symbols.length === t.symbols.length),
        `gateway holds ${m.wsps_gateway_subscriptions} of ${expected}`)
    }

    // 1. SIGTERM A: 1012 over the drain window, to B.
    const termAt = Date.now()
    a.proc.kill('SIGTERM')
    const afterTerm = await recovered(b, termAt, p.drainMs + 30_000)
    const termTimes = tracked.map((t) => /** @type {number} */ (afterTerm.get(t)) - t.closedAt)
    const closeSpread = Math.max(...tracked.map((t) => t.closedAt)) - Math.min(...tracked.map((t) => t.closedAt))
    const codes = new Set(tracked.map((t) => t.closeCode))
    report.figure('SIGTERM: close (1012) -> snapshot on the other gateway, p50', percentile(termTimes, 50), 'ms')
    report.figure('SIGTERM: close (1012) -> snapshot on the other gateway, p99', percentile(termTimes, 99), 'ms', { max: 3000 })
    report.figure('SIGTERM: close (1012) -> snapshot, max', Math.max(...termTimes), 'ms')
    report.figure('SIGTERM: closes spread over', closeSpread, 'ms', { min: p.drainMs * 0.7 })
    report.check('SIGTERM: every client was closed with 1012', codes.size === 1 && codes.has(1012), [...codes])
    report.check('SIGTERM: the drained gateway exited 0', (await a.exited).code === 0)
    log(`SIGTERM: p99 close->snapshot ${percentile(termTimes, 99)} ms, closes spread over ${closeSpread} ms`)
    await noneLost('SIGTERM', b, 'B')

    // 2. SIGKILL B (A back on its port first).
    a = await gateway(ports[0])
    const killAt = Date.now()
    b.proc.kill('SIGKILL')
    const afterKill = await recovered(a, killAt, 30_000)
    const killTimes = tracked.map((t) => /** @type {number} */ (afterKill.get(t)) - killAt)
    report.figure('SIGKILL: kill -> snapshot on the other gateway, p50', percentile(killTimes, 50), 'ms')
    report.figure('SIGKILL: kill -> snapshot on the other gateway, p99', percentile(killTimes, 99), 'ms', { max: 3000 })
    log(`SIGKILL: p99 kill->snapshot ${percentile(killTimes, 99)} ms (close codes ${[...new Set(tracked.map((t) => t.closeCode))]})`)
    await noneLost('SIGKILL', a, 'A')

    // 3. A hangs (SIGSTOP): sockets stay open, nothing arrives; heartbeat.
    b = await gateway(ports[1])
    const stopAt = Date.now()
    a.proc.kill('SIGSTOP')
    const afterHang = await recovered(b, stopAt, 4 * p.heartbeatMs + 30_000)
    const hangTimes = tracked.map((t) => /** @type {number} */ (afterHang.get(t)) - stopAt)
    const detect = tracked.map((t) => t.closedAt - stopAt)
    a.proc.kill('SIGKILL')
    report.figure('hang: heartbeat detection (no frame for 2 x heartbeatMs), max', Math.max(...detect), 'ms', { max: 2 * p.heartbeatMs + p.heartbeatMs / 2 + 1500 })
    report.figure('hang: stop -> snapshot on the other gateway, p99', percentile(hangTimes, 99), 'ms', { max: 2 * p.heartbeatMs + 3000 })
    log(`hang: detected within ${Math.max(...detect)} ms, p99 stop->snapshot ${percentile(hangTimes, 99)} ms`)
    await noneLost('hang', b, 'B')

    const gaps = tracked.reduce((n, t) => n + t.gaps, 0)
    const rejected = tracked.flatMap((t) => t.rejected)
    report.figure('gap events at clients (resubscribed by the client)', gaps, 'events')
    report.check('no symbol rejected on reconnect', rejected.length === 0, rejected.slice(0, 5))
    report.details = { clients: p.clients, perClient: p.perClient, drainMs: p.drainMs, heartbeatMs: p.heartbeatMs, termTimes: summary(termTimes), killTimes: summary(killTimes), hangTimes: summary(hangTimes) }
    return report.toJSON()
  } finally {
    for (const t of tracked) t.client.close()
    await stack.close()
  }
}

/** @param {number[]} xs */
function summary (xs) {
  return { p50: percentile(xs, 50), p90: percentile(xs, 90), p99: percentile(xs, 99), max: Math.max(...xs) }
}
