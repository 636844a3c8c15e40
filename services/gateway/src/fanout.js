// The batching loop. A quote arriving from Redis costs O(1): the hub merges
// it into its symbol's pending update and marks the symbol dirty. Once per
// window (WSPS_BATCH_MS) one pass hands each dirty symbol's single shared
// update to its subscribers, then writes every dirty connection once — a
// reader of N symbols gets one frame per window, and the per-subscriber work
// is per window, not per quote, however fast a symbol ticks.
//
// A pass over many connections is written in chunks with an event-loop turn
// between them, so Redis input and new clients are served while it runs.
// In adaptive mode (WSPS_BATCH_MS=0) a quote that arrives during a pass is
// handed out before the next chunk: connections not yet written in this pass
// get it in the same write, those already written are queued for the next
// pass, which starts as soon as this one ends. A quote then waits about one
// pass, not the rest of this one plus its position in the next. A pass never
// outgrows the connections it started with: under a load that keeps every
// connection busy, passes follow each other instead of one pass growing for
// as long as the load lasts, with its list of connections and its latency
// samples (each holding an update and its frame) kept alive until it ends.
// An idle gateway runs no timers at all.

import { BATCH_BUCKETS } from './metrics.js'

/** Connections written per event-loop turn within one pass. */
const CHUNK = 512

/**
 * @typedef {import('./delta.js').Update} Update
 *
 * @typedef {object} Fanned a symbol's fan-out state (a hub Feed or Lane)
 * @property {readonly Flushable[]} clients its merge-mode subscribers
 * @property {readonly Flushable[] | null} distinct its distinct-mode subscribers
 * @property {() => Update | null} take hands over the update merged since the
 *   last pass (null: none), which every merge subscriber holds once this
 *   pass is written
 * @property {() => Update[] | null} takeTicks (after take) hands over every
 *   tick since the last pass, in seq order, for the distinct subscribers
 *
 * @typedef {object} PassStats filled by flushes during one chunk
 * @property {number} frames q frames written
 * @property {number} snaps snap frames written to readers catching up
 * @property {number} quotes quote entries written
 * @property {number} bytes
 * @property {number} conflated updates a slow reader skipped
 * @property {number[]} batches frames per BATCH_BUCKETS bucket
 * @property {Update[]} sent updates written in this chunk, once each (latency samples)
 * @property {Update[]} traced traced updates of the frame a client's flush is writing (its write spans)
 *
 * @typedef {object} Flushable a client (a Connection)
 * @property {(update: Update, stats: PassStats) => boolean} push queues an
 *   update for this pass; true when the client must be added to the pass's
 *   list of clients to write (it was not in it)
 * @property {(now: number, tick: number, stats: PassStats) => boolean} flush
 *   writes what is pending; true when it stays listed, to be tried again next
 *   pass (a slow reader)
 */

export class Fanout {
  #batchMs
  #metrics
  /** @type {Fanned[]} symbols updated since the last pass */
  #symbols = []
  /** @type {Flushable[]} clients to write next pass (slow readers retrying; in adaptive mode, those a quote reached after this pass wrote them) */
  #clients = []
  /** @type {NodeJS.Timeout | NodeJS.Immediate | null} */
  #timer = null
  #passing = false
  /** Counts chunks: an update is a latency sample once per chunk that writes it (Update.sentIn). */
  #chunkNo = 0
  /**
   * The updates this pass wrote, each with when the last chunk that wrote it
   * ended: their latency samples, taken when the pass ends, are the age at
   * their last subscriber's write, the worst case of the pass.
   * @type {Map<import('./delta.js').Update, number>}
   */
  #written = new Map()
  /** @type {Flushable[]} clients this pass writes */
  #batch = []
  #pos = 0
  #passStart = 0
  #stats = newStats()
  /** @type {(() => void)[]} to run once the next pass has written */
  #afterNext = []
  /** @type {(() => void)[]} to run once this pass has written */
  #afterThis = []

  /**
   * @param {object} options
   * @param {number} options.batchMs window length; 0 flushes on the next event-loop turn
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   */
  constructor ({ batchMs, metrics }) {
    this.#batchMs = batchMs
    this.#metrics = metrics
  }

  /**
   * Queues a symbol's update for the next pass. The hub calls it once per
   * pass per symbol (its Feed remembers being queued).
   *
   * @param {Fanned} fanned
   */
  queue (fanned) {
    this.#symbols.push(fanned)
    this.#schedule(this.#batchMs)
  }

  /**
   * Puts a client in the next pass, to be flushed then (a slow book
   * reader: its flush judges whether it caught up).
   *
   * @param {Flushable} client
   */
  retry (client) {
    this.#clients.push(client)
    this.#schedule(this.#batchMs)
  }

