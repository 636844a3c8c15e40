// wsps load test (k6 >= 1.6.0 for k6/websockets). The `options` block below is the spec:
// one named scenario (smoke, ramp or soak), stages from the environment, and
// thresholds that fail the run. Every parameter comes from __ENV, read once
// (lib/config.js lists them); the defaults work against `make up`:
//
//   k6 run loadtest/ramp.js                          # ramp to 1000 sockets, hold 1 min
//   k6 run -e TARGET=5000 loadtest/ramp.js
//   k6 run -e SCENARIO=smoke loadtest/ramp.js
//   k6 run -e RECONNECT=1 -e HOLD=10m loadtest/ramp.js   # during a rolling update
//   k6 run -e RECONNECT=1 -e MODE=distinct loadtest/ramp.js   # every tick, ticks lost counted
//
// Each VU holds CONNS_PER_VU sockets. Each socket: connect, read `hello`
// (its `node` is the pod), subscribe to SUBS popularity-skewed symbols, time
// the first snapshot, then for every quote: latency (receive time - `ts`),
// seq continuity per symbol (snap resets it; a delta must continue the held
// seq, see continues() in services/protocol/receiver.js), and that the symbol is one it asked
// for. MODE=distinct subscribes every tick and counts each tick a snapshot
// skipped over a held quote (wsps_ticks_lost, threshold 0); with RECONNECT=1
// a socket's reconnect resumes every symbol from the seq and epoch it
// holds (`since`, docs/protocol.md Recovery). Metrics are wsps_*, tagged by node; per-pod counts reach the
// end-of-test summary as tallies (lib/tally.js explains why).

import { check, sleep } from 'k6'
import exec from 'k6/execution'
import { Counter, Rate, Trend } from 'k6/metrics'
import { WebSocket } from 'k6/websockets'
import { ServerOp } from '../services/protocol/index.js'
import { readConfig } from './lib/config.js'
import { buildPlan, popularity, prng, scenarios } from './lib/profiles.js'
import { buildSummary, renderText } from './lib/summary.js'
import { Tally, bucketOf } from './lib/tally.js'
import { Delta, QuoteTracker, classifyClose, errorExpected, parseQuotesFrame, requests } from './lib/wsps.js'

const CFG = readConfig(__ENV)
const PLAN = buildPlan(CFG)
const POPULAR = popularity(CFG.symbols, CFG.skew)
const L = CFG.limits
/** What a resubscription names besides its symbols: the run's delivery mode. */
const DELIVERY = CFG.mode === 'distinct' ? { mode: 'distinct' } : {}

/** Tallies leave each VU this often (and when it ends); an interrupted run loses at most this much. */
const FLUSH_MS = 15000
/**
 * An open socket that has not shown `hello` after this long is closed and
 * opened again, counted as a failed connect (reason no_hello). The gateway
 * sends hello at once; k6's WebSocket can drop the first frame when its
 * reader wins a race against the open event (k6 v1.8.1 websockets.go runs
 * `go w.loop()` before queueing the open), seen about once per 500-1000
 * connects through nginx.
 */
const HELLO_TIMEOUT_MS = 10000

const thresholds = {
  // share of connects that reached `hello`
  wsps_connect_success: [`rate>=${L.connectOk}`],
  wsps_time_to_snapshot: [`p(95)<${L.snapP95}`],
  wsps_quote_latency: [`p(95)<${L.latP95}`, `p(99)<${L.latP99}`],
  wsps_quotes: ['count>0'],
  wsps_wrong_symbol: ['count==0'],
  wsps_seq_gaps: ['count==0'],
  wsps_errors: ['count==0'],
  wsps_unexpected_closes: ['count==0']
}
if (CFG.reconnect) thresholds.wsps_reconnect_to_snapshot = [`p(99)<${L.reconnectP99}`]
if (CFG.mode === 'distinct') thresholds.wsps_ticks_lost = ['count==0']

