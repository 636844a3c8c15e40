// A distinct subscriber on the real JS client (@wsps/client) that records
// everything it is told, in order: every quote (symbol, seq, epoch, ts, when
// it arrived, snapshot or not), `recovery`, `gap`, `status`, and `stale` /
// `fresh` both as client events and as the raw frames its socket received
// (tapped below the client). The accessors are views of that one history:
// seqs per symbol (for ticksLost), arrival times, recoveries, the gateways
// it was served by, close codes, stale/fresh notices.

import WebSocket from 'ws'
import { WspsClient } from '@wsps/client'
import { longestSilence, ticksDisordered, ticksLost } from './ticks.js'

/**
 * One subscriber's history, in the order its events happened (`at`: the
 * recorder's Date.now() when it saw them).
 *
 * @typedef {{k: 'q', s: string, seq: number, ep: string, ts: number, at: number, snap: boolean}} QuoteEv a quote event
 * @typedef {{k: 'rec', s: string, ok: boolean, at: number}} RecoveryEv a `recovery` event
 * @typedef {{k: 'gap', s: string, at: number}} GapEv the client's own `gap` event (it saw a hole and resubscribes)
 * @typedef {{k: 'stale', syms: string[], since: number | null, at: number, src: 'frame' | 'event'}} StaleEv
 * @typedef {{k: 'fresh', syms: string[], at: number, src: 'frame' | 'event'}} FreshEv
 * @typedef {{k: 'status', state: string, node?: string | null, closeCode?: number | null, at: number}} StatusEv
 *   a `status` event (live, reconnecting, ...); node and closeCode: of the current or last connection
 * @typedef {{k: 'hello', at: number}} HelloEv a `hello`: a connection (the first, or one after a close) went live
 * @typedef {{k: 'rejected', symbols: string[], code: string, at: number}} RejectedEv symbols the gateway refused, with its error code
 * @typedef {QuoteEv | RecoveryEv | GapEv | StaleEv | FreshEv | StatusEv | HelloEv | RejectedEv} Ev
 */

/**
 * A `ws` WebSocket that also hands every text frame to `tap` (before the
 * client sees it: the client's own handler is `onmessage`). It asks for no
 * subprotocol, so the connection speaks JSON: every frame is text.
 *
 * @param {(text: string) => void} tap
 */
function tappedWebSocket (tap) {
  return class extends WebSocket {
    /** @param {string} url */
    constructor (url) {
      super(url)
      this.on('message', (data, isBinary) => { if (!isBinary) tap(String(data)) })
    }
  }
}

export class RecordingSubscriber {
  /** @type {Ev[]} everything it was told, in order */
  events = []
  /** @type {Map<string, QuoteEv[]>} the quotes of `events`, per symbol */
  #quotes = new Map()

