// Live-connection fuzzer: random and mutated frames over real WebSockets.
//
// Each connection sends a window of frames, then waits until every frame of
// the window was answered (the gateway answers each frame it processes with
// exactly one ack, error or pong) or the connection was closed. A closed
// connection is replaced by a new one. Everything is counted: frames sent,
// frames answered, replies by code, closes by code, and anything outside the
// contract (a close code not allowed for the input, a non-JSON reply, a window
// left unanswered — a stall).

import WebSocket from 'ws'
import { prng as mulberry32 } from '../../../services/quote-fetcher/src/providers/sim.js'

/**
 * Seeded PRNG (mulberry32, the fetcher's simulated market's): the same seed
 * gives the same frames.
 * @param {number} seed
 */
export function prng (seed) {
  const next = mulberry32(seed)
  const int = (/** @type {number} */ n) => Math.floor(next() * n)
  return {
    next,
    int,
    /** @template T @param {readonly T[]} list @returns {T} */
    pick: (list) => list[int(list.length)],
    chance: (/** @type {number} */ p) => next() < p
  }
}

/** @typedef {ReturnType<typeof prng>} Rand */

const SYMBOL_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.^=-'
/** Symbols fuzz subscriptions mostly draw from, so the hub stays small. */
export const FUZZ_SYMBOLS = Object.freeze(Array.from({ length: 40 }, (_, i) => `FZ${i}`))

/** @param {Rand} r */
function randomSymbol (r) {
  let s = ''
  const n = 1 + r.int(16)
  for (let i = 0; i < n; i++) s += SYMBOL_CHARS[r.int(SYMBOL_CHARS.length)]
  return s
}

/** @param {Rand} r */
function validSymbols (r) {
  const n = r.chance(0.9) ? 1 + r.int(4) : 1 + r.int(100)
  return Array.from({ length: n }, () => (r.chance(0.97) ? r.pick(FUZZ_SYMBOLS) : randomSymbol(r)))
}

/** @param {Rand} r */
function randomId (r) {
  return r.pick([() => r.int(1e6), () => `id-${r.int(1e6)}`, () => -r.next(), () => 0])()
}

/** @param {Rand} r */
function validFrame (r) {
  const op = r.pick(['sub', 'sub', 'unsub', 'ping'])
  /** @type {Record<string, unknown>} */
  const msg = op === 'ping' ? { op } : { op, symbols: validSymbols(r) }
  if (r.chance(0.7)) msg.id = randomId(r)
  return JSON.stringify(msg)
}

/** @param {Rand} r @param {number} depth */
function randomJson (r, depth = 0) {
  const kinds = depth > 3 ? 5 : 7
  switch (r.int(kinds)) {
    case 0: return null
    case 1: return r.chance(0.5)
    case 2: return r.pick([0, -1, 1e308, -1e-308, 2 ** 53 + 1, r.int(1e9), 0.5])
    case 3: return r.pick(['', 'sub', 'unsub', 'ping', 'AAPL', 'aapl', '\u0000', '\ud83d\ude00', 'x'.repeat(r.int(300)), '__proto__'])
    case 4: return randomSymbol(r)
    case 5: return Array.from({ length: r.int(6) }, () => randomJson(r, depth + 1))
    default: {
      /** @type {Record<string, unknown>} */
      const o = {}
      const keys = ['op', 'symbols', 'id', '__proto__', 'constructor', 'quotes', 'v', r.pick(['x', 'op ', 'OP'])]
      for (let i = r.int(5); i > 0; i--) o[r.pick(keys)] = randomJson(r, depth + 1)
      return o
    }
  }
}

/**
 * Frames built from the protocol's shapes with one field wrong.
 * @param {Rand} r
 */
function wrongTypeFrame (r) {
  return r.pick([
    () => JSON.stringify({ op: r.pick(['sub', 'unsub']), symbols: randomJson(r) }),
    () => JSON.stringify({ op: r.pick(['sub', 'unsub']), symbols: [randomJson(r), randomJson(r)] }),
    () => JSON.stringify({ op: randomJson(r), symbols: ['FZ1'] }),
    () => JSON.stringify({ op: 'ping', id: randomJson(r) }),
    () => JSON.stringify({ op: 'sub', symbols: Array.from({ length: 101 + r.int(50) }, (_, i) => `FZ${i % 40}`) }),
    () => JSON.stringify({ op: 'sub', symbols: [randomSymbol(r).toLowerCase() + 'a'] }),
    () => `{"__proto__":{"op":"sub","symbols":["FZ1"]}}`,
    () => `{"op":"sub","symbols":["FZ1"],"id":${'9'.repeat(400)}}`,
    () => '['.repeat(1000) + ']'.repeat(1000),
    () => `{"op":"ping","id":"${'x'.repeat(65)}"}`,
    () => '',
    () => ' \n\t',
    () => 'null',
    () => '1e999',
    () => '"op"'
  ])()
}