export const options = {
  scenarios: scenarios(CFG, PLAN),
  thresholds,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)', 'count']
}

const M = {
  connectOk: new Rate('wsps_connect_success'),
  connections: new Counter('wsps_connections'),
  helloTime: new Trend('wsps_time_to_hello', true),
  snapTime: new Trend('wsps_time_to_snapshot', true),
  latency: new Trend('wsps_quote_latency', true),
  quotes: new Counter('wsps_quotes'),
  snapQuotes: new Counter('wsps_snapshot_quotes'),
  gaps: new Counter('wsps_seq_gaps'),
  ticksLost: new Counter('wsps_ticks_lost'),
  recovered: new Counter('wsps_recovered_symbols'),
  notRecovered: new Counter('wsps_unrecovered_symbols'),
  wrong: new Counter('wsps_wrong_symbol'),
  resubs: new Counter('wsps_resubscribes'),
  errors: new Counter('wsps_errors'),
  closes: new Counter('wsps_closes'),
  unexpected: new Counter('wsps_unexpected_closes'),
  reconnects: new Counter('wsps_reconnects'),
  reconnectTime: new Trend('wsps_reconnect_to_snapshot', true)
}

const GAP_KIND = ['', 'gap', 'stale', 'no_snapshot']
/** Seq gaps logged in full per VU (the rest are only counted). */
const GAP_LOG_MAX = 5

/** @param {string | undefined} err the error event's text */
function failureReason (err) {
  if (!err) return 'closed_before_hello'
  if (/bad handshake/.test(err)) return 'handshake_refused'
  if (/refused/.test(err)) return 'connection_refused'
  if (/timeout|deadline/i.test(err)) return 'timeout'
  if (/reset/.test(err)) return 'reset'
  if (/assign requested address|address already in use/.test(err)) return 'no_local_port'
  if (/too many open files/.test(err)) return 'too_many_open_files'
  return 'other'
}

/** One VU's run: its sockets, its tallies, its timers. */
class VuRun {
  /**
   * @param {number} startAt scenario start (ms since epoch)
   */
  constructor (startAt) {
    this.endAt = startAt + PLAN.endMs
    this.holdStartAt = CFG.holdMs > 0 ? startAt + PLAN.holdStartMs : Infinity
    this.vuId = exec.vu.idInTest
    this.rand = prng((CFG.seed * 2654435761 + this.vuId * 40503) >>> 0)
    this.tally = new Tally()
    /** latency histogram buckets, bucket index -> count (flushed into the tally) */
    this.latHist = new Array(256).fill(0)
    /** client lag (frame read -> handled by the script): k6 itself falling behind */
    this.lagHist = new Array(256).fill(0)
    /** @type {Conn[]} */
    this.conns = []
    this.finishing = false
    this.gapLogs = 0
    /** @type {any[]} */
    this.timers = []
  }

  start () {
    const now = Date.now()
    for (let i = 0; i < CFG.connsPerVu; i++) {
      const conn = new Conn(this, i)
      this.conns.push(conn)
      const delay = Math.floor(i * PLAN.spacingMs)
      if (delay === 0) conn.open(null)
      else this.timers.push(setTimeout(() => { if (!this.finishing) conn.open(null) }, delay))
    }
    // Flush tallies now and then, staggered over the VUs.
    const offset = (this.vuId * 997) % FLUSH_MS
    this.timers.push(setTimeout(() => {
      this.flush()
      this.timers.push(setInterval(() => this.flush(), FLUSH_MS))
    }, offset))
    if (CFG.churnMs > 0) {
      const every = Math.max(50, Math.floor(CFG.churnMs / CFG.connsPerVu))
      let next = 0
      this.timers.push(setInterval(() => this.conns[next++ % this.conns.length].churn(), every))
    }
    this.timers.push(setTimeout(() => this.finish(), Math.max(0, this.endAt - now)))
  }

