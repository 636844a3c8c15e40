// A child process holding a share of a WebSocket client fleet (one process
// cannot hold 10,000 sockets under a 20,000 open-files cap together with
// everything else). Driven over IPC by fleet.js. Clients are lean: no frame
// history, only the held seq per symbol (the protocol's QuoteReceiver),
// counters and a latency histogram per phase.

import WebSocket from 'ws'
import { QuoteReceiver } from '@wsps/protocol'
import { QuoteReader } from './quote-reader.js'
import { Histogram } from './stats.js'

/**
 * @typedef {object} FleetClient
 * @property {WebSocket} ws
 * @property {'live' | 'slow'} kind
 * @property {string} role live | waker | sleeper
 * @property {string[]} symbols
 * @property {QuoteReceiver} held held seqs
 * @property {QuoteReader} reader reads its snap and q frames into `held`
 * @property {number} problems
 * @property {number} conflated catch-ups: snapshots skipping seqs, or deltas with base != seq - 1
 * @property {number} quotes
 * @property {number} phaseQuotes quotes in the current phase
 * @property {number | null} closeCode
 * @property {(() => void) | null} onAck
 * @property {(() => void) | null} onQuote called after each frame while subscribing
 */

/** @type {FleetClient[]} */
const clients = []
let phase = 'start'
/** @type {Map<string, Histogram>} */
const latency = new Map()
/** @type {string[]} the first protocol problems seen, for the report */
const problems = []

/** @param {string} name */
function histogram (name) {
  let h = latency.get(name)
  if (!h) latency.set(name, h = new Histogram())
  return h
}

/**
 * @param {FleetClient} c
 * @param {string} text
 */
function onFrame (c, text) {
  let msg
  try {
    msg = JSON.parse(text)
  } catch {
    c.problems++
    return
  }
  if (msg.op === 'ack') {
    c.onAck?.()
    return
  }
  if (msg.op !== 'snap' && msg.op !== 'q') return
  // Every entry counts, read or not (a delta dropped while resyncing too).
  c.quotes += msg.quotes.length
  c.phaseQuotes += msg.quotes.length
  c.reader.read(msg)
}

/**
 * The reader of one client: no stray check (the worker subscribes what it
 * was given), conflation counted, live latency into the phase's
 * histogram, and a delta that does not apply resubscribed (rule 3).
 *
 * @param {FleetClient} c
 */
function readerOf (c) {
  return new QuoteReader(c.held, {
    send: (frame) => c.ws.send(frame),
    snap: (q, before) => {
      // A snapshot that skips seqs is how a reader that fell behind is
      // caught up (conflation: only the latest quote per symbol).
      if (before !== undefined && q.seq > before + 1) c.conflated++
    },
    applied: (d, now) => {
      if (d.base !== undefined && d.base !== d.seq - 1) c.conflated++
      if (c.kind === 'live') histogram(phase).add(now - /** @type {number} */ (d.ts))
    },
    broken: (d, outcome, held) => {
      c.problems++
      if (problems.length < 20) problems.push(`${c.role}: ${outcome} on ${d.symbol}: held ${held} got seq ${d.seq} base ${d.base}`)
    }
  })
}

/**
 * Opens a socket; resolves with the client once `hello` arrived (null if it
 * did not within 60 s or the socket closed first).
 *
 * @param {string} url
 * @param {'live' | 'slow'} kind
 * @param {string} role
 * @param {string[]} symbols
 * @returns {Promise<FleetClient | null>}
 */
function openOne (url, kind, role, symbols) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { perMessageDeflate: false })
    /** @type {FleetClient} */
    const c = { ws, kind, role, symbols, held: new QuoteReceiver({ fields: false }), reader: /** @type {any} */ (null), problems: 0, conflated: 0, quotes: 0, phaseQuotes: 0, closeCode: null, onAck: null, onQuote: null }
    c.reader = readerOf(c)
    const timer = setTimeout(() => { ws.terminate(); resolve(null) }, 60_000)
    let hello = false
    ws.on('message', (data) => {
      if (!hello) {
        hello = true
        clearTimeout(timer)
        resolve(c)
        return
      }
      onFrame(c, String(data))
      c.onQuote?.()
    })
    ws.on('close', (code) => {
      c.closeCode = code
      clearTimeout(timer)
      resolve(null)
      c.onQuote?.()
    })
    ws.on('error', () => {})
  })
}

/**
 * Subscribes to the client's symbols; resolves true once acked and, with
 * `pause`, once the snapshots of all of them arrived — then stops reading.
 *
 * @param {FleetClient} c
 * @param {boolean} pause
 * @returns {Promise<boolean>}
 */
