// History and recovery (issue 24, docs/protocol.md "Recovery"): what the
// per-symbol history in Redis costs and what it buys.
//
// 1. Ingest with history off and on: the fetcher's Publisher (the publish
//    script through ioredis pipelines, as the publish API calls it) against
//    the bench's redis-server with WSPS_HISTORY_SIZE 0, 100 and 1000, in
//    interleaved rounds. Counted: quotes the script published (seq
//    assigned, PUBLISH, and the latest quote: its SET with history off, the
//    stream append, which holds it, with history on) per second of wall
//    time, Redis CPU per published quote, and Redis command time per quote
//    (INFO commandstats: the script, the commands it ran, the lease ZADD).
//    The same again with a replica attached to the bench's Redis, history
//    100, with and without WSPS_PUBLISH_WAIT_REPLICAS=1 (issue 25, item 5):
//    what waiting for the replica costs.
// 2. Redis memory per symbol of history: MEMORY USAGE of a full stream and
//    at 100 and 1000 entries of a realistic quote, and of the epoch key.
// 3. Recovery storm: a real fetcher (history on, 100) fed through its
//    publish API and a real gateway; distinct subscribers (Node `ws`
//    clients over processes: recovery-wave.js, recovery-clients.js)
//    disconnect, stay away while ticks are published, and reconnect all at
//    once with `since`.

import { Redis } from 'ioredis'
import { Publisher } from '@wsps/quote-fetcher/publisher'
import { redisKeys } from '@wsps/shared/keys'
import { registerScripts } from '@wsps/shared/scripts'
import { execFileSync } from 'node:child_process'
import { sleep, startRedis, waitFor } from '@wsps/testkit'
import { CpuMeter } from '@wsps/testkit/proc'
import { SERVERS } from '../servers.js'
import { log, median, round } from '../bench-run.js'
import { startPushFetcher } from '../push-fetcher.js'
import { recoveryWave } from '../recovery-wave.js'

/** The fetcher's defaults (services/quote-fetcher/src/config.js). */
const QUOTE_TTL_MS = 86_400_000
const HISTORY_TTL_MS = 120_000
const PUSH_LEASE_MS = 5000
const WAIT_TIMEOUT_MS = 500

/**
 * @param {import('../bench-run.js').BenchRun} run
 */
export async function history (run, { ingestOnly = false } = {}) {
  log('history: ingest with history off and on')
  const ingest = await historyIngest(run)
  log('history: ingest with a replica, waiting for it and not')
  const replication = await replicationIngest(run).catch((err) => ({ error: String(err.message) }))
  if (ingestOnly) return { ingest, replication }
  log('history: Redis memory per symbol')
  const memory = await historyMemory(run)
  log(`history: ${run.P.recoveryClients} clients resuming at once`)
  const recovery = await recoveryStorm(run)
  return { ingest, replication, memory, recovery }
}

/**
 * A realistic quote of a symbol, the nth of its random walk (the shared
 * publisher's shape: every field of a full quote).
 *
 * @param {string} symbol
 * @param {number} n
 */
export function quoteOf (symbol, n) {
  const last = Math.round((100 + 5 * Math.sin(n / 7) + (n % 13) / 10) * 100) / 100
  return {
    symbol, ts: Date.now(), bid: round(last - 0.01, 2), ask: round(last + 0.01, 2), last,
    bidSize: 100 * (1 + (n % 20)), askSize: 200, volume: 1_000_000 + 100 * n, open: 100, high: 105.5, low: 94.5, prevClose: 99.8
  }
}

/**
 * @param {string} redisUrl
 * @param {string} prefix
 * @param {number} historySize
 * @param {number} [waitReplicas] WSPS_PUBLISH_WAIT_REPLICAS
 * @param {Record<string, number>} [waits] counts of the waits' outcomes
 */
