// Fakes for gateway unit tests. Integration tests use real Redis and real
// processes (harness/testkit); these isolate one module's logic.

import { random } from '@wsps/testkit/random'
import pino from 'pino'
import { OrderBook, decimal } from '@wsps/protocol/book'
import { decodeServerFrame, encodeServerFrame } from '@wsps/protocol/proto-codec'
import { Connection } from '../src/connection.js'
import { Fanout } from '../src/fanout.js'
import { Hub } from '../src/hub.js'
import { createGatewayMetrics } from '../src/metrics.js'
import { RateLimit } from '@wsps/shared/rate-limit'

export const silent = pino({ level: 'silent' })

let metricsSeq = 0
export const metrics = () => createGatewayMetrics(`test-${metricsSeq++}`)

/**
 * An in-memory Broker that records calls and lets the test publish.
 * `histories` holds each symbol's published quotes (JSON, in seq order), as
 * the publish script keeps them.
 * @returns {import('../src/broker.js').Broker & import('../src/books/book-hub.js').BookSource & {calls: string[][], channels: Set<string>, latestValues: Map<string, string>, histories: Map<string, string[]>, books: Map<string, import('../src/books/book-feed.js').BookState>, bookChannels: Set<string>}}
 */
export function memoryBroker () {
  const channels = new Set()
  /** @type {string[][]} */
  const calls = []
  const latestValues = new Map()
  /** @type {Map<string, string[]>} */
  const histories = new Map()
  return {
    calls,
    channels,
    latestValues,
    histories,
    async history (symbol, fromSeq, toSeq, max) {
      calls.push(['history', symbol, String(fromSeq), String(toSeq)])
      const all = histories.get(symbol) ?? []
      return all.filter((raw) => {
        const { seq } = JSON.parse(raw)
        return seq >= fromSeq && (toSeq === null || seq <= toSeq)
      }).slice(0, max)
    },
    async subscribe (symbols) { calls.push(['subscribe', ...symbols]); for (const s of symbols) channels.add(s); return [] },
    async unsubscribe (symbols) { calls.push(['unsubscribe', ...symbols]); for (const s of symbols) channels.delete(s) },
    async latest (symbols) { return symbols.map((s) => latestValues.get(s) ?? null) },
    async renewDemand (symbols) { calls.push(['demand', ...symbols]) },
    async keepHistory (pins) { calls.push(['pin', ...pins.map(([s, seq]) => `${s}@${seq}`)]) },
    /** @type {Map<string, import('../src/books/book-feed.js').BookState>} the books readBook() answers with */
    books: new Map(),
    /** @type {Set<string>} book channels subscribed */
    bookChannels: new Set(),
    async subscribeBooks (symbols) { calls.push(['subscribeBooks', ...symbols]); for (const s of symbols) this.bookChannels.add(s) },
    async unsubscribeBooks (symbols) { calls.push(['unsubscribeBooks', ...symbols]); for (const s of symbols) this.bookChannels.delete(s) },
    async readBook (symbol) { calls.push(['readBook', symbol]); return this.books.get(symbol) ?? null },
    partition: (symbols) => [symbols],
    ready: () => true,
    channelCount: () => channels.size,
    async close () {}
  }
}

/**
 * A Transport stand-in: records frames (decoded: the objects their JSON,
 * or with `binary` their Protobuf, reads as), lets the test set
 * bufferedAmount.
 *
 * @param {{binary?: boolean}} [options] binary: it speaks `wsps.v1.proto`
 */