function subscribeOne (c, pause) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(false), 60_000)
    let acks = 0
    let subscribed = false
    const chunks = []
    for (let i = 0; i < c.symbols.length; i += 100) chunks.push(c.symbols.slice(i, i + 100))
    const done = (/** @type {boolean} */ ok) => {
      clearTimeout(timer)
      c.onAck = null
      c.onQuote = null
      if (ok && pause) socketOf(c).pause()
      resolve(ok)
    }
    const check = () => {
      if (c.closeCode !== null) return done(false)
      if (subscribed && (!pause || c.held.size >= c.symbols.length)) done(true)
    }
    c.onAck = () => {
      if (++acks === chunks.length) subscribed = true
      check()
    }
    c.onQuote = check
    for (const chunk of chunks) c.ws.send(JSON.stringify({ op: 'sub', symbols: chunk }))
  })
}

/**
 * @param {string} url
 * @param {'live' | 'slow'} kind
 * @param {string} role
 * @param {string[]} symbols
 * @param {{subscribe: boolean, pause: boolean}} how
 * @returns {Promise<FleetClient | null>}
 */
async function connectOne (url, kind, role, symbols, { subscribe, pause }) {
  const c = await openOne(url, kind, role, symbols)
  if (!c || !subscribe) return c
  if (await subscribeOne(c, pause)) return c
  c.ws.terminate()
  return null
}

/** @param {FleetClient} c */
const socketOf = (c) => /** @type {import('node:net').Socket} */ (/** @type {any} */ (c.ws)._socket)

/**
 * @param {any} msg
 * @returns {Promise<any>}
 */
async function handle (msg) {
  switch (msg.cmd) {
    case 'connect': {
      // {url, clients: [{kind, role, symbols}]}, opened `parallel` at a time.
      // A refused or timed-out attempt is retried once.
      const queue = msg.clients.map((/** @type {any} */ spec) => ({ ...spec, tries: 0 }))
      let failed = 0
      let connected = 0
      await Promise.all(Array.from({ length: msg.parallel ?? 50 }, async () => {
        for (let spec = queue.shift(); spec; spec = queue.shift()) {
          const c = await connectOne(msg.url, spec.kind, spec.role, spec.symbols, { subscribe: msg.subscribe !== false, pause: Boolean(msg.pause) })
          if (c) {
            clients.push(c)
            connected++
          } else if (++spec.tries < 2) {
            queue.push(spec)
          } else {
            failed++
          }
        }
      }))
      return { connected, failed }
    }
    case 'subscribe': {
      // Clients of `role` connected with subscribe: false subscribe now
      // (and stop reading after their snapshots with `pause`).
      const mine = clients.filter((c) => c.role === msg.role && c.closeCode === null)
      const results = await Promise.all(mine.map((c) => subscribeOne(c, Boolean(msg.pause))))
      return { subscribed: results.filter(Boolean).length, failed: results.filter((x) => !x).length }
    }
    case 'snapshotted': {
      const missing = clients.filter((c) => c.closeCode === null && c.held.size < c.symbols.length).length
      return { missing }
    }
    case 'phase':
      phase = msg.name
      for (const c of clients) c.phaseQuotes = 0
      return {}
    case 'pause':
    case 'resume':
      for (const c of clients) if (c.kind === 'slow' && (msg.role === undefined || c.role === msg.role)) socketOf(c)[msg.cmd]()
      return {}
    case 'report': {
      /** @type {Record<string, {clients: number, open: number, closes: Record<string, number>, problems: number, conflated: number, quotes: number, silentInPhase: number}>} */
      const roles = {}
      for (const c of clients) {
        const r = roles[c.role] ??= { clients: 0, open: 0, closes: {}, problems: 0, conflated: 0, quotes: 0, silentInPhase: 0 }
        r.clients++
        if (c.closeCode === null) r.open++
        else r.closes[c.closeCode] = (r.closes[c.closeCode] ?? 0) + 1
        r.problems += c.problems
        r.conflated += c.conflated
        r.quotes += c.quotes
        if (c.phaseQuotes === 0) r.silentInPhase++
      }
      return { roles, latency: Object.fromEntries(latency), problems, rss: process.memoryUsage().rss }
    }
    case 'exit':
      for (const c of clients) c.ws.terminate()
      setTimeout(() => process.exit(0), 50)
      return {}
    default:
      throw new Error(`unknown command ${msg.cmd}`)
  }
}

process.on('message', (/** @type {any} */ msg) => {
  handle(msg).then(
    (result) => process.send?.({ id: msg.id, result }),
    (err) => process.send?.({ id: msg.id, error: String(err?.stack ?? err) })
  )
})
process.on('disconnect', () => process.exit(0))
