// Redis killed (-9) and restarted, several times, under two gateways, two
// fetchers and a few hundred clients: sockets stay open, /readyz follows
// Redis, every subscription comes back on every pod, fresh snapshots are
// sent and updates resume within 5 s of Redis returning; nothing crashes.

import { Redis } from 'ioredis'
import { LeanClient } from '../lib/lean-client.js'
import { Report } from '../lib/report.js'
import { Stack, getJson, sleep, waitFor } from '../../testkit/src/index.js'

/**
 * @param {{cycles?: number, downMs?: number, clients?: number, symbols?: number, subsPerClient?: number}} params
 * @param {(line: string) => void} log
 */
export async function run (params, log) {
  const p = { cycles: 3, downMs: 3000, clients: 300, symbols: 150, subsPerClient: 10, ...params }
  const report = new Report()
  const stack = await new Stack().start()
  const redis = stack.redis
  /** @type {LeanClient[]} */
  const clients = []
  try {
    const gws = await Promise.all([0, 1].map(() => stack.gateway({ WSPS_UNSUBSCRIBE_DELAY_MS: 5000 })))
    const fetchers = await Promise.all([0, 1].map(() => stack.fetcher({ WSPS_FETCH_INTERVAL_MS: 250, WSPS_SCHEDULE_TICK_MS: 25 })))
    const procs = [...gws, ...fetchers]
    const symbols = Array.from({ length: p.symbols }, (_, i) => `RD${i}`)
    /** @type {Set<string>[]} symbols watched per gateway */
    const watched = gws.map(() => new Set())
    for (let i = 0; i < p.clients; i++) {
      const g = i % gws.length
      const c = await LeanClient.connect(gws[g].wsUrl)
      const subs = Array.from({ length: p.subsPerClient }, (_, k) => symbols[(i * 13 + k * 17) % symbols.length])
      await c.sub([...new Set(subs)])
      for (const s of subs) watched[g].add(s)
      clients.push(c)
    }
    log(`${clients.length} clients on ${gws.length} gateways watching ${p.symbols} symbols`)
    await waitFor(() => clients.every((c) => c.allSince(0, 'snap')), { timeout: 30_000, message: 'every client snapshotted' })

    const probe = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200 })
    probe.on('error', () => {})
    /** Subscriber-connection channel count per gateway, from Redis's CLIENT LIST. */
    const channels = async () => {
      const list = /** @type {string} */ (await probe.client('LIST'))
      return gws.map((g) => Number(new RegExp(`name=wsps-gw-sub-${g.name} .* sub=(\\d+)`).exec(list)?.[1] ?? -1))
    }
    await probe.connect()
    const resume = []
    const notReady = []
    const readyAgain = []
    let snapsResent = 0
    for (let cycle = 1; cycle <= p.cycles; cycle++) {
      const t0 = Date.now()
      await waitFor(() => clients.every((c) => c.allSince(t0)), { timeout: 10_000, message: 'every symbol updating before the kill' })
      const snapsBefore = clients.reduce((n, c) => n + [...c.symbols.values()].reduce((m, s) => m + s.snaps, 0), 0)
      const killedAt = Date.now()
      await redis.kill()
      await waitFor(async () => {
        const rs = await Promise.all(gws.map((g) => getJson(`${g.url}/readyz`)))
        return rs.every((x) => x.status === 503)
      }, { timeout: 10_000, interval: 50, message: '/readyz 503 on every gateway' })
      notReady.push(Date.now() - killedAt)
      const health = await Promise.all(gws.map((g) => getJson(`${g.url}/healthz`)))
      report.check(`cycle ${cycle}: /healthz stays 200 without Redis`, health.every((h) => h.status === 200))
      await sleep(p.downMs)
      await redis.start()
      const backAt = Date.now()
      await waitFor(async () => (await Promise.all(gws.map((g) => getJson(`${g.url}/readyz`)))).every((x) => x.status === 200),
        { timeout: 30_000, interval: 50, message: '/readyz 200 again' })
      readyAgain.push(Date.now() - backAt)
      // Updates resumed: every symbol of every client got a fresh snapshot
      // after Redis came back, and a quote after that snapshot.
      await waitFor(() => clients.every((c) => [...c.symbols.values()].every((s) => s.lastSnapAt > backAt && s.lastAt > s.lastSnapAt)),
        { timeout: 30_000, interval: 20, message: 'snapshots and updates after Redis returned' })
      resume.push(Date.now() - backAt)
      snapsResent += clients.reduce((n, c) => n + [...c.symbols.values()].reduce((m, s) => m + s.snaps, 0), 0) - snapsBefore
      const held = await channels()
      report.check(`cycle ${cycle}: every pod resubscribed every watched symbol`, held.every((n, i) => n === watched[i].size),
        `channels ${held} for watched ${watched.map((w) => w.size)}`)
      log(`cycle ${cycle}: /readyz 503 after ${notReady.at(-1)} ms, ready ${readyAgain.at(-1)} ms and all updating ${resume.at(-1)} ms after Redis returned`)
    }
    probe.disconnect()
    report.figure('updates resumed after Redis returned (max of cycles)', Math.max(...resume), 'ms', { max: 5000 })
    report.figure('/readyz false after Redis died (max)', Math.max(...notReady), 'ms', { max: 5000 })
    report.figure('/readyz true after Redis returned (max)', Math.max(...readyAgain), 'ms')
    report.figure('fresh snapshots sent after restarts', snapsResent, 'quotes', { min: p.cycles * clients.length * p.subsPerClient * 0.9 })
    const closed = clients.filter((c) => c.closeCode !== null).length
    report.figure('client sockets closed by the restarts', closed, 'sockets', { max: 0 })
    const problems = clients.flatMap((c) => c.problems)
    report.check('no gap or stray quote at any client', problems.length === 0, problems.slice(0, 5))
    report.check('no gateway or fetcher exited', procs.every((x) => x.proc.exitCode === null && x.proc.signalCode === null))
    report.details = { resume, notReady, readyAgain, clients: clients.length, cycles: p.cycles }
    return report.toJSON()
  } finally {
    for (const c of clients) c.terminate()
    await stack.close()
  }
}
