// One client connection, and its fate in one place: its transport,
// liveness, admission bookkeeping (auth state and grants, message rate,
// protocol strikes, token expiry), what it holds (its Subscriptions,
// subscriptions.js) and their delivery: the fan-out hands it updates, its
// Outbox (outbox.js) queues them and returns a verdict, and the connection
// writes or closes. close() is the one place a connection is closed,
// always with a named Disconnect (services/protocol).

import { Disconnect, ServerOp } from '@wsps/protocol'
import { Outbox, Verdict } from './outbox.js'
import { FULL_RATE } from './delivery.js'
import { RateLimit } from '@wsps/shared/rate-limit'
import { Subscriptions } from './subscriptions.js'

/**
 * @typedef {import('./text-frame.js').TextFrame} TextFrame
 * @typedef {import('@wsps/protocol').ServerOpName} ServerOpName
 * @typedef {import('@wsps/protocol').Disconnect} DisconnectValue
 * @typedef {import('./delta.js').Update} Update
 * @typedef {import('./fanout.js').PassStats} PassStats
 */

/**
 * What a connection needs of its transport, shaped like the protocol:
 * frames with their op, a close with a Disconnect. The WebSocket
 * (ws-transport.js) and Server-Sent Events (sse-transport.js) transports
 * implement it.
 *
 * @typedef {object} Transport
 * @property {boolean} open frames may be written (false once a close began)
 * @property {number} bufferedAmount bytes accepted by write() but not yet
 *   handed to the kernel: what the slow-reader limits watch
 * @property {boolean} binary frames go in the binary encoding (Protobuf,
 *   `wsps.v1.proto`), not JSON text; client frames come in it too
 * @property {(frame: TextFrame | string, op: ServerOpName) => number} write
 *   writes one server frame: a TextFrame (maybe shared by many connections)
 *   or the JSON text of one, in the transport's encoding; `op` is the
 *   frame's op; returns the payload bytes written
 * @property {(disconnect: DisconnectValue) => void} close starts an orderly
 *   close carrying the code and reason (only while open); the transport's
 *   owner reports the close when done
 * @property {() => void} ping a liveness probe; the transport calls
 *   Connection.markAlive() when the peer answers (or shows any sign of life)
 * @property {() => void} terminate drops the connection at once
 */

/** Protocol errors a client may make: a burst of 20, then one a second. */
const STRIKES = new RateLimit(1, 20)

/** A closing connection that does not finish its close handshake in this time is destroyed. */
const CLOSE_GRACE_MS = 2000

/** Longest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * @typedef {object} ConnectionContext shared by every connection of a gateway
 * @property {import('./metrics.js').GatewayMetrics} metrics
 * @property {number} sendMax buffered bytes at which the connection is closed with 4008
 * @property {RateLimit} messageRate the per-connection message limit
 * @property {import('./outbox.js').OutboxContext} outbox what each connection's outbox is given
 * @property {(c: Connection) => void} retry puts a connection in the fan-out's next pass (a slow book reader, to catch up)
 */

export class Connection {
  #transport
  #ctx
  #id
  #ip
  /** @type {((symbol: string) => boolean) | null} */
  #grants
  /** @type {((symbol: string) => boolean) | null} the symbols the token grants delayed only (null: none) */
  #delayedGrants = null
  /** False while auth is on and no token was accepted yet: only `auth` is served. */
  #authed
  /** @type {string | null} the token's `sub`: who to show an operator, whose sessions it counts in */
  #user = null
  /** @type {import('./auth.js').UserClass | null} the token's user class (null: auth off) */
  #userClass = null
  /** Set once the transport closed and dispose() ran. */
  #closed = false
  /** What it holds: its symbols, their delivery and timeline, its bars. */
  #subs = new Subscriptions()
  #outbox
  /** Answered (or sent anything) since the last heartbeat visit. */
  #alive = true
  /** Message rate limit state (see services/shared/src/rate-limit.js). */
  #rateTat = 0
  /** Messages dropped since the last one the rate limit let through. */
  #limitedDrops = 0
  /** Protocol error limit state: past it, a close. */
  #strikeTat = 0
  /** @type {number | null} the code the gateway closed this connection with */
  #closeCode = null
  /** Symbols resumed with `since` and recovered, or not (resumes). */
  #recovered = 0
  #notRecovered = 0
  /**
   * One timer for the auth lifecycle: before auth the deadline for the
   * `auth` frame (4003), after it the token's `exp` (4002).
   * @type {NodeJS.Timeout | null}
   */
  #expiry = null

