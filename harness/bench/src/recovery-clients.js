#!/usr/bin/env node
// A share of the history section's resuming clients (sections/history.js),
// one process of several: distinct subscribers on the `ws` package, each
// with a TickLedger (the seq and epoch it holds per symbol, gaps, ticks
// lost). Loopback only; a few hundred sockets per process, far below the
// open-files cap.
//
// stdin (JSON lines):
//   {"cmd":"connect","url":U,"clients":[[SYM,...],...]}  open, `sub` in distinct mode, wait for every snapshot
//   {"cmd":"disconnect"}                                  close every socket; the ledgers stay
//   {"cmd":"reconnect","targets":{SYM:seq},"timeoutMs":T,"settleMs":S}
//       every client at once: open, `sub` with `since` (its held seq and
//       epoch per symbol), and read until it is up to live: acked and
//       holding at least the target seq (the newest when the wave began) of
//       each of its symbols; then S ms more of live ticks for the seam. It
//       has recovered when, besides, the ack said `recovered: true` for
//       every one of its symbols (else a `snap` brought it up to live)
// stdout (JSON lines): {"type":"ready"}, {"type":"connected",...},
//   {"type":"disconnected"}, {"type":"recovered",...} (fields below)
// Exits when stdin closes.

import { createInterface } from 'node:readline'
import WebSocket from 'ws'
import { ClientOp, ServerOp } from '@wsps/protocol'
import { TickLedger } from './tick-ledger.js'

/**
 * @typedef {object} Client
 * @property {string[]} symbols
 * @property {TickLedger} ledger
 * @property {WebSocket | null} ws
 * @property {boolean} acked
 * @property {Record<string, boolean>} recovered the ack's `recovered`
 * @property {number} replayed `q` entries at or below the target seq of their symbol
 * @property {number} missed ticks between the held seq and the target seq when the wave began
 * @property {number | null} doneAt Date.now() when up to live
 * @property {number | null} closeCode
 */

/** @type {Client[]} */
let clients = []
/** @type {Record<string, number>} */
let targets = {}
let waiting = false

/** @param {object} o */
const out = (o) => { process.stdout.write(JSON.stringify(o) + '\n') }

/**
 * @param {Client} c
 * @param {any} msg
 */
function onMessage (c, msg) {
  if (msg.op === ServerOp.ACK) {
    c.acked = true
    if (msg.recovered) c.recovered = msg.recovered
  } else if (msg.op === ServerOp.SNAP) {
    for (const q of msg.quotes) c.ledger.snap(q)
  } else if (msg.op === ServerOp.QUOTES) {
    for (const d of msg.quotes) {
      c.ledger.delta(d)
      if (waiting && d.seq <= (targets[d.symbol] ?? -1)) c.replayed++
    }
  } else {
    return
  }
  if (waiting && c.doneAt === null && upToLive(c)) c.doneAt = Date.now()
}

/** @param {Client} c */
function upToLive (c) {
  return c.acked && c.symbols.every((s) => (c.ledger.seq(s) ?? -1) >= (targets[s] ?? Infinity))
}

/** @param {Client} c up to live with every symbol `recovered: true` */
function recovered (c) {
  return c.doneAt !== null && c.symbols.every((s) => c.recovered[s] === true)
}

/**
 * Opens the client's socket and sends its `sub` (with `since` when it
 * holds cursors); resolves once the socket opened (false: it failed).
 *
 * @param {Client} c
 * @param {string} url
 * @param {boolean} resume
 * @returns {Promise<boolean>}
 */
function open (c, url, resume) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { perMessageDeflate: false })
    c.ws = ws
    c.acked = false
    c.closeCode = null
    let hello = false
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data))
      if (!hello) {
        hello = true
        /** @type {Record<string, {seq: number, epoch: string}>} */
        const since = {}
        if (resume) for (const s of c.symbols) { const k = c.ledger.cursor(s); if (k) since[s] = k }
        ws.send(JSON.stringify({ op: ClientOp.SUB, symbols: c.symbols, mode: 'distinct', ...(resume ? { since } : {}) }))
        resolve(true)
        return
      }
      onMessage(c, msg)
    })
    ws.on('close', (code) => {
      c.closeCode = code
      resolve(false)
    })
    ws.on('error', () => {})
  })
}

