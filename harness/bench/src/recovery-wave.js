// One wave of the history section's recovery storm: symbols fed through
// the fetcher's publish API at a tick rate, distinct subscribers in client
// processes (recovery-clients.js) that disconnect, stay away while the
// symbols tick, and reconnect all at once with `since`; what they got.

import { Redis } from 'ioredis'
import { sleep } from '@wsps/testkit'
import { log } from './bench-run.js'
import { start } from './spawn.js'

const CLIENTS_MAIN = new URL('./recovery-clients.js', import.meta.url).pathname

/**
 * @typedef {object} WaveOptions
 * @property {import('./bench-run.js').BenchRun} run recoveryClients, recoveryProcs, recoveryK, recoveryGapMs of its profile
 * @property {import('./servers.js').ServerHandle} gateway
 * @property {import('@wsps/shared/keys').RedisKeys} keys the fetcher's and gateway's key prefix
 * @property {{api: string, headers: Record<string, string>}} fetcher its publish API (push-fetcher.js)
 * @property {(symbol: string, n: number) => object} quote the nth quote of a symbol
 * @property {string[]} symbols this wave's own
 * @property {number} tickRate quotes per second of each symbol (one request per round, every symbol once)
 */

/** @param {WaveOptions} o */
export async function recoveryWave ({ run, gateway, keys, fetcher, quote, symbols, tickRate }) {
  const P = run.P
  let n = 0
  const publishRound = async () => {
    const res = await fetch(fetcher.api, { method: 'POST', headers: fetcher.headers, body: JSON.stringify({ quotes: symbols.map((s) => quote(s, n)) }) })
    await res.arrayBuffer()
    if (!res.ok) throw new Error(`publish API: HTTP ${res.status}`)
    n++
  }
  const redis = new Redis(run.redisUrl, { maxRetriesPerRequest: null })
  /** @type {ReturnType<typeof start>[]} */
  const kids = []
  let feeding = true
  /** @type {Error | null} */
  let feedError = null
  /** @type {Promise<void> | null} */
  let feeder = null
  try {
    await publishRound() // every symbol has a snapshot before anyone subscribes
    const t0 = performance.now()
    feeder = (async () => {
      for (let i = 1; feeding; i++) {
        await publishRound()
        const wait = t0 + i * 1000 / tickRate - performance.now()
        if (wait > 0) await sleep(wait)
      }
    })().catch((err) => { feedError = err })
    const fed = () => { if (feedError) throw new Error(`the feeder stopped: ${feedError.message}`) }
    const per = Math.ceil(P.recoveryClients / P.recoveryProcs)
    for (let p = 0; p < P.recoveryProcs; p++) {
      const kid = start(process.execPath, [CLIENTS_MAIN], { core: run.loadCore, name: `recovery-clients-${p}` })
      kids.push(kid)
      await kid.waitLine((l) => l.type === 'ready', 10_000)
    }
    /** One command to every process; each one's answer of that type. */
    const all = (/** @type {object} */ cmd, /** @type {string} */ type, /** @type {(p: number) => object} */ extra = () => ({})) => Promise.all(kids.map((k, p) => {
      const from = k.lines.length
      k.send({ ...cmd, ...extra(p) })
      return k.waitLine((l) => l.type === type || l.type === 'error', 120_000, from).then((l) => {
        if (l.type === 'error') throw new Error(`recovery clients ${p}: ${l.error}`)
        return l
      })
    }))
    // Client i watches symbols i*K .. i*K+K-1 (mod S): every symbol alike.
    const clientsOf = (/** @type {number} */ p) => Array.from({ length: Math.max(0, Math.min(per, P.recoveryClients - p * per)) }, (_, j) =>
      Array.from({ length: P.recoveryK }, (_, m) => symbols[((p * per + j) * P.recoveryK + m) % symbols.length]))
    const url = `${gateway.url}/ws`
    const t = Date.now()
    const connected = await all({ cmd: 'connect', url }, 'connected', (p) => ({ clients: clientsOf(p) }))
    const held = connected.reduce((a, l) => a + l.connected, 0)
    log(`  ${tickRate} ticks/s per symbol: ${held} of ${P.recoveryClients} clients subscribed (distinct, ${P.recoveryK} of ${symbols.length} symbols each) in ${Date.now() - t} ms; live for 1 s`)
    if (held === 0) throw new Error('no client subscribed')
    await sleep(1000)
    await all({ cmd: 'disconnect' }, 'disconnected')
    await sleep(P.recoveryGapMs)
    fed()
    // Up to live: the newest seq of each symbol when the wave begins.
    const seqs = await redis.mget(...symbols.map((s) => keys.seq(s)))
    const targets = Object.fromEntries(symbols.map((s, i) => [s, Number(seqs[i])]))
    const before = await gateway.metrics?.()
    const answers = await all({ cmd: 'reconnect', url, targets, timeoutMs: 60_000, settleMs: 1000 }, 'recovered')
    const after = await gateway.metrics?.()
    fed()
    const result = summary(answers)
    Object.assign(result, { symbols: symbols.length, symbolsPerClient: P.recoveryK, tickRate, awayMs: P.recoveryGapMs, gatewayMetrics: before && after ? metricDelta(before, after) : null })
    log(`  ${result.perClientMs.n} of ${result.clients} clients recovered${result.allRecoveredMs === null ? '' : `, all in ${result.allRecoveredMs} ms`} (p50 ${result.perClientMs.p50} p99 ${result.perClientMs.p99} ms); all up to live in ${result.allUpToLiveMs ?? 'n/a'} ms; replayed ${result.replayed} of ${result.missed} missed ticks; ticks lost ${result.ticksLost}; recovered true ${result.recovered.true} false ${result.recovered.false}`)
    return result
  } finally {
    feeding = false
    await feeder
    for (const k of kids) await k.stop('SIGTERM', { graceMs: 3000, killAfterMs: 3000 })
    redis.disconnect()
  }
}