function publisherOf (redisUrl, prefix, historySize, waitReplicas = 0, waits = {}) {
  const redis = registerScripts(new Redis(redisUrl, { enableAutoPipelining: false, maxRetriesPerRequest: null }))
  return new Publisher({
    redis, keys: redisKeys(prefix), ttlMs: QUOTE_TTL_MS, sharded: false, historySize, historyTtlMs: HISTORY_TTL_MS,
    waitReplicas, waitTimeoutMs: WAIT_TIMEOUT_MS, onWait: (r) => { waits[r] = (waits[r] ?? 0) + 1 }
  })
}

/**
 * Part 1. Each history size has its own key prefix and Publisher, its
 * streams filled to their cap first (a stream still growing is not
 * trimmed: cheaper than the steady state). Then rounds (compare()).
 * Reported per size: the median over rounds, and its ratio to history off.
 *
 * @param {import('../bench-run.js').BenchRun} run
 */
async function historyIngest (run) {
  const subjects = run.P.historySizes.map((size) => ({ size, wait: 0, label: `history ${size}`, waits: {}, pub: publisherOf(run.redisUrl, `hi${size}`, size) }))
  const rows = await compare(run, subjects)
  const off = rows.find((x) => x.historySize === 0)
  // vsOff: wall-clock rate against history off. vsOffRedis: the same for
  // the rate one Redis core sustains (history off's Redis CPU per quote over
  // this size's): what is left of ingest where Redis is the bottleneck, and
  // less moved by outside load than the wall-clock rate.
  return rows.map((x) => ({
    ...x,
    vsOff: off ? round(x.quotesPerSec / off.quotesPerSec, 3) : null,
    vsOffRedis: off?.redisUsPerQuote && x.redisUsPerQuote ? round(off.redisUsPerQuote / x.redisUsPerQuote, 3) : null,
    vsOffCommands: off?.commandUsPerQuote && x.commandUsPerQuote ? round(off.commandUsPerQuote / x.commandUsPerQuote, 3) : null
  }))
}

/**
 * Part 1b (issue 25, item 5). A replica of the bench's Redis (a redis-server
 * of its own, on the server core: idle in this section), attached for this
 * part only; history 100, published without waiting and with
 * WSPS_PUBLISH_WAIT_REPLICAS=1 (timeout 500 ms), in interleaved rounds as
 * in part 1. Both pay for the replication stream; the difference is the
 * WAIT: one more command per call, and calls on a connection taking turns
 * (WAIT holds the connection until the replica acknowledged).
 *
 * @param {import('../bench-run.js').BenchRun} run
 */
async function replicationIngest (run) {
  const replica = await startRedis()
  try {
    if (run.serverCore !== null) execFileSync('taskset', ['-pc', run.serverCore, String(replica.pid)], { stdio: 'ignore' })
    const r = new Redis(replica.url)
    try {
      const primary = new URL(run.redisUrl)
      await r.call('REPLICAOF', primary.hostname, primary.port)
      await waitFor(async () => /master_link_status:up/.test(await r.info('replication')), { timeout: 20_000, message: 'the replica in sync' })
    } finally {
      r.disconnect()
    }
    const subjects = [0, 1].map((wait) => {
      /** @type {Record<string, number>} */
      const waits = {}
      return { size: 100, wait, label: `wait ${wait}`, waits, pub: publisherOf(run.redisUrl, `hw${wait}`, 100, wait, waits) }
    })
    const rows = await compare(run, subjects)
    const off = rows.find((x) => x.waitReplicas === 0)
    return rows.map((x) => ({
      ...x,
      vsNoWait: off ? round(x.quotesPerSec / off.quotesPerSec, 3) : null,
      vsNoWaitRedis: off?.redisUsPerQuote && x.redisUsPerQuote ? round(off.redisUsPerQuote / x.redisUsPerQuote, 3) : null
    }))
  } finally {
    await replica.close()
  }
}

