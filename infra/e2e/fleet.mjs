// WebSocket clients for the e2e (infra/e2e/e2e.mjs): each connects through
// the ingress, subscribes in distinct mode (every tick), checks every frame
// (wrong symbol, seq gaps), reconnects on any close and resumes with `since`
// (docs/protocol.md, Recovery), and records how long a reconnect took until
// all its symbols were back, and every tick it never got (ticks lost).
import WebSocket from 'ws'
import { QuoteReceiver } from '../../services/protocol/index.js'
import { QuoteReader } from '../../harness/testkit/src/quote-reader.js'

const SYMBOLS = ['AAPL', 'MSFT', 'GOOGL', 'AMZN', 'NVDA', 'META', 'TSLA', 'JPM', 'V', 'XOM', 'BRK.B', 'JNJ']

class Client {
  /** @param {Fleet} fleet @param {number} id @param {string} host */
  constructor (fleet, id, host) {
    this.fleet = fleet
    this.id = id
    this.host = host
    this.symbols = [SYMBOLS[id % SYMBOLS.length], SYMBOLS[(id * 7 + 3) % SYMBOLS.length]]
    if (this.symbols[0] === this.symbols[1]) this.symbols.pop()
    this.held = new QuoteReceiver({ fields: false })
    // A quote for a symbol it did not ask for is counted and not read; a
    // delta that does not apply is logged and its symbol resubscribed
    // (docs/protocol.md rule 3: the sub answers with a fresh snap).
    this.reader = new QuoteReader(this.held, {
      wants: (symbol) => this.symbols.includes(symbol),
      send: (frame) => this.ws?.send(frame),
      delivery: { mode: 'distinct' },
      stray: () => { this.wrong++ },
      applied: (_d, now) => {
        this.updates++
        this.lastUpdateAt = now
      },
      // A snapshot over a held quote of the same epoch skips the ticks in
      // between: lost (0 when it only confirms what is held). Another
      // epoch: Redis lost the history; what was missed cannot be counted.
      snap: (q, before) => {
        this.snaps++
        if (before === undefined) return
        if (q.epoch !== undefined && this.epochs.get(q.symbol) !== undefined && this.epochs.get(q.symbol) !== q.epoch) this.epochChanges++
        else this.ticksLost += Math.max(0, q.seq - before - 1)
      },
      broken: (d, outcome, held, now) => {
        this.gaps++
        this.fleet.gapLog.push({ at: now, symbol: d.symbol, outcome, held, base: d.base ?? d.seq - 1, seq: d.seq })
      }
    })
    this.node = null
    this.ws = null
    this.connects = 0
    this.reconnects = 0
    this.closedAt = 0 // set while disconnected: start of the reconnect
    this.snapAt = 0 // all symbols snapshotted on the current connection
    this.lastUpdateAt = 0
    this.updates = 0
    this.wrong = 0
    this.gaps = 0
    this.snaps = 0
    this.ticksLost = 0
    this.epochChanges = 0
    /** @type {Map<string, string | undefined>} epoch of each symbol's held quote (for epochChanges) */
    this.epochs = new Map()
    this.recovered = 0
    this.notRecovered = 0
    this.stopped = false
  }

  connect () {
    if (this.stopped) return
    const f = this.fleet
    const ws = new WebSocket(f.url, { headers: { Host: this.host }, handshakeTimeout: 10000 })
    this.ws = ws
    this.node = null
    this.snapAt = 0
    ws.on('open', () => {
      this.connects++
      // Resume what is held (seq and epoch); the rest waits for a snapshot.
      /** @type {Record<string, {seq: number, epoch: string}>} */
      const since = {}
      for (const s of this.symbols) {
        const cursor = this.held.cursor(s)
        if (cursor) since[s] = cursor
        else this.held.resync(s)
      }
      ws.send(JSON.stringify({ op: 'sub', symbols: this.symbols, mode: 'distinct', id: 1, ...(Object.keys(since).length ? { since } : {}) }))
    })
    ws.on('message', (buf) => this.onFrame(String(buf)))
    ws.on('error', (err) => { f.errors[err.message.slice(0, 60)] = (f.errors[err.message.slice(0, 60)] || 0) + 1 })
    ws.on('close', (code) => {
      if (this.ws !== ws) return
      this.ws = null
      f.closes[code] = (f.closes[code] || 0) + 1
      if (this.stopped) return
      if (!this.closedAt) this.closedAt = Date.now()
      // Spread the reconnects (the gateway drains gradually anyway).
      setTimeout(() => this.connect(), 100 + Math.floor(Math.random() * 900))
    })
  }