/** @param {(() => boolean)} cond @param {number} timeoutMs */
async function until (cond, timeoutMs) {
  const end = Date.now() + timeoutMs
  while (!cond() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
  return cond()
}

/** @param {any} msg */
async function handle (msg) {
  if (msg.cmd === 'connect') {
    clients = msg.clients.map((/** @type {string[]} */ symbols) => ({ symbols, ledger: new TickLedger(), ws: null, acked: false, recovered: {}, replayed: 0, missed: 0, doneAt: null, closeCode: null }))
    await Promise.all(clients.map((c) => open(c, msg.url, false)))
    const held = (/** @type {Client} */ c) => c.acked && c.symbols.every((s) => c.ledger.cursor(s) !== undefined)
    await until(() => clients.every((c) => held(c) || c.closeCode !== null), 60_000)
    out({ type: 'connected', connected: clients.filter(held).length, failed: clients.filter((c) => !held(c)).length })
  } else if (msg.cmd === 'disconnect') {
    for (const c of clients) c.ws?.close(1000)
    await until(() => clients.every((c) => c.closeCode !== null), 10_000)
    out({ type: 'disconnected' })
  } else if (msg.cmd === 'reconnect') {
    targets = msg.targets
    const startedAt = Date.now()
    for (const c of clients) {
      c.replayed = 0
      c.doneAt = null
      c.recovered = {}
      c.missed = c.symbols.reduce((a, s) => a + Math.max(0, (targets[s] ?? 0) - (c.ledger.seq(s) ?? 0)), 0)
    }
    const before = clients.map((c) => ({ lost: c.ledger.ticksLost, gaps: c.ledger.gaps, dups: c.ledger.dups }))
    waiting = true
    await Promise.all(clients.map((c) => open(c, msg.url, true)))
    await until(() => clients.every((c) => c.doneAt !== null || c.closeCode !== null), msg.timeoutMs)
    const allDoneAt = Date.now()
    // The seam: live ticks after the replay must continue it.
    await new Promise((resolve) => setTimeout(resolve, msg.settleMs ?? 1000))
    waiting = false
    const flags = clients.flatMap((c) => c.symbols.map((s) => c.recovered[s]))
    const ok = clients.filter(recovered)
    out({
      type: 'recovered',
      startedAt,
      allDoneAt,
      clients: clients.length,
      /** Not up to live within timeoutMs. */
      unfinished: clients.filter((c) => c.doneAt === null).length,
      /** Up to live, but not `recovered: true` for every symbol (a `snap` instead: ticks lost). */
      notRecovered: clients.filter((c) => c.doneAt !== null && !recovered(c)).length,
      closed: clients.filter((c) => c.closeCode !== null).length,
      /** Per recovered client, ms from the start of the wave to up to live. */
      ms: ok.map((c) => /** @type {number} */ (c.doneAt) - startedAt),
      /** The last recovered client's, and the last client's up to live (Date.now(); 0: none). */
      doneAt: Math.max(0, ...ok.map((c) => /** @type {number} */ (c.doneAt))),
      liveAt: Math.max(0, ...clients.map((c) => c.doneAt ?? 0)),
      missed: clients.reduce((a, c) => a + c.missed, 0),
      replayed: clients.reduce((a, c) => a + c.replayed, 0),
      // Counted from the start of the wave: the seqs no entry delivered.
      ticksLost: clients.reduce((a, c, i) => a + c.ledger.ticksLost - before[i].lost, 0),
      gaps: clients.reduce((a, c, i) => a + c.ledger.gaps - before[i].gaps, 0),
      dups: clients.reduce((a, c, i) => a + c.ledger.dups - before[i].dups, 0),
      recoveredTrue: flags.filter((x) => x === true).length,
      recoveredFalse: flags.filter((x) => x === false).length,
      recoveredMissing: flags.filter((x) => x === undefined).length
    })
  }
}

let chain = Promise.resolve()
createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return
  const msg = JSON.parse(line)
  chain = chain.then(() => handle(msg)).catch((err) => out({ type: 'error', error: String(err.stack ?? err) }))
})
process.stdin.on('end', () => {
  for (const c of clients) c.ws?.terminate()
  process.exit(0)
})
out({ type: 'ready' })