  /** Moves every counter into the tally and emits it as checks (lib/tally.js). */
  flush () {
    for (const c of this.conns) c.flushInto(this.tally)
    this.tally.addBuckets('lat', this.latHist)
    this.tally.addBuckets('lag', this.lagHist)
    const names = this.tally.drain()
    if (names.length === 0) return
    /** @type {Record<string, boolean>} */
    const obj = {}
    for (const n of names) obj[n] = true
    check(null, obj)
  }

  /** The end of the hold: flush, stop timers, close every socket. */
  finish () {
    this.finishing = true
    for (const t of this.timers) { clearTimeout(t); clearInterval(t) }
    this.timers = []
    this.flush()
    for (const c of this.conns) c.close()
  }
}

/** One logical client: a socket, and its successors after reconnects. */
class Conn {
  /**
   * @param {VuRun} run
   * @param {number} index
   */
  constructor (run, index) {
    this.run = run
    this.urlIndex = run.vuId * CFG.connsPerVu + index
    this.rand = prng((run.vuId * 7919 + index * 104729 + CFG.seed) >>> 0)
    this.symbols = POPULAR.pick(this.rand, CFG.subs)
    this.nextId = 1
    this.attempt = 0
    /** @type {any} */
    this.ws = null
    /** @type {any} */
    this.reconnectTimer = null
    /** @type {any} */
    this.helloTimer = null
    // Declared here for the type check (no value: open() sets them for each
    // socket, resetCounters() after each flush).
    /** @type {{at: number, node: string} | null} the close the current socket replaces (reconnects) */
    this.from
    /** @type {string} the pod of the current socket ('' before its hello) */
    this.node
    /** @type {{node: string}} */
    this.tags
    /** @type {QuoteTracker} */
    this.tracker
    /** @type {boolean} */
    this.gotHello
    /** @type {boolean} */
    this.snapped
    /** @type {boolean} */
    this.byClient
    /** @type {string | undefined} */
    this.lastError
    /** @type {number} */
    this.subAt
    /** @type {boolean} */
    this.noHello
    /** @type {number} */
    this.t0
    /** @type {number} */
    this.frames
    /** @type {number} */
    this.quotes
    /** @type {number} */
    this.quotesHold
    /** @type {number} */
    this.latSum
    /** @type {number} */
    this.snaps
    this.resetCounters()
  }

  resetCounters () {
    this.frames = 0
    this.quotes = 0
    this.quotesHold = 0
    this.latSum = 0
    this.snaps = 0
  }

  /**
   * Opens a socket. `from`: the close this one replaces (reconnects).
   *
   * @param {{at: number, node: string} | null} from
   */
  open (from) {
    this.from = from
    this.node = ''
    /** @type {{node: string}} */
    this.tags = { node: 'none' }
    // One tracker for the Conn's life: a reconnect resumes what it holds.
    this.tracker ??= new QuoteTracker()
    this.gotHello = false
    this.snapped = false
    this.byClient = false
    /** @type {string | undefined} */
    this.lastError = undefined
    this.subAt = 0
    this.noHello = false
    this.t0 = Date.now()
    const ws = new WebSocket(CFG.urls[this.urlIndex % CFG.urls.length])
    ws.onopen = () => {
      // Opened after the end of the hold: close now (close() skipped it while connecting).
      if (this.byClient || this.run.finishing) return ws.close()
      this.helloTimer = setTimeout(() => this.helloTimeout(), HELLO_TIMEOUT_MS)
    }
    ws.onmessage = (/** @type {any} */ e) => this.onMessage(e)
    ws.onerror = (/** @type {any} */ e) => { this.lastError = e.error }
    ws.onclose = (/** @type {any} */ e) => this.onClose(e)
    this.ws = ws
  }

  /** @param {string} frame */
  send (frame) {
    if (this.ws && this.ws.readyState === 1) this.ws.send(frame)
  }

  id () {
    return this.nextId++
  }

