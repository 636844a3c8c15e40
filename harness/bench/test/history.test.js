// The history section's pure parts: a wave's summary of its client
// processes, and its tables in results.md.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { historySection } from '../src/report.js'
import { summary } from '../src/recovery-wave.js'
import { quoteOf } from '../src/sections/history.js'

test('a wave sums its client processes and takes per-client quantiles over all of them', () => {
  const line = (/** @type {number} */ startedAt, /** @type {number[]} */ ms, more = {}) => ({
    type: 'recovered', startedAt, doneAt: startedAt + Math.max(...ms), liveAt: startedAt + Math.max(...ms), clients: ms.length, unfinished: 0, notRecovered: 0, closed: 0, ms,
    missed: 10, replayed: 10, ticksLost: 0, gaps: 0, dups: 0, recoveredTrue: 5, recoveredFalse: 0, recoveredMissing: 0, ...more
  })
  const s = summary([line(1000, [10, 20, 30]), line(1005, [40, 50], { ticksLost: 2, recoveredFalse: 1 })])
  assert.equal(s.clients, 5)
  assert.equal(s.allRecoveredMs, 55, 'from the first process\'s start to the last client')
  assert.deepEqual(s.perClientMs, { n: 5, p50: 30, p99: 50, max: 50 })
  assert.deepEqual([s.missed, s.replayed, s.ticksLost], [20, 20, 2])
  assert.deepEqual(s.recovered, { true: 10, false: 1, missing: 0 })
  assert.equal(s.allUpToLiveMs, 55)
  const snapped = summary([line(0, [5], { notRecovered: 1, clients: 2, liveAt: 80 })])
  assert.deepEqual([snapped.allRecoveredMs, snapped.allUpToLiveMs], [null, 80], 'a client brought up to live by a snap: not all recovered')
  assert.deepEqual([summary([line(0, [5], { unfinished: 1 })]).allRecoveredMs, summary([line(0, [5], { unfinished: 1 })]).allUpToLiveMs], [null, null], 'a client never up to live: no total')
})

test('the history tables: ingest ratio against the 20% bound, memory per symbol, recovery with ticks lost', () => {
  const p = { historyConcurrency: 4, historyBatch: 100, historySymbols: 100, historyRounds: 3, historyMeasureMs: 1500, recoveryClients: 1000, recoveryProcs: 2, recoveryK: 5, recoveryGapMs: 5000 }
  const md = historySection({
    ingest: [
      { historySize: 0, quotesPerSec: 20_000, vsOff: 1, redisUsPerQuote: 30, vsOffRedis: 1, commandUsPerQuote: 6, vsOffCommands: 1, commands: { evalsha: 5, set: 2, zadd: 1 } },
      { historySize: 100, quotesPerSec: 17_000, vsOff: 0.85, redisUsPerQuote: 33, vsOffRedis: 0.909, commandUsPerQuote: 7.5, vsOffCommands: 0.8, commands: { evalsha: 6.5, set: 1, xadd: 1.75, pexpire: 0.5, zadd: 1 } },
      { historySize: 1000, quotesPerSec: 17_000, vsOff: 0.85, redisUsPerQuote: 45, vsOffRedis: 0.667 }
    ],
    memory: [{ historySize: 100, entries: 100, streamBytes: 28_240, perEntryBytes: 282.4, messageBytes: 204 }],
    recovery: [{ tickRate: 10, symbols: 100, clients: 1000, allRecoveredMs: null, allUpToLiveMs: 2100, unfinished: 0, perClientMs: { n: 990, p50: 900, p99: 2000 }, missed: 250_000, replayed: 249_000, ticksLost: 1000, recovered: { true: 4990, false: 10 }, gaps: 0, dups: 0 }]
  }, p).join('\n')
  assert.match(md, /\| 100 \| 17,000 \| 85% \| 33\.0 \| 91% \| 7\.50 \| 80% \| yes \|/)
  assert.match(md, /\| 1,000 \| 17,000 \| 85% \| 45\.0 \| 67% \| n\/a \| n\/a \| no \|/, 'over the bound per Redis core: not within it')
  assert.match(md, /- history 100: script 6\.50 µs per quote, of which SET 1\.00, XADD 1\.75, PEXPIRE 0\.50; lease ZADD 1\.00/)
  assert.match(md, /\| 100 \| 100 \| 27\.6 KiB \| 282 B \| 204 \|/)
  assert.match(md, /\| 10 \(100 symbols\) \| 1,000 \| not all: 10 not \| 900 \/ 2,000 \(990\) \| 2,100 ms \| 250,000 \| 249,000 \| 1,000 \| 4,990 \/ 10 \| 0 \/ 0 \|/)
  assert.deepEqual(historySection(null, p), [])
  assert.match(historySection({ error: 'boom' }, p).join('\n'), /failed: boom/)
})

test('a realistic quote has every field of a full quote but seq', () => {
  assert.deepEqual(Object.keys(quoteOf('AAPL', 3)).sort(), ['ask', 'askSize', 'bid', 'bidSize', 'high', 'last', 'low', 'open', 'prevClose', 'symbol', 'ts', 'volume'])
})
