// A distinct subscriber on the real JS client (@wsps/client) that records
// everything the checker reads: every quote (symbol, seq, epoch, ts, when it
// arrived, snapshot or not), `recovery`, `gap`, `status`, and `stale` /
// `fresh` both as client events (where the client has them) and as the raw
// frames its socket received (tapped below the client).

import WebSocket from 'ws'
import { WspsClient } from '@wsps/client'

/** @typedef {import('./checker.js').Ev} Ev */

/**
 * A `ws` WebSocket that also hands every text frame to `tap` (before the
 * client sees it: the client's own handler is `onmessage`).
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

/**
 * @param {{id: number, urls: string[], symbols: string[]}} options
 */
export function recordingSubscriber ({ id, urls, symbols }) {
  /** @type {Ev[]} */
  const events = []
  const counts = { staleEvents: 0, freshEvents: 0, staleFrames: 0, freshFrames: 0 }
  let node = ''
  const tap = (/** @type {string} */ text) => {
    if (!text.includes('"op":"stale"') && !text.includes('"op":"fresh"')) return
    let msg
    try { msg = JSON.parse(text) } catch { return }
    const syms = Array.isArray(msg.symbols) ? msg.symbols : []
    if (msg.op === 'stale') { counts.staleFrames++; events.push({ k: 'stale', syms, since: typeof msg.since === 'number' ? msg.since : null, at: Date.now(), src: 'frame' }) }
    if (msg.op === 'fresh') { counts.freshFrames++; events.push({ k: 'fresh', syms, at: Date.now(), src: 'frame' }) }
  }
  const client = new WspsClient({ url: urls, WebSocket: tappedWebSocket(tap), initialBackoffMs: 50, restartJitterMs: 100, symbols: [] })
  client.on('quote', (e) => {
    const q = e.quote
    events.push({ k: 'q', s: e.symbol, seq: q.seq, ep: String(q.epoch), ts: q.ts, at: Date.now(), snap: e.snapshot })
  })
  client.on('recovery', (r) => events.push({ k: 'rec', s: r.symbol, ok: r.recovered, at: Date.now() }))
  client.on('gap', (g) => events.push({ k: 'gap', s: g.symbol, at: Date.now() }))
  client.on('status', (st) => {
    events.push({ k: 'status', state: st.state, at: Date.now() })
    if (st.node) node = st.node
  })
  // `stale` and `fresh` client events are being added to the client; on a
  // client without them these listeners are never called.
  const any = /** @type {{on: (type: string, fn: (e: any) => void) => void}} */ (/** @type {unknown} */ (client))
  any.on('stale', (e) => { counts.staleEvents++; events.push({ k: 'stale', syms: e?.symbols ?? [], since: e?.since ?? null, at: Date.now(), src: 'event' }) })
  any.on('fresh', (e) => { counts.freshEvents++; events.push({ k: 'fresh', syms: e?.symbols ?? [], at: Date.now(), src: 'event' }) })
  client.connect()
  client.subscribe(symbols, { mode: 'distinct' })
  return {
    id,
    client,
    events,
    counts,
    get node () { return node },
    get live () { return client.status.state === 'live' },
    /** @param {string} s @returns {boolean} it got a quote of s */
    has (s) { return events.some((e) => e.k === 'q' && e.s === s) }
  }
}

/** @typedef {ReturnType<typeof recordingSubscriber>} Subscriber */