  /** @param {string} text */
  onFrame (text) {
    let m
    try { m = JSON.parse(text) } catch { this.fleet.bad++; return }
    const now = Date.now()
    if (m.op === 'hello') {
      this.node = m.node
    } else if (m.op === 'snap' || m.op === 'q' || m.op === 'ack') {
      if (m.op === 'ack' && m.recovered) {
        for (const ok of Object.values(m.recovered)) ok ? this.recovered++ : this.notRecovered++
      } else {
        this.reader.read(m, now)
      }
      for (const s of this.symbols) this.epochs.set(s, this.held.cursor(s)?.epoch)
      // Back once every symbol continues (a snapshot, or a resumption the ack confirmed).
      if (!this.snapAt && this.ws && this.symbols.every((s) => this.held.current(s))) {
        this.snapAt = now
        if (this.closedAt) {
          this.fleet.reconnectMs.push(now - this.closedAt)
          this.reconnects++
          this.closedAt = 0
        }
      }
    } else if (m.op === 'error') {
      this.fleet.protoErrors++
    }
  }

  stop () {
    this.stopped = true
    if (this.ws) this.ws.terminate()
  }
}

export class Fleet {
  /** @param {{url: string, host: string}} o */
  constructor ({ url, host }) {
    this.url = url
    this.host = host
    /** @type {Client[]} */
    this.clients = []
    /** @type {number[]} */
    this.reconnectMs = []
    /** @type {Record<string, number>} */
    this.errors = {}
    /** @type {Record<string, number>} */
    this.closes = {}
    /** @type {any[]} */
    this.gapLog = []
    this.bad = 0
    this.protoErrors = 0
  }

  /** Open n more clients, spread over `spreadMs`, with Host `host`. @returns {Client[]} */
  add (n, spreadMs = 2000, host = this.host) {
    const added = []
    for (let i = 0; i < n; i++) {
      const c = new Client(this, this.clients.length, host)
      this.clients.push(c)
      added.push(c)
      setTimeout(() => c.connect(), Math.floor((i / n) * spreadMs))
    }
    return added
  }

  /** Clients per gateway pod (hello.node) among `list`. */
  perNode (list = this.clients) {
    /** @type {Record<string, number>} */
    const out = {}
    for (const c of list) if (c.ws && c.node) out[c.node] = (out[c.node] || 0) + 1
    return out
  }

  totals (list = this.clients) {
    let wrong = 0; let gaps = 0; let updates = 0; let ticksLost = 0; let ticks = 0; let epochChanges = 0; let recovered = 0; let notRecovered = 0
    for (const c of list) {
      wrong += c.wrong; gaps += c.gaps; updates += c.updates; ticksLost += c.ticksLost; epochChanges += c.epochChanges
      recovered += c.recovered; notRecovered += c.notRecovered
      // Every tick it got (deltas and snapshots) and every one it should have.
      ticks += c.updates + c.snaps + c.ticksLost
    }
    return { clients: list.length, wrong, gaps, updates, ticksLost, ticks, epochChanges, recovered, notRecovered }
  }

  stop () {
    for (const c of this.clients) c.stop()
  }
}

// Percentiles of the reconnect times: the harness's one percentile helper.
export { percentile as pct } from '../../harness/testkit/src/stats.js'
