// A child process holding a share of a WebSocket client fleet (one process
// cannot hold 10,000 sockets under a 20,000 open-files cap together with
// everything else). Driven over IPC by fleet.js. Clients are lean: no frame
// history, only the held seq per symbol (protocol check), counters and a
// latency histogram per phase.

import WebSocket from 'ws'
import { continues } from '../../gateway/public/protocol.js'
import { Histogram } from './stats.js'

/**
 * @typedef {object} FleetClient
 * @property {WebSocket} ws
 * @property {'live' | 'slow'} kind
 * @property {string} role live | waker | sleeper
 * @property {string[]} symbols
 * @property {Map<string, number>} held symbol -> seq
 * @property {number} problems
 * @property {number} conflated deltas with base != seq - 1
 * @property {number} quotes
 * @property {number} phaseQuotes quotes in the current phase
 * @property {number | null} closeCode
 * @property {(() => void) | null} onAck
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
  const now = Date.now()
  for (const d of msg.quotes) {
    c.quotes++
    c.phaseQuotes++
    if (msg.op === 'snap') {
      c.held.set(d.symbol, d.seq)
      continue
    }
    const held = c.held.get(d.symbol)
    if (held === undefined || !continues(d, held)) {
      c.problems++
      if (problems.length < 20) problems.push(`${c.role}: ${d.symbol} held ${held} got seq ${d.seq} base ${d.base}`)
    }
    c.held.set(d.symbol, d.seq)
    if (d.base !== undefined && d.base !== d.seq - 1) c.conflated++
    if (c.kind === 'live') histogram(phase).add(now - d.ts)
  }
}

/**
 * Connects, subscribes and, with `pause`, stops reading as soon as the
 * snapshots of all its symbols arrived.
 *
 * @param {string} url
 * @param {'live' | 'slow'} kind
 * @param {string} role
 * @param {string[]} symbols
 * @param {boolean} pause
 * @returns {Promise<FleetClient | null>}
 */
function connectOne (url, kind, role, symbols, pause) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { perMessageDeflate: false })
    /** @type {FleetClient} */
    const c = { ws, kind, role, symbols, held: new Map(), problems: 0, conflated: 0, quotes: 0, phaseQuotes: 0, closeCode: null, onAck: null }
    const timer = setTimeout(() => { ws.terminate(); resolve(null) }, 60_000)
    let subscribed = false
    let settled = false
    const ready = () => {
      if (settled || !subscribed || (pause && c.held.size < symbols.length)) return
      settled = true
      clearTimeout(timer)
      if (pause) socketOf(c).pause()
      resolve(c)
    }
    let hello = false
    ws.on('message', (data) => {
      if (!hello) {
        hello = true
        let acks = 0
        const chunks = []
        for (let i = 0; i < symbols.length; i += 100) chunks.push(symbols.slice(i, i + 100))
        c.onAck = () => {
          if (++acks === chunks.length) {
            c.onAck = () => {}
            subscribed = true
            ready()
          }
        }
        for (const chunk of chunks) ws.send(JSON.stringify({ op: 'sub', symbols: chunk }))
        return
      }
      onFrame(c, String(data))
      if (pause && subscribed) ready()
    })
    ws.on('close', (code) => {
      c.closeCode = code
      clearTimeout(timer)
      resolve(null)
    })
    ws.on('error', () => {})
  })
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
          const c = await connectOne(msg.url, spec.kind, spec.role, spec.symbols, Boolean(msg.pause))
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