  /** @param {any} e */
  onMessage (e) {
    const data = e.data
    const at = e.timestamp
    this.frames++
    this.run.lagHist[Math.min(255, bucketOf(Date.now() - at))]++
    const quotes = parseQuotesFrame(data)
    if (quotes !== null) return this.onQuotes(quotes, at)
    const msg = JSON.parse(data)
    switch (msg.op) {
      case ServerOp.HELLO: return this.onHello(msg, at)
      case ServerOp.SNAP: return this.onSnap(msg.quotes, at)
      case ServerOp.ACK: return this.onAck(msg, at)
      case ServerOp.ERROR: return this.onError(msg)
    }
  }

  /**
   * @param {any} msg
   * @param {number} at
   */
  onHello (msg, at) {
    this.clearHelloTimer()
    if (this.run.finishing) return this.close()
    this.gotHello = true
    this.attempt = 0
    this.node = String(msg.node)
    this.tags = { node: this.node }
    M.connectOk.add(1, this.tags)
    M.connections.add(1, this.tags)
    M.helloTime.add(at - this.t0, this.tags)
    this.run.tally.observe('hello', at - this.t0)
    this.run.tally.add('conn', this.node)
    if (this.from) {
      M.reconnects.add(1, { node: this.from.node })
      this.run.tally.add('recon', this.from.node)
    }
    const max = msg.limits && msg.limits.maxSubscriptions
    if (max && this.symbols.length > max) this.symbols = this.symbols.slice(0, max)
    const since = this.tracker.reconnected(this.symbols)
    this.tracker.subscribe(this.symbols)
    this.subAt = Date.now()
    for (const f of requests('sub', this.symbols, () => this.id(), { mode: CFG.mode, since })) this.send(f)
  }

  /**
   * An ack; the answer to a resuming sub says which symbols continue. All
   * of them: the connection is back without waiting for a snapshot.
   *
   * @param {any} msg
   * @param {number} at
   */
  onAck (msg, at) {
    this.tracker.onAck(msg.id)
    if (msg.recovered === null || typeof msg.recovered !== 'object') return
    const results = Object.values(msg.recovered)
    const ok = results.filter((r) => r === true).length
    if (ok) M.recovered.add(ok, this.tags)
    if (ok < results.length) M.notRecovered.add(results.length - ok, this.tags)
    if (ok === this.symbols.length) this.back(at)
  }

  /**
   * @param {any[]} quotes
   * @param {number} at
   */
  onSnap (quotes, at) {
    let wrong = 0
    let lost = 0
    for (const q of quotes) {
      const skipped = this.tracker.onSnapQuote(q)
      if (skipped < 0) wrong++
      else lost += skipped
    }
    this.snaps += quotes.length
    M.snapQuotes.add(quotes.length, this.tags)
    if (wrong) this.wrongSymbols(wrong)
    // Merge mode promises the latest state, not every tick.
    if (lost && CFG.mode === 'distinct') {
      M.ticksLost.add(lost, this.tags)
      this.run.tally.add('lost', this.node, lost)
    }
    this.back(at)
  }

  /**
   * The connection's subscriptions are back (its first snapshot, or a
   * resumption the ack confirmed): times to snapshot and to reconnect.
   *
   * @param {number} at
   */
  back (at) {
    if (!this.snapped) {
      this.snapped = true
      const tts = at - this.subAt
      M.snapTime.add(tts, this.tags)
      this.run.tally.observe('tts', tts)
      if (this.from) {
        const rts = at - this.from.at
        M.reconnectTime.add(rts, this.tags)
        this.run.tally.observe('rts', rts)
      }
    }
  }

