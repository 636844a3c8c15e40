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
import { connect } from 'node:net'
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
const MAX_BATCH = 5000

/**
 * The publishing connection: PUBLISH commands written as RESP by hand, a
 * batch per write. Through ioredis each publish was a command object and a
 * promise, ~0.3 of a core at 17k publishes/s, and that core is the load
 * generator's: the bench's fastest steps publish that much, and a publisher
 * that takes the load core from the load generator lowers every server's
 * measured max. Every PUBLISH answers with one line (an integer, or an
 * error), so a batch is done when as many lines came back.
 */
class RawPublisher {
  /** @type {import('node:net').Socket} */
  #socket
  /** Batches in flight, oldest first: their size and the replies still owed. */
  #owed = /** @type {{n: number, left: number}[]} */ ([])
  #errors = 0
  /** The head of a reply whose newline has not arrived yet. */
  #tail = ''
  /** AUTH was sent and not answered yet: its reply is the first line. */
  #authing = false
  /** @type {(n: number) => void} */
  #onBatch

  /**
   * @param {string} url
   * @param {(n: number) => void} onBatch called with each batch's size once
   *   Redis answered all of it, in the order the batches were written
   */
  constructor (url, onBatch) {
    this.#onBatch = onBatch
    const u = new URL(url)
    if (u.protocol !== 'redis:') throw new Error(`--redis: a redis:// URL, not ${url}`)
    this.#socket = connect({ host: u.hostname || '127.0.0.1', port: Number(u.port || 6379), noDelay: true })
    if (u.password) {
      this.#authing = true
      this.#socket.write(command(['AUTH', ...(u.username ? [decodeURIComponent(u.username)] : []), decodeURIComponent(u.password)]))
    }
    this.#socket.setEncoding('latin1')
    this.#socket.on('data', (/** @type {string} */ chunk) => this.#read(chunk))
    this.#socket.on('error', (err) => fail(err.message))
    this.#socket.on('close', () => fail('Redis closed the connection'))
  }

  /** Batches written and not yet answered. */
  get inFlight () { return this.#owed.length }

  /**
   * Writes one batch (see onBatch).
   * @param {string} resp the batch's commands, RESP-encoded
   * @param {number} n how many commands it holds
   */
  write (resp, n) {
    this.#owed.push({ n, left: n })
    this.#socket.write(resp)
  }

  /** @param {string} chunk */
  #read (chunk) {
    if (this.#tail) chunk = this.#tail + chunk
    let at = 0
    for (;;) {
      const nl = chunk.indexOf('\n', at)
      if (nl < 0) break
      const error = chunk.charCodeAt(at) === 45 // '-'
      if (this.#authing) {
        // Every PUBLISH after a refused AUTH would be refused too.
        if (error) fail(`Redis refused AUTH: ${chunk.slice(at + 1, nl).trim()}`)
        this.#authing = false
        at = nl + 1
        continue
      }
      if (error && this.#errors++ < 5) process.stderr.write(`publisher: Redis said ${chunk.slice(at + 1, nl).trim()}\n`)
      at = nl + 1
      const batch = this.#owed[0]
      if (--batch.left === 0) {
        this.#owed.shift()
        this.#onBatch(batch.n)
      }
    }
    // A chunk can end inside a reply: its head waits for its newline.
    this.#tail = chunk.slice(at)
  }
}

/**
 * The bench reads the publisher's exit as a failed run: say why first.
 * @param {string} why
 * @returns {never}
 */
function fail (why) {
  process.stderr.write(`publisher: ${why}\n`)
  process.exit(1)
}

/** @param {string[]} args @returns {string} one RESP command */
function command (args) {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`
}

const raw = new RawPublisher(redisUrl, (n) => { published += n })
/** Each channel's command up to the message: the fixed part of its PUBLISH. */
const heads = new Map()
/** @param {string} channel */
const headOf = (channel) => {
  let h = heads.get(channel)
  if (h === undefined) heads.set(channel, (h = `*3\r\n$7\r\nPUBLISH\r\n$${channel.length}\r\n${channel}\r\n`))
  return h
}

function pump () {
  if (rate > 0 && raw.inFlight < 4) {
    const due = Math.floor((performance.now() - rateStart) * rate / 1000) - sent
    // Never build an unbounded backlog: a publisher that cannot keep up says so in its ticks.
    const n = Math.min(due, MAX_BATCH)
    if (n > 0) {
      let resp = ''
      for (let j = 0; j < n; j++) {
        const i = CYCLE ? cursor++ % drawn : Math.floor(rand() * drawn)
        // Quotes are ASCII, so a string's length is its byte length.
        const quote = next(i)
        resp += `${headOf(current.channels[i])}$${quote.length}\r\n${quote}\r\n`
        perSymbol.set(i, (perSymbol.get(i) ?? 0) + 1)
      }
      sent += n
      if (due > MAX_BATCH * 4) sent = due // far behind: drop the backlog instead of bursting it
      raw.write(resp, n)
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
