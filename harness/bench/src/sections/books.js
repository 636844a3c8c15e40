// Order books measured (issue 48): the gateway's `levels` deltas against a
// naive server that resends the full top 25 on every change, side by side
// in one run, fed by one book publisher through the real book script.
//
// The book publisher (book-publisher.js, on the load core) moves
// `booksCount` books, each a seeded random walk with its changes near the
// top (book-walk.js), `booksRate` updates per second each. For each
// subscriber count of `booksSubs`, in turn for each server (started on the
// server core for the step alone, so an idle one costs the other nothing):
//
// - the Go load generator (-adapter=wsps-books / naive-books, epoll mode,
//   `booksProcs` processes on fresh 127.0.0.x sources) opens that many
//   subscribers, each to one book at depth 25 (uniformly drawn), counts
//   every `levels` and `book` frame after a book's first and its latency
//   (publish ts, which the frame carries, to the read), and the seq gaps;
// - one reference client per book (services/protocol/book-receiver.js
//   BookReceiver, in this process) holds each book and checks the
//   checksum of every frame (a mismatch or gap: counted, then unsub + sub
//   as a client would), and counts the bytes its socket read per frame;
// - then settle, then a window of `booksMeasureMs` in which the server's
//   CPU is metered.
//
// A step passes at p99 <= P99_LIMIT_MS with no gap and no mismatch; a
// server's figure is its best passing step's frames per second per core
// of the server (books-report.js).

import WebSocket from 'ws'
import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { BookReceiver, BookVerdict } from '@wsps/protocol/book-receiver'
import { sleep, waitFor } from '@wsps/testkit'
import { CpuMeter, processTimes } from '@wsps/testkit/proc'
import { SERVERS } from '../servers.js'
import { log, round } from '../bench-run.js'
import { quantiles, startFleet } from '../fleet.js'
import { P99_LIMIT_MS } from '../profiles.js'
import { start } from '../spawn.js'
import { BOOK_SERVERS, DEPTH } from './books-report.js'

/**
 * @param {import('../bench-run.js').BenchRun} run
 */
export async function books (run) {
  const P = run.P
  const symbols = Array.from({ length: P.booksCount }, (_, i) => `S${String(i).padStart(4, '0')}`)
  log(`books: ${P.booksCount} books x ${P.booksRate} updates/s, depth ${DEPTH}, subscribers ${P.booksSubs.join(', ')}`)
  const pub = start(process.execPath, [new URL('../book-publisher.js', import.meta.url).pathname, `--redis=${run.redisUrl}`, `--books=${P.booksCount}`], { core: run.loadCore, name: 'book-publisher' })
  /** @type {any[]} */
  const steps = []
  try {
    await pub.waitLine((l) => l.type === 'ready', 30_000)
    pub.send({ cmd: 'rate', perBook: P.booksRate })
    for (const n of P.booksSubs) {
      for (const name of BOOK_SERVERS) {
        const step = await measure(run, pub, name, n, symbols)
        steps.push(step)
        log(`books ${name} x ${n}: ${step.framesPerSec} frames/s, ${step.cores} cores (${step.framesPerCore}/core), p50 ${step.p50} p99 ${step.p99} ms, ${step.bytesPerFrame} B/frame, mismatches ${step.mismatches}, gaps ${step.gaps}${step.pass ? '' : ' FAIL'}`)
      }
    }
  } finally {
    pub.send({ cmd: 'rate', perBook: 0 })
    await pub.stop('SIGTERM', { graceMs: 2000, killAfterMs: 3000 })
  }
  return { params: Object.fromEntries(Object.entries(P).filter(([k]) => k.startsWith('books'))), depth: DEPTH, steps }
}

/**
 * One server at one subscriber count.
 *
 * @param {import('../bench-run.js').BenchRun} run
 * @param {import('../spawn.js').Child} pub the book publisher
 * @param {typeof BOOK_SERVERS[number]} name
 * @param {number} n subscribers
 * @param {string[]} symbols
 */