/**
 * Byte-level mutations of a valid frame (flip, insert, delete, splice,
 * truncate, duplicate). Some results are valid JSON, most are not, some are
 * not even UTF-8.
 * @param {Rand} r
 * @returns {Buffer}
 */
function mutatedFrame (r) {
  let b = Buffer.from(validFrame(r))
  for (let n = 1 + r.int(4); n > 0; n--) {
    const at = r.int(b.length + 1)
    switch (r.int(6)) {
      // Bytes over 0x7f mostly make invalid UTF-8, which ws answers with a
      // 1007 close; keep that path but rare, or every connection ends there.
      case 0: if (b.length) b[Math.min(at, b.length - 1)] ^= 1 << r.int(r.chance(0.05) ? 8 : 7); break
      case 1: b = Buffer.concat([b.subarray(0, at), Buffer.from([r.chance(0.05) ? r.int(256) : r.int(128)]), b.subarray(at)]); break
      case 2: b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + r.int(8)))]); break
      case 3: b = Buffer.concat([b.subarray(0, at), Buffer.from(r.pick(['"', '{', '}', '[', ']', ',', ':', '\\', 'null', '\\u0000', '\u00e9'])), b.subarray(at)]); break
      case 4: b = b.subarray(0, at); break
      default: b = Buffer.concat([b, b.subarray(0, r.int(b.length + 1))])
    }
  }
  return b
}

/**
 * One fuzz frame.
 * @param {Rand} r
 * @param {number} maxPayload the gateway's limit (a few frames exceed it)
 * @returns {{data: string | Buffer, binary: boolean, kind: string}}
 */
export function fuzzFrame (r, maxPayload) {
  const x = r.next()
  // Valid frames (random ops, symbols, ids) dominate: the gateway closes a
  // connection after about 20 invalid ones (4009), and reconnecting costs
  // far more than a frame, so more valid ones mean more frames per second.
  if (x < 0.70) return { data: validFrame(r), binary: false, kind: 'valid' }
  if (x < 0.82) return { data: mutatedFrame(r), binary: false, kind: 'mutated' }
  if (x < 0.91) return { data: wrongTypeFrame(r), binary: false, kind: 'wrong-type' }
  if (x < 0.96) return { data: JSON.stringify(randomJson(r)) ?? 'undefined', binary: false, kind: 'random-json' }
  if (x < 0.999) return { data: Buffer.from(Array.from({ length: r.int(64) }, () => r.int(256))), binary: true, kind: 'binary' }
  return { data: 'x'.repeat(maxPayload + 1 + r.int(maxPayload)), binary: false, kind: 'oversized' }
}

/**
 * Close codes the gateway may legitimately use on a fuzz connection (1000:
 * the fuzzer's own close at the end):
 * 1007 invalid UTF-8 in a text frame (ws), 1009 frame over maxPayload (ws),
 * 4009 too many rejected messages, 4029 kept flooding after RATE_LIMITED.
 */
export const FUZZ_CLOSE_CODES = Object.freeze([1000, 1007, 1009, 4009, 4029])

/**
 * @typedef {object} FuzzStats
 * @property {number} sent frames written to an open socket
 * @property {number} answered frames the gateway answered (ack, error, pong)
 * @property {Record<string, number>} kinds frames sent by kind
 * @property {Record<string, number>} replies answers by op (and error code)
 * @property {Record<string, number>} closes connections closed by code
 * @property {number} connections opened
 * @property {number} otherFrames snap/q frames received (quotes for fuzz subscriptions)
 * @property {number} helloMaxMs slowest connect -> hello
 * @property {string[]} violations anything outside the contract
 * @property {number} ms
 */

/**
 * Fuzzes a gateway over `connections` parallel sockets until `frames` frames
 * were answered or `deadlineMs` passed.
 *
 * @param {object} options
 * @param {string} options.url
 * @param {number} options.frames target of answered frames
 * @param {number} [options.connections]
 * @param {number} [options.seed]
 * @param {number} [options.maxPayload]
 * @param {number} [options.deadlineMs] stop after this long whatever the count
 * @param {(s: FuzzStats) => void} [options.onProgress] called about every 2 s
 * @returns {Promise<FuzzStats>}
 */