  /**
   * @param {Transport} transport
   * @param {ConnectionContext} ctx
   * @param {{id: number, ip: string, grants: ((symbol: string) => boolean) | null, authed?: boolean}} info
   *   grants: the token's entitlement check (null: every symbol); authed:
   *   false until a token is accepted
   */
  constructor (transport, ctx, { id, ip, grants, authed = true }) {
    this.#transport = transport
    this.#ctx = ctx
    this.#id = id
    this.#ip = ip
    this.#grants = grants
    this.#authed = authed
    this.#outbox = new Outbox(ctx.outbox, this.#subs, transport.binary)
  }

  get id () { return this.#id }
  get ip () { return this.#ip }
  /** The token's entitlement check; null: every symbol. */
  get grants () { return this.#grants }
  /** The symbols the token grants delayed only; null: none. */
  get delayedGrants () { return this.#delayedGrants }
  /** False while auth is on and no token was accepted yet. */
  get authed () { return this.#authed }
  /** The token's `sub` (null: none, or auth off). */
  get user () { return this.#user }
  /** The token's user class, `pro` or `nonpro` (null: auth off, or no token yet). */
  get userClass () { return this.#userClass }
  /** True once the transport closed and dispose() ran. */
  get closed () { return this.#closed }
  /** What it holds; the changes that invalidate queued updates go through the connection. */
  get subscriptions () { return this.#subs }
  /** The code the gateway closed with, if it did (a stuck reader never echoes it: 1006). */
  get closeCode () { return this.#closeCode }
  get open () { return this.#transport.open }
  /** It speaks the binary encoding (`wsps.v1.proto`): its frames, both ways, are Protobuf. */
  get binary () { return this.#transport.binary }
  get bufferedAmount () { return this.#transport.bufferedAmount }
  /** How far behind the reader is (Outbox.lag). */
  get lag () { return this.#outbox.lag(Date.now()) }
  /** Symbols it resumed with `since`: continued with nothing lost, or not (a fresh snap). */
  get resumes () { return { recovered: this.#recovered, notRecovered: this.#notRecovered } }

  /**
   * A symbol it resumed with `since` was answered (Sessions, the sub).
   *
   * @param {boolean} recovered nothing lost
   */
  resumed (recovered) {
    if (recovered) this.#recovered++
    else this.#notRecovered++
  }

  /** The peer showed it is there (a pong, a message). */
  markAlive () {
    this.#alive = true
  }

  /**
   * A heartbeat visit: drops the connection if it did not answer the last
   * probe, else probes again.
   */
  beat () {
    if (!this.open) return
    if (!this.#alive) {
      this.#transport.terminate()
      return
    }
    this.#alive = false
    this.#transport.ping()
  }

  /**
   * Admits one client message under the message rate limit. The peer is
   * alive either way. A client that keeps sending far past its limit is
   * closed with 4029.
   *
   * @returns {number} 0 when admitted, else how many messages in a row were dropped
   */
  admit () {
    this.#alive = true
    const tat = this.#ctx.messageRate.take(this.#rateTat)
    if (tat >= 0) {
      this.#rateTat = tat
      this.#limitedDrops = 0
      return 0
    }
    const drops = ++this.#limitedDrops
    if (drops > 2 * this.#ctx.messageRate.burst) this.close(Disconnect.RATE_LIMIT_EXCEEDED)
    return drops
  }

  /**
   * Counts a protocol error; past the limit the connection is closed with
   * 4009 (Disconnect.POLICY_VIOLATION).
   *
   * @returns {boolean} false when it was closed
   */
  strike () {
    const tat = STRIKES.take(this.#strikeTat)
    if (tat >= 0) {
      this.#strikeTat = tat
      return true
    }
    this.close(Disconnect.POLICY_VIOLATION)
    return false
  }

  /**
   * Closes the connection with `disconnect` at `at` (ms since the epoch)
   * unless re-armed before; null disarms.
   *
   * @param {number | null} at
   * @param {DisconnectValue} disconnect
   */
  closeAt (at, disconnect) {
    this.#disarm()
    if (at === null || this.#closed) return
    const left = at - Date.now()
    if (left <= 0) {
      this.close(disconnect)
      return
    }
    // setTimeout fires at once beyond 2^31-1 ms (24.8 days): re-arm in steps.
    this.#expiry = setTimeout(() => this.closeAt(at, disconnect), Math.min(left, MAX_TIMER_MS))
  }

  /**
   * A token was accepted: its grants replace the previous ones, and the
   * connection closes with 4002 at its `exp` unless refreshed before.
   *
   * @param {import('./auth.js').Access} access
   */
  authorize ({ grants, delayed, expiresAt, user, userClass }) {
    this.#grants = grants
    this.#delayedGrants = delayed
    this.#user = user
    this.#userClass = userClass
    this.#authed = true
    this.closeAt(expiresAt, Disconnect.TOKEN_EXPIRED)
  }

  /**
   * Whether a frame may be written now. Replies, snapshots and pongs obey
   * the same cap as quote batches: a reader that stopped reading must not
   * grow its buffer by asking for more; at the cap it is closed with 4008.
   */
  writable () {
    if (!this.open) return false
    if (this.#transport.bufferedAmount >= this.#ctx.sendMax) {
      this.close(Disconnect.SEND_BUFFER_FULL)
      return false
    }
    return true
  }

  /**
   * Sends a frame now, counted per frame: a control frame's JSON text, or
   * a frame built already (maybe shared by many connections).
   *
   * @param {TextFrame | string} frame
   * @param {ServerOpName} op
   */
  send (frame, op) {
    if (!this.writable()) return
    const bytes = this.#transport.write(frame, op)
    const m = this.#ctx.metrics
    m.framesOut[op].inc()
    m.bytesOut.inc(bytes)
  }

  /**
   * Sends an order book frame, as its outbox judges: now, or (a slow
   * reader) skipped until it catches up with the book's snapshot, or a
   * close when it was slow for too long.
   *
   * @param {string} symbol
   * @param {number} depth
   * @param {TextFrame} frame maybe shared by the book window's other readers
   * @param {typeof ServerOp.BOOK | typeof ServerOp.LEVELS} op
   */
  sendBook (symbol, depth, frame, op) {
    if (!this.writable()) return
    const verdict = this.#outbox.book(symbol, depth, this.#transport.bufferedAmount, Date.now())
    if (verdict === Verdict.WRITE) this.send(frame, op)
    else if (verdict === Verdict.DISCONNECT) this.close(Disconnect.SLOW_CONSUMER)
    else if (this.#outbox.enqueue()) this.#ctx.retry(this)
  }

  /**
   * It no longer holds this book: frames skipped for it are forgotten.
   *
   * @param {string} symbol
   * @param {number} depth
   */
  forgetBook (symbol, depth) {
    this.#outbox.dropBook(symbol, depth)
  }

  /**
   * Adds symbols it does not hold yet (the caller checked).
   *
   * @param {readonly string[]} fresh
   * @param {number} [delivery]
   */
  subscribe (fresh, delivery = FULL_RATE) {
    this.#subs.add(fresh, delivery)
  }

  /**
   * Changes the delivery of a held symbol; what was queued for it under the
   * old one is forgotten (a snapshot follows).
   *
   * @param {string} symbol
   * @param {number} delivery
   */
  redeliver (symbol, delivery) {
    this.#outbox.drop([symbol])
    this.#subs.setDelivery(symbol, delivery)
  }

  /**
   * Marks a held symbol delayed or real-time (the caller moves it between
   * the hubs); what was queued for it is forgotten (a snapshot follows).
   *
   * @param {string} symbol
   * @param {boolean} delayed
   */
  setDelayed (symbol, delayed) {
    this.#outbox.drop([symbol])
    this.#subs.setDelayed(symbol, delayed)
  }

  /**
   * Removes symbols and forgets what is queued for them.
   *
   * @param {readonly string[]} symbols
   * @param {(symbol: string, delivery: number, delayed: boolean) => void} onRemoved called for
   *   each symbol that was held, with the delivery it had and whether it was delayed
   */
  unsubscribe (symbols, onRemoved) {
    this.#subs.remove(symbols, onRemoved)
    this.#outbox.drop(symbols)
  }

  /**
   * Forgets what is queued for symbols: a replay or a snapshot supersedes it.
   *
   * @param {Iterable<string>} symbols
   */
  drop (symbols) {
    this.#outbox.drop(symbols)
  }

  /**
   * Sends a snapshot frame now. It supersedes anything queued for its
   * symbols.
   *
   * @param {string[]} symbols
   * @param {TextFrame} frame maybe shared by other connections
   */
  sendSnap (symbols, frame) {
    this.#outbox.drop(symbols)
    this.send(frame, ServerOp.SNAP)
  }

  /**
   * Takes a symbol's update for this pass (called by the fanout).
   *
   * @param {Update} update
   * @param {PassStats} stats
   * @returns {boolean} true when the connection was not queued for writing
   *   yet: the caller queues it
   */
  push (update, stats) {
    return this.#outbox.push(update, stats)
  }

  /**
   * Writes this pass's updates as one `q` frame — after a `snap` of the
   * symbols it skipped while slow — as its outbox's verdict says: or
   * nothing but distinct updates while it is slow, or a close when it was
   * slow for too long. Counted per pass by the fanout (stats), not per
   * frame.
   *
   * @param {number} now
   * @param {number} tick the chunk of the pass (latency samples, Update.sentIn)
   * @param {PassStats} stats
   * @returns {boolean} true when it stays queued: to be tried again next pass (still slow)
   */
  flush (now, tick, stats) {
    const out = this.#outbox
    if (!this.writable()) {
      out.clear()
      return false
    }
    const t = this.#transport
    const verdict = out.verdict(t.bufferedAmount, now, stats)
    if (verdict === Verdict.DISCONNECT) {
      this.close(Disconnect.SLOW_CONSUMER)
      return false
    }
    if (verdict === Verdict.WRITE) {
      const snap = out.catchUp(stats)
      if (snap !== null) t.write(snap, ServerOp.SNAP)
      const books = out.catchUpBooks()
      if (books !== null) for (const f of books) this.send(f, ServerOp.BOOK)
    }
    const traced = stats.traced
    const frame = out.take(tick, stats)
    if (frame !== null) {
      const start = traced.length ? Date.now() : 0
      t.write(frame, ServerOp.QUOTES)
      // A traced quote's write span (quote-trace.js): rare, so not on the hot path.
      if (traced.length) {
        for (const u of traced) u.trace?.wrote(this.id, frame.length, start)
        traced.length = 0
      }
    }
    return verdict === Verdict.SKIP
  }

  /**
   * Starts a close handshake with a named disconnect and destroys the
   * transport if it does not finish (a reader that stopped reading will
   * not read the close frame either). The one place a connection is closed.
   *
   * @param {DisconnectValue} disconnect
   */
  close (disconnect) {
    if (this.#closed) return
    const t = this.#transport
    if (t.open) {
      this.#closeCode = disconnect.code
      t.close(disconnect)
    }
    setTimeout(() => t.terminate(), CLOSE_GRACE_MS).unref()
  }

  /** Drops the transport at once (process shutdown). */
  terminate () {
    this.#transport.terminate()
  }

  #disarm () {
    if (this.#expiry !== null) clearTimeout(this.#expiry)
    this.#expiry = null
  }

  /** Called once the transport closed: releases what the connection held. */
  dispose () {
    this.#disarm()
    this.#closed = true
    this.#subs.clear()
    this.#outbox.dispose()
  }
}