  /**
   * Runs fn once the next pass has written what is queued now (a pass
   * running already may not hold it): a notice that must follow the
   * updates queued before it, to every subscriber (`fresh` after gap fill).
   *
   * @param {() => void} fn
   */
  afterNextPass (fn) {
    this.#afterNext.push(fn)
    this.#schedule(0)
  }

  /**
   * Runs a pass now instead of on its timer (tests).
   */
  passNow () {
    this.#clearTimer()
    this.#pass()
  }

  /** @param {number} delayMs */
  #schedule (delayMs) {
    if (this.#timer !== null || this.#passing) return
    this.#timer = delayMs > 0 ? setTimeout(this.#pass, delayMs) : setImmediate(this.#pass)
  }

  /** Starts a pass: distribute each dirty symbol's update, then write in chunks. */
  #pass = () => {
    this.#timer = null
    this.#passing = true
    this.#passStart = Date.now()
    this.#afterThis = this.#afterNext
    this.#afterNext = []
    this.#distribute()
    this.#batch = this.#clients
    this.#clients = []
    this.#pos = 0
    this.#chunk()
  }

  /**
   * Hands each queued symbol's update to its subscribers; those not queued
   * yet join the clients of the next pass.
   */
  #distribute () {
    const into = this.#clients
    const symbols = this.#symbols
    this.#symbols = []
    const stats = this.#stats
    for (const s of symbols) {
      const u = s.take()
      if (u !== null) {
        for (const c of s.clients) {
          if (c.push(u, stats)) into.push(c)
        }
      }
      const ticks = s.takeTicks()
      if (ticks !== null && s.distinct !== null) {
        for (const c of s.distinct) {
          let queue = false
          for (const t of ticks) queue = c.push(t, stats) || queue
          if (queue) into.push(c)
        }
      }
    }
  }

  #chunk = () => {
    const batch = this.#batch
    // One-pass freshness (adaptive mode): what arrived since the last chunk
    // is handed out now, so the connections this pass has yet to write take
    // it in the same write; the others queue for the next pass. A fixed
    // window keeps it all for the next pass instead.
    if (this.#pos > 0 && this.#batchMs === 0 && this.#symbols.length) this.#distribute()
    const stats = this.#stats
    const now = Date.now()
    const end = Math.min(batch.length, this.#pos + CHUNK)
    const chunk = ++this.#chunkNo
    for (let i = this.#pos; i < end; i++) {
      const c = batch[i]
      if (c.flush(now, chunk, stats)) this.#clients.push(c)
    }
    this.#pos = end
    this.#record()
    if (this.#pos < batch.length) {
      setImmediate(this.#chunk)
      return
    }
    this.#batch = []
    this.#passing = false
    this.#sample()
    const after = this.#afterThis
    this.#afterThis = []
    for (const fn of after) fn()
    if (this.#symbols.length || this.#clients.length || this.#afterNext.length) {
      // Keep the window's rhythm; a pass that took longer than the window
      // is followed at once (its backlog is already batched).
      this.#schedule(Math.max(0, this.#passStart + this.#batchMs - Date.now()))
    }
  }

  /** Applies the chunk's counts to the metrics: once per chunk, not per frame. */
  #record () {
    const s = this.#stats
    const m = this.#metrics
    if (s.sent.length) {
      // After the chunk's last socket write: the latest this chunk wrote
      // them. A later chunk of the pass that writes one again moves it on.
      const t = Date.now()
      for (const u of s.sent) this.#written.set(u, t)
    }
    if (s.frames) m.framesOut.q.inc(s.frames)
    if (s.snaps) m.framesOut.snap.inc(s.snaps)
    if (s.quotes) m.quotesOut.inc(s.quotes)
    if (s.bytes) m.bytesOut.inc(s.bytes)
    if (s.conflated) m.conflated.inc(s.conflated)
    s.batches.forEach((n, i) => { if (n) m.framesByBatch[i].inc(n) })
    this.#stats = newStats()
  }

  /**
   * The pass's latency samples: each update's age when its last subscriber
   * of the pass was written (delayed quotes are old on purpose: not samples).
   */
  #sample () {
    const h = this.#metrics.publishToSend
    for (const [u, t] of this.#written) {
      if (u.fields.delayed !== true) h.observe(Math.max(0, t - u.ts) / 1000)
      u.trace?.passed(t)
    }
    this.#written.clear()
  }

  #clearTimer () {
    if (this.#timer) {
      clearTimeout(/** @type {NodeJS.Timeout} */ (this.#timer))
      clearImmediate(/** @type {NodeJS.Immediate} */ (this.#timer))
    }
    this.#timer = null
  }

  stop () {
    this.#clearTimer()
    this.#symbols = []
    this.#clients = []
    this.#afterNext = []
  }
}

/** @returns {PassStats} */
function newStats () {
  return { frames: 0, snaps: 0, quotes: 0, bytes: 0, conflated: 0, batches: BATCH_BUCKETS.map(() => 0), sent: [], traced: [] }
}
