// A WebSocket client for tests that checks the protocol as it reads: every
// frame recorded, quote state per symbol (the protocol's QuoteReceiver), and
// any seq gap, duplicate or quote for a symbol it did not subscribe to noted
// as a problem. With `binary` it speaks the binary encoding (subprotocol
// `wsps.v1.proto`, docs/protocol.md "Binary encoding") both ways, and
// records the frames decoded: the same objects as a JSON client's.

import WebSocket from 'ws'
import { QuoteReceiver, Subprotocol } from '@wsps/protocol'
import { decodeServerFrame, encodeClientFrame } from '@wsps/protocol/proto-codec'
import { BarReader } from './bar-reader.js'
import { QuoteReader } from './quote-reader.js'
import { waitFor } from './wait.js'

/**
 * A protocol-checking test client. It records every frame, keeps the quote
 * state per symbol from snapshots and deltas, and records any seq gap,
 * duplicate, or quote for a symbol it did not subscribe to.
 */
export class TestClient {
  /** @type {QuoteReader} */
  #reader

  /**
   * Resolves once `hello` arrived (after the `auth` frame, when `token` is given).
   *
   * @param {string} url
   * @param {import('ws').ClientOptions} [options]
   * @param {{token?: string, binary?: boolean}} [auth] token: sent as the first frame `{"op":"auth"}`;
   *   binary: ask for `wsps.v1.proto` and speak it
   */
  static async connect (url, options, auth) {
    const c = new TestClient(url, options, auth)
    await c.opened
    return c
  }