/**
 * The client processes' `recovered` lines summed into one wave's result.
 *
 * @param {any[]} answers
 */
export function summary (answers) {
  const ms = answers.flatMap((a) => a.ms).sort((a, b) => a - b)
  const q = (/** @type {number} */ p) => (ms.length ? ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] : null)
  const sum = (/** @type {string} */ k) => answers.reduce((a, l) => a + l[k], 0)
  const unfinished = sum('unfinished')
  const notRecovered = sum('notRecovered')
  const startedAt = Math.min(...answers.map((a) => a.startedAt))
  return {
    clients: sum('clients'),
    unfinished,
    notRecovered,
    closed: sum('closed'),
    /** From the first process's start of the wave to the last client recovered (null: some did not). */
    allRecoveredMs: unfinished === 0 && notRecovered === 0 ? Math.max(...answers.map((a) => a.doneAt)) - startedAt : null,
    /** ...to the last client up to live, recovered or not (null: some never were). */
    allUpToLiveMs: unfinished === 0 ? Math.max(...answers.map((a) => a.liveAt)) - startedAt : null,
    perClientMs: { n: ms.length, p50: q(0.5), p99: q(0.99), max: ms.length ? ms[ms.length - 1] : null },
    missed: sum('missed'),
    replayed: sum('replayed'),
    ticksLost: sum('ticksLost'),
    gaps: sum('gaps'),
    dups: sum('dups'),
    recovered: { true: sum('recoveredTrue'), false: sum('recoveredFalse'), missing: sum('recoveredMissing') }
  }
}

/**
 * The gateway's recovery and gap-fill counters that moved during the wave.
 *
 * @param {Record<string, number>} a
 * @param {Record<string, number>} b
 */
function metricDelta (a, b) {
  /** @type {Record<string, number>} */
  const out = {}
  for (const [k, v] of Object.entries(b)) {
    if (!/^wsps_gateway_(recover|gap_)/.test(k)) continue
    const d = v - (a[k] ?? 0)
    if (d !== 0) out[k] = d
  }
  return out
}
