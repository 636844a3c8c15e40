#!/usr/bin/env node
// Redis memory of a symbol's history per WSPS_DELAY_MS of delay: publishes
// simulated quotes of one symbol through the real publish script (with
// history as long as the run) into a scratch redis-server, reads MEMORY
// USAGE of its history stream, and prints bytes per entry and what a
// delay of 15 minutes costs per symbol at several tick rates. The figures
// in docs/protocol.md ("Delayed grants") come from this.
//
//   node tools/history-memory.js [entries=9000]

import { redisKeys } from '../services/shared/src/keys.js'
import { connectRedis } from '../services/shared/src/redis.js'
import { publishArgs, registerScripts } from '../services/shared/src/scripts.js'
import { createSimProvider } from '../services/quote-fetcher/src/providers/sim.js'
import { startRedis } from '../harness/testkit/src/redis.js'

const entries = Number(process.argv[2] ?? 9000)
const DELAY_S = 15 * 60
const RATES = [0.2, 1, 5, 20]

const redis = await startRedis()
const conn = registerScripts(connectRedis({ redisUrl: redis.url, redisMode: 'standalone', redisSentinels: [], redisMasterName: '', redisSentinelPassword: '', redisUsername: '', redisPassword: '', redisTlsCaFile: '' }, { name: 'history-memory' }))
try {
  const keys = redisKeys('wsps')
  const symbol = 'AAPL'
  let t = Date.now()
  const sim = createSimProvider({ seed: 1, volatility: 0.0005, now: () => (t += 200) })
  /** @type {any} */
  let prev
  let seq = 0
  for (let i = 0; i < entries; i++) {
    const [q] = await sim.fetch([symbol], new Map(prev ? [[symbol, prev]] : []), Infinity)
    const { symbol: s, ...rest } = q
    const [n] = await conn.wspsPublish(...publishArgs(keys, [{ symbol: s, body: JSON.stringify({ symbol: s, ...rest }), floor: seq, ts: q.ts }], { ttlMs: 60_000, sharded: false, pushLeaseMs: 0, historySize: entries }))
    seq = Number(n)
    prev = { ...q, seq }
  }
  const bytes = Number(await conn.call('MEMORY', 'USAGE', keys.history(symbol), 'SAMPLES', '0'))
  const len = await conn.xlen(keys.history(symbol))
  const [[, [, sample]]] = /** @type {[string, string[]][]} */ (await conn.xrevrange(keys.history(symbol), '+', '-', 'COUNT', 1))
  const per = bytes / len
  console.log(`history stream: ${len} entries, ${bytes} bytes: ${per.toFixed(1)} bytes per entry (a quote of ${Buffer.byteLength(sample)} bytes as published)`)
  console.log(`\n| ticks/s per symbol | entries in ${DELAY_S / 60} min | Redis memory per symbol |`)
  console.log('| --- | --- | --- |')
  for (const rate of RATES) {
    const n = rate * DELAY_S
    console.log(`| ${rate} | ${n} | ${(n * per / 1024 / 1024).toFixed(2)} MiB |`)
  }
} finally {
  conn.disconnect()
  await redis.close()
}