  /**
   * @param {string} url
   * @param {import('ws').ClientOptions} [options]
   * @param {{token?: string, binary?: boolean}} [auth] token: sent as the first frame `{"op":"auth"}`;
   *   binary: ask for `wsps.v1.proto` and speak it
   */
  constructor (url, options, { token, binary = false } = {}) {
    this.binary = binary
    this.ws = binary ? new WebSocket(url, [Subprotocol.PROTO], options) : new WebSocket(url, options)
    /** @type {('text' | 'binary')[]} how each frame came */
    this.kinds = []
    /** Resolves when the socket is open (before any `hello`). */
    this.upgraded = new Promise((resolve) => this.ws.once('open', resolve))
    if (token !== undefined) this.ws.once('open', () => this.send({ op: 'auth', token }))
    /** @type {any[]} */
    this.frames = []
    /** Held quotes, by the receiver rules. */
    this.receiver = new QuoteReceiver()
    /** @type {Map<string, number[]>} seqs received per symbol, in order */
    this.seqs = new Map()
    /** @type {Set<string>} */
    this.subscribed = new Set()
    /** @type {string[]} */
    this.problems = []
    /** Bar series held, from `bars` and `bar` frames (its problems are in barProblems). */
    this.bars = new BarReader()
    // A stray quote is noted and still read; a delta that does not apply is
    // noted and its symbol resynced without a resubscribe: the test has
    // failed already, and the next snapshot of the symbol (if any)
    // continues the checks.
    this.#reader = new QuoteReader(this.receiver, {
      wants: (symbol) => this.subscribed.has(symbol),
      readStrays: true,
      stray: (kind, q) => { this.problems.push(`${kind} for unsubscribed ${q.symbol}`) },
      snap: (q) => this.track(q.symbol, q.seq),
      applied: (d) => this.track(d.symbol, d.seq),
      broken: (d, outcome, held) => { this.problems.push(`${outcome} on ${d.symbol}: held ${held}, got seq ${d.seq} base ${d.base ?? d.seq - 1}`) }
    })
    /** @type {any} */
    this.hello = null
    /** @type {{code: number, reason: string} | null} */
    this.closed = null
    this.nextId = 1
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('error', reject)
      this.ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })))
      this.ws.on('message', (data, isBinary) => {
        this.kinds.push(isBinary ? 'binary' : 'text')
        const msg = isBinary ? decodeServerFrame(/** @type {Buffer} */ (data)) : JSON.parse(String(data))
        if (msg.op === 'hello') {
          this.hello = msg
          resolve(this)
        }
        this.onFrame(msg)
      })
    })
    this.ws.on('error', () => {})
    this.closedPromise = new Promise((resolve) => {
      this.ws.on('close', (code, reason) => {
        this.closed = { code, reason: String(reason) }
        resolve(this.closed)
      })
    })
  }

  /** @param {any} msg */
  onFrame (msg) {
    this.frames.push(msg)
    this.#reader.read(msg)
    this.bars.read(msg)
  }

  /** @returns {string[]} what broke the bar rules (docs/protocol.md, Bars) */
  get barProblems () {
    return this.bars.problems
  }

  /**
   * @param {string} symbol
   * @returns {Record<string, any> | undefined} the held quote
   */
  quote (symbol) {
    return this.receiver.quote(symbol)
  }

  /**
   * @param {string} symbol
   * @param {number} seq
   */
  track (symbol, seq) {
    let list = this.seqs.get(symbol)
    if (!list) this.seqs.set(symbol, list = [])
    list.push(seq)
  }

  /** @param {Record<string, unknown>} msg */
  send (msg) {
    if (typeof msg === 'string') this.ws.send(msg)
    else this.ws.send(this.binary ? encodeClientFrame(msg) : JSON.stringify(msg))
  }

  /**
   * Resolves with the first frame (from now on, or already received after
   * index `from`) that matches.
   * @param {(msg: any) => boolean} match
   * @param {{timeout?: number, from?: number}} [options]
   * @returns {Promise<any>}
   */
  async next (match, { timeout = 5000, from = this.frames.length } = {}) {
    return waitFor(() => this.frames.slice(from).find(match), { timeout, interval: 10, message: 'a matching frame' })
  }

  /**
   * @param {string[]} symbols
   * @param {{mode?: string, maxRate?: number, delayed?: unknown, since?: Record<string, {seq: number, epoch: string}>}} [delivery] the sub's delivery, timeline and resumption (docs/protocol.md)
   * @returns {Promise<any>} the ack (or error)
   */
  async sub (symbols, delivery = {}) {
    const id = this.nextId++
    for (const s of symbols) this.subscribed.add(s)
    const from = this.frames.length
    this.send({ op: 'sub', symbols, id, ...delivery })
    return this.next((m) => m.id === id && (m.op === 'ack' || m.op === 'error'), { from })
  }

  /**
   * A bars `sub` (docs/protocol.md, Bars).
   *
   * @param {string[]} symbols
   * @param {string} interval `bars`: 1s, 1m or 5m (anything, to test refusals)
   * @param {Record<string, unknown>} [more] backfill, delayed, or fields that do not belong
   * @returns {Promise<any>} the ack (or error)
   */
  async subBars (symbols, interval, more = {}) {
    const id = this.nextId++
    const from = this.frames.length
    this.send({ op: 'sub', symbols, bars: interval, id, ...more })
    return this.next((m) => m.id === id && (m.op === 'ack' || m.op === 'error'), { from })
  }

  /**
   * @param {string[]} symbols
   * @param {string} interval
   * @returns {Promise<any>} the ack (or error)
   */
  async unsubBars (symbols, interval) {
    const id = this.nextId++
    const from = this.frames.length
    this.send({ op: 'unsub', symbols, bars: interval, id })
    const ack = await this.next((m) => m.id === id, { from })
    if (ack.op === 'ack') for (const s of symbols) this.bars.forget(s, interval)
    return ack
  }

  /** @param {string[]} symbols */
  async unsub (symbols) {
    const id = this.nextId++
    const from = this.frames.length
    this.send({ op: 'unsub', symbols, id })
    const ack = await this.next((m) => m.id === id, { from })
    for (const s of symbols) this.subscribed.delete(s)
    return ack
  }

  /**
   * @param {string} symbol
   * @param {number} count quotes (snapshot or delta) of it to wait for
   * @param {number} [timeout]
   */
  async waitQuotes (symbol, count, timeout = 10_000) {
    await waitFor(() => (this.seqs.get(symbol)?.length ?? 0) >= count, { timeout, message: `${count} quotes of ${symbol}` })
  }

  close () {
    this.ws.close()
    return this.closedPromise
  }
}

/**
 * The TestClients of one test file: connect() opens and remembers one,
 * terminate() ends them all (the file's `after` hook).
 */
export class ClientPool {
  /** @type {TestClient[]} */
  #clients = []

  /**
   * @param {string} url
   * @param {import('ws').ClientOptions} [options]
   */
  async connect (url, options) {
    const c = await TestClient.connect(url, options)
    this.#clients.push(c)
    return c
  }

  terminate () {
    for (const c of this.#clients) c.ws.terminate()
    this.#clients = []
  }
}