  /**
   * Connects at once and subscribes `symbols` in distinct mode (backoff 50 ms,
   * 1012 jitter 100 ms: a test's pace).
   *
   * @param {{url: string | string[], symbols: readonly string[], transport?: 'auto' | 'websocket' | 'sse'}} options
   *   url: the gateways, tried in turn on each reconnect
   */
  constructor ({ url, symbols, transport = 'auto' }) {
    this.symbols = [...symbols]
    const push = (/** @type {Ev} */ e) => { this.events.push(e) }
    const client = new WspsClient({ url, WebSocket: tappedWebSocket((text) => this.#frame(text)), encoding: 'json', transport, initialBackoffMs: 50, restartJitterMs: 100, symbols: [] })
    this.client = client
    client.on('quote', (e) => {
      const q = e.quote
      /** @type {QuoteEv} */
      const ev = { k: 'q', s: e.symbol, seq: q.seq, ep: String(q.epoch), ts: q.ts, at: Date.now(), snap: e.snapshot }
      push(ev)
      const list = this.#quotes.get(ev.s)
      if (list) list.push(ev)
      else this.#quotes.set(ev.s, [ev])
    })
    client.on('recovery', (r) => push({ k: 'rec', s: r.symbol, ok: r.recovered, at: Date.now() }))
    client.on('gap', (g) => push({ k: 'gap', s: g.symbol, at: Date.now() }))
    client.on('hello', () => push({ k: 'hello', at: Date.now() }))
    client.on('rejected', (r) => push({ k: 'rejected', symbols: r.symbols, code: r.error.code, at: Date.now() }))
    client.on('status', (st) => push({ k: 'status', state: st.state, node: st.node, closeCode: st.closeCode, at: Date.now() }))
    client.on('stale', (e) => push({ k: 'stale', syms: e.symbols, since: e.since ?? null, at: Date.now(), src: 'event' }))
    client.on('fresh', (e) => push({ k: 'fresh', syms: e.symbols, at: Date.now(), src: 'event' }))
    client.connect()
    client.subscribe(this.symbols, { mode: 'distinct' })
  }

  /** @param {string} text a text frame its socket received */
  #frame (text) {
    if (!text.includes('"op":"stale"') && !text.includes('"op":"fresh"')) return
    let msg
    try { msg = JSON.parse(text) } catch { return }
    const syms = Array.isArray(msg.symbols) ? msg.symbols : []
    if (msg.op === 'stale') this.events.push({ k: 'stale', syms, since: typeof msg.since === 'number' ? msg.since : null, at: Date.now(), src: 'frame' })
    if (msg.op === 'fresh') this.events.push({ k: 'fresh', syms, at: Date.now(), src: 'frame' })
  }

  close () { this.client.close() }

  /** The connection is live. */
  get live () { return this.client.status.state === 'live' }

  /** The gateway (hello.node) of the current or last connection; '' before any. */
  get node () { return this.client.status.node ?? '' }

  /** @returns {Set<string>} every gateway it was served by */
  nodes () {
    const out = new Set()
    for (const e of this.events) if (e.k === 'status' && e.node) out.add(e.node)
    return out
  }

  /** @param {string} symbol @returns {boolean} it got a quote of it */
  has (symbol) { return this.#quotes.has(symbol) }

  /** @returns {Map<string, number[]>} the seq of every quote per symbol, in arrival order */
  seqs () { return new Map([...this.#quotes].map(([s, list]) => [s, list.map((q) => q.seq)])) }

  /** @returns {Map<string, Set<string>>} the epochs its quotes came in, per symbol */
  epochs () { return new Map([...this.#quotes].map(([s, list]) => [s, new Set(list.map((q) => q.ep))])) }

  /** @param {string} symbol @returns {number} the seq of its newest quote (0: none yet) */
  lastSeq (symbol) { return this.#quotes.get(symbol)?.at(-1)?.seq ?? 0 }

  /** @returns {number} the newest seq it holds of any symbol (0: none yet) */
  newest () { return Math.max(0, ...this.symbols.map((s) => this.lastSeq(s))) }

  /** @param {number} n @returns {boolean} every subscribed symbol is at seq n or past it */
  passed (n) { return this.symbols.every((s) => this.lastSeq(s) >= n) }

  /** @returns {number} hellos received: one per connection that went live (more than one: a socket was closed) */
  hellos () { return this.events.filter((e) => e.k === 'hello').length }

  /** @returns {RejectedEv[]} every subscription the gateway refused */
  rejected () { return /** @type {RejectedEv[]} */ (this.events.filter((e) => e.k === 'rejected')) }

  /** @param {string} symbol @returns {number[]} when each of its quotes arrived */
  arrivals (symbol) { return (this.#quotes.get(symbol) ?? []).map((q) => q.at) }

  /** @param {number} since @returns {string[]} the subscribed symbols without a quote that arrived after it */
  quietSince (since) { return this.symbols.filter((s) => (this.#quotes.get(s)?.at(-1)?.at ?? 0) <= since) }

  /** @param {string} symbol @param {number} from @param {number} to @returns {number} the longest time in [from, to] it went without a quote */
  longestSilence (symbol, from, to) { return longestSilence(this.arrivals(symbol), from, to) }

  /** Ticks between its first and newest quote of each symbol that never arrived, and how many did. */
  ticksLost () { return ticksLost(this.seqs()) }

  /** Quotes received twice or out of order. */
  ticksDisordered () { return ticksDisordered(this.seqs()) }

  /** @returns {{symbol: string, recovered: boolean}[]} every `recovery` event, in order */
  recoveries () { return this.events.flatMap((e) => (e.k === 'rec' ? [{ symbol: e.s, recovered: e.ok }] : [])) }

  /** @returns {number[]} the close code of the last connection, at each status change that left it not live */
  closeCodes () { return this.events.flatMap((e) => (e.k === 'status' && e.state !== 'live' && e.closeCode != null ? [e.closeCode] : [])) }

  /** `stale` and `fresh` notices: as the client's events, and as the frames its socket received. */
  notices () {
    const n = { staleEvents: 0, freshEvents: 0, staleFrames: 0, freshFrames: 0 }
    for (const e of this.events) {
      if (e.k === 'stale') n[e.src === 'frame' ? 'staleFrames' : 'staleEvents']++
      else if (e.k === 'fresh') n[e.src === 'frame' ? 'freshFrames' : 'freshEvents']++
    }
    return n
  }
}