async function measure (run, pub, name, n, symbols) {
  const P = run.P
  const server = await SERVERS[name === 'wsps' ? 'wsps' : 'naive-books'].start({
    redisUrl: run.redisUrl,
    core: run.serverCore,
    runDir: run.runDir,
    ...(name === 'wsps' ? { env: { WSPS_NODE_NAME: `bench-books-${n}` } } : {})
  })
  /** @type {import('../fleet.js').Fleet | null} */
  let fleet = null
  const checkers = new Checkers(`${server.url}/ws`, symbols)
  const feed = new FeedProbe(run.redisUrl, symbols)
  try {
    fleet = await startFleet({
      bin: run.bin.loadgen,
      adapter: `${name}-books`,
      url: server.url,
      conns: n,
      procs: Math.min(P.booksProcs, Math.max(1, Math.ceil(n / 2500))),
      symbols: symbols.length,
      k: 1,
      zipf: 0,
      core: run.loadCore,
      maxSeconds: 600,
      readyTimeout: Math.max(30, Math.ceil(n / P.booksConnectPerSec)),
      mode: 'epoll',
      extraArgs: [`-coalesce-us=${P.fanCoalesceUs}`]
    })
    await checkers.ready().catch((/** @type {Error} */ err) => { throw new Error(`${err.message}; ${name}: ${server.logs?.().join(' | ') ?? ''}`) })
    await sleep(P.booksSettleMs)
    const procs0 = processTimes()
    const meters = {
      server: new CpuMeter(server.roots, procs0),
      loadgen: new CpuMeter(fleet.pids, procs0),
      publisher: new CpuMeter(() => [pub.pid], procs0),
      redis: new CpuMeter(run.redisPids, procs0)
    }
    const c0 = checkers.counts()
    feed.lags.length = 0
    const t0 = Date.now()
    await sleep(P.booksMeasureMs)
    const t1 = Date.now()
    const procs1 = processTimes()
    const cpu = Object.fromEntries(Object.entries(meters).map(([k, m]) => [k, round(m.read(procs1), 3)]))
    const c1 = checkers.counts()
    const [feedP50, feedP99] = sortedQuantiles(feed.lags, [0.5, 0.99])
    await fleet.tickedAfter(t1)
    const w = fleet.window(t0, t1)
    const seconds = w.ticks / fleet.kids.length
    const ticks = pub.lines.filter((l) => l.type === 'tick' && l.t > t0 && l.t <= t1)
    const perTick = (/** @type {string} */ k) => (ticks.length ? ticks.reduce((a, l) => a + (l[k] ?? 0), 0) / ticks.length : 0)
    const updates = perTick('published')
    const [p50, p99] = quantiles(w.hist, [0.5, 0.99])
    const frames = seconds > 0 ? w.frames / seconds : 0
    const checked = c1.frames - c0.frames
    const mismatches = checkers.mismatches
    const gaps = w.gaps + checkers.gaps
    return {
      server: name,
      subscribers: fleet.conns,
      failed: fleet.failed,
      updatesPerSec: Math.round(updates),
      // Due but not written: the publisher had its most writes waiting for Redis (book-publisher.js).
      skippedPerSec: Math.round(perTick('skipped')),
      // Every update to every subscriber of its book: what the naive server sends.
      offeredPerSec: Math.round((updates * fleet.conns) / symbols.length),
      framesPerSec: Math.round(frames),
      cores: cpu.server,
      framesPerCore: cpu.server > 0.02 ? Math.round(frames / cpu.server) : null,
      p50: round(p50, 1),
      p99: round(p99, 1),
      // p99 to the clients' sockets (the kernel's receive timestamp), without the load generator's own lag.
      socketP99: w.arrived.size ? round(quantiles(w.arrived, [0.99])[0], 1) : null,
      // What the feed itself adds, the same for both servers: publisher ts to a Redis subscriber in the bench's own process.
      feedP50: round(feedP50, 1),
      feedP99: round(feedP99, 1),
      bytesPerFrame: checked ? round((c1.bytes - c0.bytes) / checked, 1) : null,
      payloadPerFrame: checked ? round((c1.payload - c0.payload) / checked, 1) : null,
      checkedFrames: checkers.frames,
      mismatches,
      gaps,
      dups: w.dups,
      errors: w.errors + checkers.errors,
      cpu,
      loadCore: round(cpu.loadgen + cpu.publisher + cpu.redis, 3),
      pass: p99 <= P99_LIMIT_MS && mismatches === 0 && gaps === 0 && fleet.failed === 0
    }
  } finally {
    feed.close()
    checkers.close()
    await fleet?.stop()
    await server.stop()
  }
}

