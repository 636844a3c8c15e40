#!/usr/bin/env node
// The one Redis publisher every server in the bench is fed from. Publishes
// full quotes (the fetcher's shape: seq first, then symbol, ts = Date.now())
// on wsps:{SYM}:q at a controlled rate, symbols drawn uniformly at random
// (--order=cycle: in turn, so every symbol is published once per
// symbols/rate seconds; `make capacity` relies on that to expect an update
// on every connection within a bounded hold).
//
// stdin (JSON lines):  {"cmd":"rate","rate":R,"prefix":P[,"symbols":N]}  quotes per second on P's
//                                                      channels (0: pause), drawn from the first N symbols (default all)
//                      {"cmd":"setLast","prefix":P}         SET P:{SYM}:last of every symbol to its current quote
// Each prefix is an independent stream (own seq per symbol).
// stdout (JSON lines): {"type":"ready"}, then {"type":"tick","t":ms,"published":n,"target":R,"perSymbol":{i:n}} every second
// Exits when stdin closes.

import { createInterface } from 'node:readline'
import { Redis } from 'ioredis'
import { parseFlags } from './cli.js'

const args = parseFlags({ redis: { type: 'string' }, symbols: { type: 'string' }, prefix: { type: 'string' }, order: { type: 'string' } })
const redisUrl = args.redis ?? 'redis://127.0.0.1:6379'
const S = Number(args.symbols ?? 1000)
const prefix = args.prefix ?? 'wsps'
const CYCLE = args.order === 'cycle'
if (args.order !== undefined && !CYCLE && args.order !== 'random') throw new Error(`--order: random or cycle, not ${args.order}`)
let cursor = 0

const redis = new Redis(redisUrl, { enableAutoPipelining: false, maxRetriesPerRequest: null })
const symbols = Array.from({ length: S }, (_, i) => `S${String(i).padStart(4, '0')}`)

let seed = 12345
const rand = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  return seed / 0x80000000
}

/**
 * One independent stream per key prefix (each server under test has its
 * own, so several can hold their clients at once while only one is fed).
 * @type {Map<string, {channels: string[], lastKeys: string[], state: ReturnType<typeof freshState>}>}
 */
const streams = new Map()
function freshState () {
  return symbols.map((symbol, i) => {
    const price = 20 + (i % 500)
    return { symbol, seq: 0, bid: price - 0.01, ask: price + 0.01, last: price, bidSize: 100, askSize: 200, volume: 0, open: price, high: price, low: price, prevClose: price }
  })
}
/** @param {string} p */
function stream (p) {
  let st = streams.get(p)
  if (!st) {
    st = { channels: symbols.map((s) => `${p}:{${s}}:q`), lastKeys: symbols.map((s) => `${p}:{${s}}:last`), state: freshState() }
    streams.set(p, st)
  }
  return st
}
let current = stream(prefix)

/** @param {number} i */
function next (i) {
  const q = current.state[i]
  q.seq++
  const move = Math.round((rand() - 0.5) * 10) / 100
  q.last = Math.round((q.last + move) * 100) / 100
  q.bid = Math.round((q.last - 0.01) * 100) / 100
  q.ask = Math.round((q.last + 0.01) * 100) / 100
  q.bidSize = 100 * (1 + Math.floor(rand() * 20))
  q.volume += 100 * (1 + Math.floor(rand() * 50))
  if (q.last > q.high) q.high = q.last
  if (q.last < q.low) q.low = q.last
  return encode(q, Date.now())
}

/** @param {ReturnType<typeof freshState>[0]} q @param {number} ts */
function encode (q, ts) {
  return `{"seq":${q.seq},"symbol":"${q.symbol}","ts":${ts},"bid":${q.bid},"ask":${q.ask},"last":${q.last},"bidSize":${q.bidSize},"askSize":${q.askSize},"volume":${q.volume},"open":${q.open},"high":${q.high},"low":${q.low},"prevClose":${q.prevClose}}`
}

/** @param {string} p */
async function setLast (p) {
  const st = stream(p)
  const pipe = redis.pipeline()
  const now = Date.now()
  st.state.forEach((q, i) => pipe.set(st.lastKeys[i], encode(q, now)))
  await pipe.exec()
}

let rate = 0
/** How many of the symbols (the first ones) the current rate is spread over. */
let drawn = S
let sent = 0
let rateStart = performance.now()
let published = 0
/** Quotes published per symbol index since the last tick (sparse: index -> count). */
let perSymbol = new Map()
let inFlight = 0
const MAX_BATCH = 5000

function pump () {
  if (rate > 0 && inFlight < 4) {
    const due = Math.floor((performance.now() - rateStart) * rate / 1000) - sent
    // Never build an unbounded backlog: a publisher that cannot keep up says so in its ticks.
    const n = Math.min(due, MAX_BATCH)
    if (n > 0) {
      const pipe = redis.pipeline()
      for (let j = 0; j < n; j++) {
        const i = CYCLE ? cursor++ % drawn : Math.floor(rand() * drawn)
        pipe.publish(current.channels[i], next(i))
        perSymbol.set(i, (perSymbol.get(i) ?? 0) + 1)
      }
      sent += n
      if (due > MAX_BATCH * 4) sent = due // far behind: drop the backlog instead of bursting it
      inFlight++
      pipe.exec().then(() => { inFlight--; published += n }, () => { inFlight-- })
    }
  }
  setTimeout(pump, 1)
}

// Commands, one JSON object per line on stdin.
createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return
  const msg = JSON.parse(line)
  if (msg.cmd === 'rate') {
    rate = Number(msg.rate)
    drawn = Math.min(S, Math.max(1, Number(msg.symbols ?? S)))
    current = stream(msg.prefix ?? prefix)
    sent = 0
    rateStart = performance.now()
  } else if (msg.cmd === 'setLast') {
    setLast(msg.prefix ?? prefix).then(() => out({ type: 'setLast', prefix: msg.prefix ?? prefix }))
  }
})
process.stdin.on('end', () => process.exit(0))

/** @param {object} o */
function out (o) { process.stdout.write(JSON.stringify(o) + '\n') }

setInterval(() => {
  out({ type: 'tick', t: Date.now(), published, target: rate, prefix: current === streams.get(prefix) ? prefix : [...streams].find(([, v]) => v === current)?.[0], perSymbol: Object.fromEntries(perSymbol) })
  published = 0
  perSymbol = new Map()
}, 1000)

await redis.ping()
await setLast(prefix)
out({ type: 'ready' })
pump()