export function fakeSocket ({ binary = false } = {}) {
  return {
    binary,
    /**
     * How each frame came: text (JSON, to a JSON socket), binary (built in
     * Protobuf by the gateway), twin (a text frame's binary twin), encoded
     * (one connection's JSON text, encoded as the real transport does)
     * @type {('text' | 'binary' | 'twin' | 'encoded')[]}
     */
    kinds: [],
    /** WebSocket readyState values (ReadyState), for the tests' own checks. */
    readyState: 1,
    get open () { return this.readyState === 1 },
    bufferedAmount: 0,
    /** @type {any[]} */
    sent: [],
    /** @type {{code: number, reason: string} | null} */
    closedWith: null,
    /** @param {import('../src/text-frame.js').TextFrame | string} frame @param {string} _op */
    write (frame, _op) {
      if (this.binary) {
        this.kinds.push(typeof frame === 'string' ? 'encoded' : frame.binary ? 'binary' : 'twin')
        const bytes = typeof frame === 'string' ? encodeServerFrame(JSON.parse(frame)) : frame.binaryTwin.payload
        this.sent.push(decodeServerFrame(/** @type {Uint8Array} */ (bytes)))
        return bytes.length
      }
      this.kinds.push('text')
      this.sent.push(JSON.parse(typeof frame === 'string' ? frame : frame.payload.toString()))
      return typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length
    },
    /** @param {import('@wsps/protocol').Disconnect} d */
    close ({ code, reason }) { this.closedWith = { code, reason }; this.readyState = 2 },
    terminate () { this.readyState = 3 },
    ping () {}
  }
}

export const limits = { sendHighWater: 1000, sendMax: 5000, slowCloseMs: 100, ratePerSec: 100, rateBurst: 100 }

/**
 * A hub with its fanout over an in-memory broker, and a factory of clients
 * on fake sockets. `pass()` runs a fan-out pass now instead of on its timer.
 * @param {{unsubscribeDelayMs?: number, batchMs?: number, tracer?: import('../src/quote-trace.js').QuoteTracer | null}} [options] batchMs: the
 *   fanout's window (default 1000: passes run only when the test calls pass())
 */
export function gatewayParts ({ unsubscribeDelayMs = 0, batchMs = 1000, tracer = null } = {}) {
  const m = metrics()
  const broker = memoryBroker()
  const fanout = new Fanout({ batchMs, metrics: m })
  const hub = new Hub({ broker, fanout, metrics: m, logger: silent, unsubscribeDelayMs, demandLeaseMs: 60000, tracer })
  /** @typedef {{snapshotOf (symbol: string, depth: number, delivery: number): import("../src/text-frame.js").TextFrame | null}} BookSnapshots */
  /** @type {BookSnapshots | null} the books, once a test has some (useBooks) */
  let books = null
  const ctx = {
    metrics: m,
    sendMax: limits.sendMax,
    messageRate: new RateLimit(limits.ratePerSec, limits.rateBurst),
    outbox: {
      metrics: m,
      sendHighWater: limits.sendHighWater,
      slowCloseMs: limits.slowCloseMs,
      latest: (/** @type {string} */ s, /** @type {number} */ d) => hub.latest(s, d),
      bookSnapshot: (/** @type {string} */ s, /** @type {number} */ d, /** @type {number} */ r) => books?.snapshotOf(s, d, r) ?? null
    },
    retry: (/** @type {Connection} */ c) => fanout.retry(c)
  }
  let ids = 0
  /**
   * A connection on a fake socket; `c` is the connection too (what the hub holds).
   * @param {{binary?: boolean}} [options] binary: it speaks `wsps.v1.proto`
   */
  const client = (options = {}) => {
    const ws = fakeSocket(options)
    const conn = new Connection(ws, ctx, { id: ++ids, ip: '', grants: null })
    return { ws, conn, c: conn }
  }
  const pass = () => fanout.passNow()
  /** @param {BookSnapshots} hub a BookHub: slow readers catch up with its snapshots */
  const useBooks = (hub) => { books = hub }
  return { metrics: m, broker, fanout, hub, client, pass, useBooks, limits }
}

/** @param {number} seq @param {Record<string, unknown>} [fields] */
export const quote = (seq, fields = {}, symbol = 'AAPL') => JSON.stringify({ seq, symbol, ts: Date.now(), bid: 1, ask: 2, last: 1.5, ...fields })

export const tick = () => new Promise((resolve) => setImmediate(resolve))