  /**
   * @param {any[]} quotes
   * @param {number} at when the frame was read
   */
  onQuotes (quotes, at) {
    const tr = this.tracker
    const hist = this.run.latHist
    let delivered = 0
    let wrong = 0
    /** @type {string[] | null} */
    let resync = null
    for (let i = 0; i < quotes.length; i++) {
      const q = quotes[i]
      const r = tr.onDelta(q)
      if (r === Delta.IGNORED) continue
      if (r === Delta.WRONG_SYMBOL) { wrong++; continue }
      delivered++
      const lat = at - q.ts
      M.latency.add(lat, this.tags)
      this.latSum += lat
      hist[Math.min(255, bucketOf(lat))]++
      if (r !== Delta.OK) {
        if (this.run.gapLogs++ < GAP_LOG_MAX) {
          console.warn(`wsps seq gap (${GAP_KIND[r]}): node=${this.node} symbol=${q.symbol} held=${tr.held.seq(q.symbol)} seq=${q.seq} base=${q.base} ` +
            `deltas in frame=${quotes.length} age=${Math.round(at - q.ts)}ms connected ${Math.round(at - this.t0)}ms ago${this.from ? ` (reconnected from ${this.from.node})` : ''}`)
        }
        M.gaps.add(1, { node: this.node, kind: GAP_KIND[r] })
        this.run.tally.add('gap', this.node)
        // Receiver rule 3: drop it and resubscribe the symbol for a fresh snapshot.
        tr.resync(q.symbol)
        if (resync === null) resync = []
        resync.push(q.symbol)
      }
    }
    if (delivered) {
      // wsps_quotes is added when the counters are flushed (one sample per
      // flush, not per frame: samples are what costs k6 the most).
      this.quotes += delivered
      if (at >= this.run.holdStartAt) this.quotesHold += delivered
    }
    if (wrong) this.wrongSymbols(wrong)
    if (resync) {
      M.resubs.add(resync.length, this.tags)
      this.run.tally.add('resub', this.node, resync.length)
      this.send(JSON.stringify({ op: 'unsub', symbols: resync, id: this.id() }))
      this.send(JSON.stringify({ op: 'sub', symbols: resync, id: this.id(), ...DELIVERY }))
    }
  }

  /** @param {number} n */
  wrongSymbols (n) {
    M.wrong.add(n, this.tags)
    this.run.tally.add('wrong', this.node, n)
  }

  /** @param {any} msg */
  onError (msg) {
    const code = String(msg.code)
    this.run.tally.add('err', code)
    if (errorExpected(code, CFG.reconnect)) return
    M.errors.add(1, { node: this.node, code })
    this.run.tally.add('errn', this.node)
  }

  clearHelloTimer () {
    if (this.helloTimer) {
      clearTimeout(this.helloTimer)
      this.helloTimer = null
    }
  }

  /** Open for HELLO_TIMEOUT_MS without hello: count it, close, open again. */
  helloTimeout () {
    this.helloTimer = null
    if (this.gotHello || !this.ws || this.run.finishing) return
    this.noHello = true
    M.connectOk.add(0, { node: 'none', reason: 'no_hello' })
    this.run.tally.add('fail', 'no_hello')
    this.byClient = true
    this.ws.close()
  }

  /** @param {any} e */
  onClose (e) {
    this.clearHelloTimer()
    const now = Date.now()
    const run = this.run
    const c = classifyClose(e.code, { reconnect: CFG.reconnect, byClient: this.byClient || run.finishing })
    if (!this.gotHello) {
      if (!this.byClient) {
        const reason = failureReason(this.lastError)
        M.connectOk.add(0, { node: 'none', reason })
        run.tally.add('fail', reason)
      }
    } else if (!this.byClient && !run.finishing) {
      M.closes.add(1, { node: this.node, code: String(c.code) })
      run.tally.add('close', String(c.code))
      run.tally.add('closen', this.node)
      if (!c.expected) M.unexpected.add(1, { node: this.node, code: String(c.code) })
    }
    this.flushInto(run.tally)
    this.ws = null
    if (run.finishing) {
      run.flush()
      return
    }
    if (this.noHello && now < run.endAt - 1000) {
      this.open(this.from)
      return
    }
    if (c.reconnect && now < run.endAt - 1000) {
      this.attempt++
      // A retry after a failed connect keeps measuring from the close that started it.
      const from = this.gotHello ? { at: now, node: this.node } : this.from
      // With several URLs, go elsewhere (a drained gateway is going away).
      this.urlIndex++
      this.reconnectTimer = setTimeout(() => {
        this.reconnectTimer = null
        if (!run.finishing) this.open(from)
      }, c.delayMs(this.attempt, this.rand))
    }
  }