export async function runFuzz ({ url, frames, connections = 4, seed = 1, maxPayload = 4096, deadlineMs = 600_000, onProgress }) {
  const started = Date.now()
  /** @type {FuzzStats} */
  const stats = { sent: 0, answered: 0, kinds: {}, replies: {}, closes: {}, connections: 0, otherFrames: 0, helloMaxMs: 0, violations: [], ms: 0 }
  const bump = (/** @type {Record<string, number>} */ m, /** @type {string} */ k) => { m[k] = (m[k] ?? 0) + 1 }
  const violation = (/** @type {string} */ v) => { if (stats.violations.length < 50) stats.violations.push(v) }
  const done = () => stats.answered >= frames || Date.now() - started > deadlineMs
  const progress = onProgress ? setInterval(() => onProgress({ ...stats, ms: Date.now() - started }), 2000) : null

  /** @param {number} lane */
  async function lane (lane) {
    const r = prng(seed * 1000 + lane)
    while (!done()) {
      stats.connections++
      await oneConnection(r)
    }
  }

  /** @param {Rand} r */
  async function oneConnection (r) {
    const ws = new WebSocket(url, { maxPayload: 16 << 20 })
    let answered = 0
    /** @type {(() => void) | null} */
    let wake = null
    /** @type {number | null} */
    let closeCode = null
    /** @type {string | null} lastKind: what the frame that preceded a close was */
    let lastKind = null
    const opened = new Promise((resolve) => {
      ws.on('message', (data, isBinary) => {
        let msg
        try {
          msg = JSON.parse(String(data))
        } catch {
          violation(`non-JSON reply (binary=${isBinary}): ${String(data).slice(0, 80)}`)
          return
        }
        if (msg.op === 'hello') return resolve(true)
        if (msg.op === 'ack' || msg.op === 'pong') {
          bump(stats.replies, msg.op)
        } else if (msg.op === 'error') {
          if (typeof msg.code !== 'string') violation(`error without code: ${String(data).slice(0, 120)}`)
          bump(stats.replies, `error:${msg.code}`)
        } else {
          stats.otherFrames++
          return
        }
        answered++
        stats.answered++
        wake?.()
      })
      ws.on('close', (code) => {
        closeCode = code
        bump(stats.closes, String(code))
        if (!(/** @type {readonly number[]} */ (FUZZ_CLOSE_CODES)).includes(code) && !done()) {
          violation(`close ${code} after a ${lastKind} frame`)
        }
        resolve(false)
        wake?.()
      })
      ws.on('error', () => {})
    })
    const openedAt = Date.now()
    let gaveUp = false
    const timer = setTimeout(() => { gaveUp = true; ws.terminate() }, 30_000)
    const ok = await opened
    clearTimeout(timer)
    stats.helloMaxMs = Math.max(stats.helloMaxMs, Date.now() - openedAt)
    if (!ok) {
      if (gaveUp) violation('no hello within 30 s')
      else if (!done()) violation(`connection refused or dropped before hello (close ${closeCode})`)
      return
    }
    let expected = 0
    while (!done() && closeCode === null) {
      if (ws.readyState !== WebSocket.OPEN) {
        // Closing: wait for the close event (it sets closeCode), at most 5 s.
        await new Promise((resolve) => {
          const t = setTimeout(() => { ws.terminate(); resolve(undefined) }, 5000)
          ws.once('close', () => { clearTimeout(t); resolve(undefined) })
        })
        break
      }
      const n = 1 + r.int(64)
      for (let i = 0; i < n && ws.readyState === WebSocket.OPEN; i++) {
        const f = fuzzFrame(r, maxPayload)
        ws.send(f.data, { binary: f.binary })
        lastKind = f.kind
        bump(stats.kinds, f.kind)
        stats.sent++
        expected++
      }
      // Every processed frame gets one answer; wait for all of them or a close.
      const waitUntil = Date.now() + 30_000
      while (answered < expected && closeCode === null) {
        if (Date.now() > waitUntil) {
          violation(`stall: ${expected - answered} of the last window unanswered for 30 s`)
          ws.terminate()
          break
        }
        await new Promise((resolve) => {
          wake = () => resolve(undefined)
          setTimeout(resolve, 200)
        })
        wake = null
      }
    }
    if (closeCode === null) {
      ws.close(1000)
      await new Promise((resolve) => {
        const t = setTimeout(() => { ws.terminate(); resolve(undefined) }, 2000)
        ws.once('close', () => { clearTimeout(t); resolve(undefined) })
      })
    }
  }

  await Promise.all(Array.from({ length: connections }, (_, i) => lane(i)))
  if (progress) clearInterval(progress)
  stats.ms = Date.now() - started
  return stats
}