/** @returns {import('../src/fanout.js').PassStats} an empty pass's counts, as the fanout starts each chunk with */
export function passStats () {
  return { frames: 0, snaps: 0, quotes: 0, bytes: 0, conflated: 0, batches: [0, 0, 0, 0, 0], sent: [], traced: [] }
}


/**
 * The publish script's side of one symbol's book, in memory: a reference
 * book, its seq and epoch, the state readBook() answers with, and messages
 * as published (to the hub's onMessage; `dark`: lost on the way).
 * @param {ReturnType<typeof memoryBroker>} broker
 * @param {{onMessage (symbol: string, raw: string): void, flushNow (): void}} hub a BookHub
 * @param {string} symbol
 */
export function bookVenue (broker, hub, symbol, { seed = 1, epoch = 'ep1' } = {}) {
  const ref = new OrderBook()
  const rnd = random(seed)
  let seq = 0
  let ts = 1_000
  const state = () => ({ seq, epoch, ts, sync: true, ...ref.top(1000) })
  /** @type {ReturnType<typeof state>[]} every book saved, for rewind() */
  const saved = []
  const save = () => {
    const s = state()
    saved.push(s)
    broker.books.set(symbol, s)
  }
  /** Prices on a grid: bids 1-60 below 100, asks 1-60 above. */
  const price = (/** @type {'bids' | 'asks'} */ side) => {
    const off = 1 + Math.floor(rnd() * 60)
    return side === 'bids' ? String(100 - off / 4) : String(100 + off / 4)
  }
  // Canonical decimals, as the feed's (1 + n/100 in binary floating point is not always).
  const size = () => rnd() < 0.3 ? '0' : /** @type {string} */ (decimal(((100 + Math.floor(rnd() * 500)) / 100).toFixed(2)))
  return {
    ref,
    get seq () { return seq },
    /** A snapshot of `n` levels a side (published unless `dark`). */
    /** @param {number} [n] @param {{dark?: boolean, newEpoch?: string | null}} [o] */
    snapshot (n = 40, { dark = false, newEpoch = null } = {}) {
      if (newEpoch !== null) { epoch = newEpoch; seq = 0 }
      const bids = []
      const asks = []
      for (let i = 1; i <= n; i++) { bids.push([String(100 - i / 4), '1']); asks.push([String(100 + i / 4), '1']) }
      ref.reset({ bids: /** @type {any} */ (bids), asks: /** @type {any} */ (asks) })
      seq++; ts++
      save()
      if (!dark) hub.onMessage(symbol, JSON.stringify({ symbol, seq, epoch, ts, snapshot: true, ...ref.top(1000) }))
      if (!dark) hub.flushNow()
    },
    /**
     * A random update of 1-6 levels (published unless `dark`; sent on at once
     * unless `batched`: then with the others of the batching window).
     */
    update ({ dark = false, batched = false } = {}) {
      /** @type {{bids: [string, string][], asks: [string, string][]}} */
      const msg = { bids: [], asks: [] }
      const n = 1 + Math.floor(rnd() * 6)
      for (let i = 0; i < n; i++) {
        const side = rnd() < 0.5 ? 'bids' : 'asks'
        msg[side].push([price(side), size()])
      }
      ref.apply(msg)
      seq++; ts++
      save()
      if (!dark) hub.onMessage(symbol, JSON.stringify({ symbol, seq, epoch, ts, ...msg }))
      if (!dark && !batched) hub.flushNow()
    },
    /** The book expires from Redis. */
    vanish () { broker.books.delete(symbol) },
    /**
     * Redis loses its last `n` writes, the epoch kept (a failover to a
     * replica that had not got them: replication is asynchronous): the
     * book goes back to what it was, and the seqs after it are used again.
     *
     * @param {number} n
     */
    rewind (n) {
      saved.splice(saved.length - n)
      const back = /** @type {ReturnType<typeof state>} */ (saved.at(-1))
      ref.reset(back)
      seq = back.seq
      ts = back.ts
      broker.books.set(symbol, back)
    }
  }
}