/**
 * Fills each subject's streams, then rounds: in each, every subject
 * publishes for historyMeasureMs (historyConcurrency calls of historyBatch
 * quotes in flight, pushed quotes as through the publish API), in an order
 * that rotates, so outside load hits all alike. Per subject: the median
 * over rounds of quotes/s and of Redis CPU per quote.
 *
 * @param {import('../bench-run.js').BenchRun} run
 * @param {{size: number, wait: number, label: string, waits: Record<string, number>, pub: Publisher}[]} list
 */
async function compare (run, list) {
  const P = run.P
  const symbols = Array.from({ length: P.historySymbols }, (_, i) => `H${i}`)
  const subjects = list.map((x) => ({ ...x, rounds: /** @type {{perSec: number, redisUsPerQuote: number | null, commands: Record<string, number>}[]} */ ([]) }))
  const admin = new Redis(run.redisUrl)
  let n = 0
  const batch = () => Array.from({ length: P.historyBatch }, () => quoteOf(symbols[n % symbols.length], n++))
  try {
    for (const x of subjects) {
      // Fill: size + 1 quotes per symbol (at least one round of all).
      const total = (x.size + 1) * symbols.length
      for (let done = 0; done < total; done += P.historyBatch) await x.pub.publish(batch(), { pushLeaseMs: PUSH_LEASE_MS })
    }
    for (let r = 0; r < P.historyRounds; r++) {
      const order = subjects.map((_, i) => subjects[(i + r) % subjects.length])
      for (const x of order) {
        const redisCpu = new CpuMeter(run.redisPids)
        const stats0 = await commandStats(admin)
        let published = 0
        const t0 = performance.now()
        const end = t0 + P.historyMeasureMs
        await Promise.all(Array.from({ length: P.historyConcurrency }, async () => {
          while (performance.now() < end) {
            // Not `published += (await ...)`: that reads the sum before the
            // await and so drops what the other callers added meanwhile (it
            // counted about one call in four, and made Redis look 4-5 times
            // as expensive per quote as it is).
            const { published: got } = await x.pub.publish(batch(), { pushLeaseMs: PUSH_LEASE_MS })
            published += got
          }
        }))
        const seconds = (performance.now() - t0) / 1000
        const cores = run.redisPid ? redisCpu.read() : null
        const perSec = published / seconds
        const stats1 = await commandStats(admin)
        /** @type {Record<string, number>} µs per quote of each command (the script's own included) */
        const commands = {}
        for (const [name, [, usec]] of stats1) {
          const spent = usec - (stats0.get(name)?.[1] ?? 0)
          if (spent > 0 && name !== 'info') commands[name] = round(spent / published, 3)
        }
        x.rounds.push({ perSec: Math.round(perSec), redisUsPerQuote: cores === null ? null : round(cores * 1e6 / perSec, 2), commands })
        await sleep(200)
      }
      log(`  round ${r + 1}: ${order.map((x) => {
        const last = x.rounds[x.rounds.length - 1]
        return `${x.label}: ${last.perSec} quotes/s, Redis ${last.redisUsPerQuote} µs per quote (commands ${round((last.commands.evalsha ?? 0) + (last.commands.zadd ?? 0), 2)})`
      }).join('; ')}`)
    }
  } finally {
    admin.disconnect()
    for (const x of subjects) {
      x.pub.stop()
      x.pub.redis.disconnect()
    }
  }
  return subjects.map((x) => {
    const us = /** @type {number[]} */ (x.rounds.map((r) => r.redisUsPerQuote).filter((v) => v !== null))
    /** @type {Record<string, number>} median over rounds of each command's µs per quote */
    const commands = {}
    for (const name of new Set(x.rounds.flatMap((r) => Object.keys(r.commands)))) commands[name] = median(x.rounds.map((r) => r.commands[name] ?? 0))
    // The script (EVALSHA: the commands it ran included) and the lease ZADD
    // beside it: Redis' time executing commands, without reading them off
    // the socket and writing replies.
    const commandUsPerQuote = median(x.rounds.map((r) => (r.commands.evalsha ?? 0) + (r.commands.zadd ?? 0)))
    return { historySize: x.size, waitReplicas: x.wait, quotesPerSec: median(x.rounds.map((r) => r.perSec)), redisUsPerQuote: us.length ? median(us) : null, commandUsPerQuote: commandUsPerQuote || null, commands, rounds: x.rounds, waits: x.waits }
  })
}

