// A protocol-checking WebSocket client that keeps no frame history (chaos
// runs last minutes): per symbol it holds the seq (the protocol's
// QuoteReceiver), when the last snapshot and the last quote arrived, and
// counts; any gap or stray quote is a problem, and a gap is repaired the way
// docs/protocol.md says (resubscribe).

import WebSocket from 'ws'
import { QuoteReceiver } from '@wsps/protocol'
import { QuoteReader } from '../../testkit/src/quote-reader.js'

/**
 * @typedef {object} SymbolState
 * @property {number} quotes
 * @property {number} snaps
 * @property {number} lastAt receive time of the last quote (snap or delta)
 * @property {number} lastSnapAt
 */

export class LeanClient {
  /**
   * @param {string} url
   * @param {import('ws').ClientOptions} [options]
   * @returns {Promise<LeanClient>}
   */
  static async connect (url, options) {
    const c = new LeanClient(url, options)
    await c.opened
    return c
  }

  /**
   * @param {string} url
   * @param {import('ws').ClientOptions} [options]
   */
  constructor (url, options) {
    this.ws = new WebSocket(url, { perMessageDeflate: false, ...options })
    /** @type {Map<string, SymbolState>} */
    this.symbols = new Map()
    this.receiver = new QuoteReceiver({ fields: false })
    /** @type {string[]} */
    this.problems = []
    // A stray quote is a problem and not read; a delta that does not apply
    // is a problem, and its symbol is resubscribed (rule 3).
    this.reader = new QuoteReader(this.receiver, {
      wants: (symbol) => this.symbols.has(symbol),
      send: (frame) => this.ws.send(frame),
      stray: (kind, q) => this.problem(`${kind} for unsubscribed ${q.symbol}`),
      snap: (q, _before, now) => {
        const s = /** @type {SymbolState} */ (this.symbols.get(q.symbol))
        s.quotes++
        s.snaps++
        s.lastAt = s.lastSnapAt = now
      },
      applied: (d, now) => {
        const s = /** @type {SymbolState} */ (this.symbols.get(d.symbol))
        s.quotes++
        s.lastAt = now
      },
      broken: (d, outcome, held) => this.problem(`${outcome} on ${d.symbol}: held ${held}, got seq ${d.seq} base ${d.base ?? d.seq - 1}`)
    })
    /** @type {number | null} */
    this.closeCode = null
    this.nextId = 1
    /** @type {Map<number, (msg: any) => void>} */
    this.waiting = new Map()
    /** @type {any} */
    this.hello = null
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })))
      this.ws.once('error', reject)
      this.ws.on('message', (data) => {
        const msg = JSON.parse(String(data))
        if (msg.op === 'hello') {
          this.hello = msg
          resolve(this)
          return
        }
        this.onFrame(msg)
      })
    })
    this.ws.on('error', () => {})
    this.closed = new Promise((resolve) => this.ws.on('close', (code) => {
      this.closeCode = code
      resolve(code)
    }))
  }

  /** @param {any} msg */
  onFrame (msg) {
    if (msg.op === 'ack' || msg.op === 'error' || msg.op === 'pong') {
      const w = typeof msg.id === 'number' ? this.waiting.get(msg.id) : undefined
      if (w) {
        this.waiting.delete(msg.id)
        w(msg)
      }
      return
    }
    this.reader.read(msg)
  }

  /** @param {string} p */
  problem (p) {
    if (this.problems.length < 50) this.problems.push(p)
  }

  /**
   * @param {string} op
   * @param {string[]} symbols
   * @returns {Promise<any>}
   */
  request (op, symbols) {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiting.delete(id)
        reject(new Error(`no answer to ${op} within 15 s`))
      }, 15_000)
      this.waiting.set(id, (msg) => {
        clearTimeout(t)
        resolve(msg)
      })
      this.ws.send(JSON.stringify({ op, symbols, id }))
    })
  }

  /** @param {string[]} symbols */
  async sub (symbols) {
    for (const s of symbols) if (!this.symbols.has(s)) this.symbols.set(s, { quotes: 0, snaps: 0, lastAt: 0, lastSnapAt: 0 })
    for (let i = 0; i < symbols.length; i += 100) {
      const reply = await this.request('sub', symbols.slice(i, i + 100))
      if (reply.op !== 'ack') throw new Error(`sub refused: ${JSON.stringify(reply)}`)
    }
  }

  /**
   * true when every symbol got a quote (of the given kind) after `since`.
   * @param {number} since
   * @param {'any' | 'snap'} [kind]
   */
  allSince (since, kind = 'any') {
    for (const s of this.symbols.values()) if ((kind === 'snap' ? s.lastSnapAt : s.lastAt) <= since) return false
    return true
  }

  terminate () {
    this.ws.terminate()
  }
}