/**
 * One reference client per book: the receiver rules of
 * services/protocol/book-receiver.js over every frame, and the bytes.
 */
class Checkers {
  mismatches = 0
  gaps = 0
  errors = 0
  /** frames checked (after each book's first) */
  frames = 0
  #bytes = 0
  #payload = 0
  #held = 0
  /** @type {WebSocket[]} */
  #sockets = []

  /**
   * @param {string} url
   * @param {string[]} symbols one client each
   */
  constructor (url, symbols) {
    for (const symbol of symbols) {
      const ws = new WebSocket(url, { perMessageDeflate: false })
      const receiver = new BookReceiver()
      receiver.want(symbol, DEPTH)
      const sub = () => ws.send(JSON.stringify({ op: 'sub', id: 1, symbols: [symbol], book: DEPTH }))
      let first = true
      ws.on('open', sub)
      ws.on('message', (data) => {
        const text = String(data)
        const msg = JSON.parse(text)
        if (msg.op === 'error') this.errors++
        if (msg.op !== 'book' && msg.op !== 'levels') return
        const verdict = receiver.frame(msg)
        if (first) {
          first = false
          this.#held++
        } else if (verdict !== BookVerdict.RESYNCING) {
          this.frames++
          this.#payload += Buffer.byteLength(text)
          // What the socket read for this frame: the text and its frame header.
          this.#bytes += Buffer.byteLength(text) + wsHeader(Buffer.byteLength(text))
        }
        if (verdict === BookVerdict.CHECKSUM_MISMATCH || verdict === BookVerdict.GAP) {
          if (verdict === BookVerdict.GAP) this.gaps++
          else this.mismatches++
          receiver.resync(symbol)
          ws.send(JSON.stringify({ op: 'unsub', symbols: [symbol], book: DEPTH }))
          sub()
        }
      })
      ws.on('error', () => { this.errors++ })
      this.#sockets.push(ws)
    }
  }

  async ready () {
    await waitFor(() => this.#held >= this.#sockets.length, { timeout: 30_000, message: `${this.#sockets.length} reference clients holding their book` })
  }

  counts () {
    return { frames: this.frames, bytes: this.#bytes, payload: this.#payload }
  }

  close () {
    for (const ws of this.#sockets) ws.terminate()
  }
}

/**
 * The feed's own latency: publish ts to a plain Redis subscriber of every
 * book channel (in the bench's process, not pinned), so a step's latency
 * can be told apart from what Redis and the publisher added before either
 * server got the change.
 */
class FeedProbe {
  /** @type {number[]} ms, since the window began */
  lags = []
  #redis

  /**
   * @param {string} url
   * @param {string[]} symbols
   */
  constructor (url, symbols) {
    const keys = redisKeys('wsps')
    this.#redis = new Redis(url)
    this.#redis.on('message', (_channel, message) => {
      const ts = Number(/"ts":(\d+)/.exec(message)?.[1])
      if (ts > 0 && this.lags.length < 1_000_000) this.lags.push(Date.now() - ts)
    })
    this.#redis.subscribe(...symbols.map(keys.bookChannel)).catch(() => {})
  }

  close () {
    this.#redis.disconnect()
  }
}

/**
 * @param {number[]} values
 * @param {number[]} qs quantiles (0..1)
 * @returns {number[]} NaN when empty
 */
export function sortedQuantiles (values, qs) {
  const v = [...values].sort((a, b) => a - b)
  return qs.map((q) => (v.length ? v[Math.min(v.length - 1, Math.floor(q * v.length))] : NaN))
}

/**
 * A server's unmasked frame header for a text of this length (RFC 6455 5.2).
 *
 * @param {number} len
 */
export function wsHeader (len) {
  return len < 126 ? 2 : len < 65536 ? 4 : 10
}