  /** Soak churn: swap one subscription for another symbol. */
  churn () {
    if (!this.ws || !this.gotHello || this.run.finishing) return
    const held = new Set(this.symbols)
    const [fresh] = POPULAR.pick(this.rand, 1, held)
    if (!fresh) return
    const i = Math.floor(this.rand() * this.symbols.length)
    const old = this.symbols[i]
    this.symbols[i] = fresh
    const unsubId = this.id()
    this.tracker.unsubscribe([old], unsubId)
    this.tracker.subscribe([fresh])
    this.send(JSON.stringify({ op: 'unsub', symbols: [old], id: unsubId }))
    this.send(JSON.stringify({ op: 'sub', symbols: [fresh], id: this.id(), ...DELIVERY }))
  }

  /** @param {Tally} tally */
  flushInto (tally) {
    if (this.frames === 0 || !this.gotHello) {
      this.resetCounters()
      return
    }
    const node = this.node
    if (this.quotes > 0) M.quotes.add(this.quotes, this.tags)
    tally.add('f', node, this.frames)
    tally.add('q', node, this.quotes)
    tally.add('qh', node, this.quotesHold)
    tally.add('lat', node, Math.round(this.latSum))
    tally.add('snap', node, this.snaps)
    this.resetCounters()
  }

  /** Closes by the client (end of the hold). A socket still connecting is closed on its hello. */
  close () {
    this.clearHelloTimer()
    if (this.reconnectTimer) {
      clearTimeout(this.reconnectTimer)
      this.reconnectTimer = null
    }
    this.byClient = true
    // close() on a socket that is still connecting can block k6's event loop; onHello closes those.
    if (this.ws && this.ws.readyState === 1) this.ws.close()
  }
}

export default function () {
  const startAt = exec.scenario.startTime
  const now = Date.now()
  if (now >= startAt + PLAN.endMs - 1000) {
    // Past the hold (a VU restarting near the end): nothing to do.
    sleep(Math.max(0.1, (startAt + PLAN.endMs - now) / 1000))
    return
  }
  // Register every counter so the thresholds see a zero, not a missing metric.
  for (const m of [M.gaps, M.ticksLost, M.wrong, M.errors, M.unexpected, M.reconnects, M.resubs, M.closes]) m.add(0)
  new VuRun(startAt).start()
}

/** @param {any} data */
export function handleSummary (data) {
  const meta = {
    scenario: CFG.scenario,
    target: CFG.target,
    peakConns: PLAN.peakConns,
    holdConns: PLAN.holdConns,
    vus: PLAN.vus,
    connsPerVu: CFG.connsPerVu,
    subs: CFG.subs,
    symbols: CFG.symbols.length,
    skew: CFG.skew,
    urls: CFG.urls,
    reconnect: CFG.reconnect,
    churnMs: CFG.churnMs,
    rampMs: CFG.rampMs,
    holdMs: CFG.holdMs,
    endMs: PLAN.endMs,
    stages: CFG.stages,
    limits: CFG.limits,
    localIps: __ENV.WSPS_LOCAL_IPS || undefined
  }
  const summary = buildSummary(data, meta)
  const text = renderText(summary)
  const json = JSON.stringify({ ...summary, k6: { metrics: data.metrics, state: data.state } }, null, 2)
  return {
    stdout: text + (CFG.summaryJsonLine ? `WSPS_SUMMARY ${JSON.stringify(summary)}\n` : ''),
    [`${CFG.summaryDir}/summary.json`]: json + '\n',
    [`${CFG.summaryDir}/summary.txt`]: text
  }
}