/**
 * INFO commandstats: command -> [calls, µs spent] since the server started
 * (commands a script runs are counted too, and in the script's own time).
 *
 * @param {Redis} redis
 * @returns {Promise<Map<string, [number, number]>>}
 */
async function commandStats (redis) {
  /** @type {Map<string, [number, number]>} */
  const out = new Map()
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/gm)) out.set(m[1], [Number(m[2]), Number(m[3])])
  return out
}

/**
 * Part 2. One symbol per size, published size + 250 realistic quotes (so
 * the stream is full and has been trimmed: trimming is by whole stream
 * nodes of up to 100 entries, so it holds size to size + 100), then MEMORY
 * USAGE (SAMPLES 0: every entry) of its stream.
 *
 * @param {import('../bench-run.js').BenchRun} run
 */
async function historyMemory (run) {
  const out = []
  for (const size of run.P.historySizes.filter((s) => s > 0)) {
    const prefix = `hm${size}`
    const pub = publisherOf(run.redisUrl, prefix, size)
    try {
      const keys = redisKeys(prefix)
      for (let n = 0; n < size + 250; n += 100) await pub.publish(Array.from({ length: Math.min(100, size + 250 - n) }, (_, i) => quoteOf('MEM', n + i)))
      const r = pub.redis
      const [stream, epochKey, entries, newest] = await Promise.all([
        r.call('MEMORY', 'USAGE', keys.history('MEM'), 'SAMPLES', '0'),
        r.call('MEMORY', 'USAGE', keys.epoch('MEM')),
        r.xlen(keys.history('MEM')),
        r.xrevrange(keys.history('MEM'), '+', '-', 'COUNT', 1)
      ])
      const messageBytes = Buffer.byteLength(newest[0]?.[1]?.[1] ?? '')
      const row = { historySize: size, entries, streamBytes: Number(stream), perEntryBytes: round(Number(stream) / entries, 1), messageBytes, epochKeyBytes: Number(epochKey) }
      out.push(row)
      log(`  history ${size}: ${row.entries} entries, stream ${row.streamBytes} B per symbol (${row.perEntryBytes} B per entry of a ${messageBytes}-byte message); epoch key ${row.epochKeyBytes} B`)
    } finally {
      pub.stop()
      pub.redis.disconnect()
    }
  }
  return out
}

/**
 * Part 3. A real fetcher (history 100) on the load core, a real gateway on
 * the server core; one wave of resuming clients per tick rate
 * (recoveryTickRates), each on symbols of its own (recovery-wave.js).
 *
 * @param {import('../bench-run.js').BenchRun} run
 */
async function recoveryStorm (run) {
  const P = run.P
  const prefix = 'hrec'
  const fetcher = await startPushFetcher({ redisUrl: run.redisUrl, prefix, core: run.loadCore, name: 'bench-history', env: { WSPS_HISTORY_SIZE: '100' } })
  /** @type {import('../servers.js').ServerHandle | null} */
  let gateway = null
  const out = []
  try {
    gateway = await SERVERS.wsps.start({ redisUrl: run.redisUrl, core: run.serverCore, runDir: run.runDir, prefix, env: { WSPS_NODE_NAME: 'bench-history-gw' } })
    for (const tickRate of P.recoveryTickRates) {
      out.push(await recoveryWave({
        run, gateway, keys: redisKeys(prefix), fetcher, quote: quoteOf,
        symbols: Array.from({ length: P.recoverySymbols }, (_, i) => `R${tickRate}X${i}`), tickRate
      }))
    }
  } finally {
    await gateway?.stop()
    await fetcher.stop()
  }
  return out
}
