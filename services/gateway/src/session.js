// What a connected client may ask for: auth, sub, unsub, ping. Applies
// limits and entitlements, then talks to the hub. Every rejection is a coded
// error.
//
// Auth lifecycle (auth on): a connection without a token at the upgrade
// gets nothing until `{"op":"auth"}` is accepted (then `hello`); the same op
// later replaces its grants, unsubscribing what they no longer cover. The
// token's `exp` closes it with 4002 unless a refresh came first.
//
// A `sub` with `since` (recovery.js) waits for history reads before it is
// applied; the connection's later frames wait for it, so requests still
// take effect in the order they were sent.
//
// Delayed grants (auth.js): a symbol the token grants delayed only (or one
// a `sub` asks for with `"delayed":true`) is held in the delayed hub, whose
// feeds only ever see quotes WSPS_DELAY_MS old (delayed-broker.js); the
// connection's subscriptions (subscriptions.js) remember which hub holds
// each symbol (delayedOf()), and which delayed ones a `sub` asked for
// itself (askedDelayed()). A token
// refresh moves every held symbol whose timeline the token decides to the
// one the new token grants before the refresh is acked, dropping whatever
// update of the old timeline was queued for it: narrowed from real-time to
// delayed, or widened from delayed to real-time (not one a `sub` asked
// `"delayed":true` for: it stays delayed).
//
// A `sub` or `unsub` naming `bars` is about bar series, not quotes: it goes
// to bars/bar-requests.js, by the same rules of grants, delayed grants and the
// subscription limit (each symbol and interval counts as one). One naming
// `book` goes to books/book-requests.js the same way (real-time only); it
// waits for the books to be read, as a resuming `sub` waits for history.
//
// Sessions per user (WSPS_MAX_SESSIONS_PER_USER, session-cap.js): an
// authenticated connection takes a place among its user's sessions over
// the fleet before `hello`; refused, it is closed with 4011. What it sends
// meanwhile waits, as for a resuming `sub`. A refresh keeps the place, so a
// refresh must name the same user.

import { ClientOp, DeliveryMode, Disconnect, ErrorCode, ServerOp } from '@wsps/protocol'
import { cursorOf } from '@wsps/shared/published'
import { notEntitled, ungranted } from './auth.js'
import { BarRequests } from './bars/bar-requests.js'
import { BookRequests } from './books/book-requests.js'
import { DISTINCT, FULL_RATE } from './delivery.js'
import { readFrom } from './recovery.js'
import { encodeAck, encodeError, encodeHello, encodePong, encodeQuotes, encodeSnap, parseClientFrame } from './protocol.js'
import { TextFrame } from './text-frame.js'

/**
 * @typedef {import('./connection.js').Connection} Client
 * @typedef {import('./protocol.js').ProtocolError} ProtocolError
 */

/** Quotes per replay frame. */
const REPLAY_CHUNK = 100

export class Sessions {
  /**
   * The last snapshot sent on subscribe: its quotes and its frame. A burst
   * of clients subscribing to the same symbols between two quotes (a page
   * load, a reconnect storm, a hot symbol) shares one frame, framed once;
   * the quotes are the strings the feeds hold, so comparing them is cheap.
   * @type {{quotes: string[], frame: TextFrame} | null}
   */
  #lastSnap = null
  /**
   * Connections with a resuming `sub` (or a book `sub`) in flight, and the frames they sent
   * since (admitted by the rate limit, handled once it is applied).
   * @type {WeakMap<Client, [import('ws').RawData, boolean][]>}
   */
  #waiting = new WeakMap()

  /**
   * @param {object} options
   * @param {import('./timelines.js').Timelines} options.timelines real-time and delayed: hub, recovery, bars
   * @param {import('./books/book-hub.js').BookHub | null} [options.books] order books (null: none here)
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   * @param {number} options.maxSubscriptions
   * @param {() => boolean} options.draining
   * @param {import('./auth.js').Authenticator | null} options.authenticate null: auth is off
   * @param {import('./session-cap.js').SessionCap | null} [options.cap] sessions per user (null: not capped)
   * @param {import('./usage.js').UsageRecorder | null} [options.usage] usage records (null: none kept)
   * @param {{node: string, heartbeatMs: number, limits: Record<string, number>}} options.hello what `hello` tells every client
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ timelines, books = null, metrics, maxSubscriptions, draining, authenticate, cap = null, usage = null, hello, logger }) {
    this.timelines = timelines
    this.usage = usage
    const { realtime, delayed, delayMs } = timelines
    /** @type {(client: Client, symbols: string[], delayed: (symbol: string) => boolean) => void} bars and books in the usage records */
    const saw = (c, symbols, isDelayed) => this.usage?.saw(c, symbols, isDelayed)
    /** Bars `sub`/`unsub` (null: none here) */
    this.barRequests = realtime.bars === null
      ? null
      : new BarRequests({ realtime: realtime.bars, delayed: delayed?.bars ?? null, delayMs: delayed ? delayMs : undefined, maxSubscriptions, reject: (c, e) => this.reject(c, e), saw })
    /** Book `sub`/`unsub` (null: none here) */
    this.bookRequests = books === null ? null : new BookRequests({ hub: books, maxSubscriptions, reject: (c, e) => this.reject(c, e), saw, logger })
    this.metrics = metrics
    this.maxSubscriptions = maxSubscriptions
    this.draining = draining
    this.authenticate = authenticate
    this.cap = cap
    this.helloInfo = hello
    /** The `hello` of connections whose token has no `exp` (or with auth off), encoded once. */
    this.hello = encodeHello(hello.node, hello.heartbeatMs, hello.limits)
    this.log = logger.child({ component: 'session' })
  }

  /**
   * The connection is authenticated (auth off, or a token accepted): with
   * sessions per user capped, it takes its place among its user's first
   * (refused: closed with 4011); then its expiry is armed and it is greeted.
   *
   * @param {Client} client
   * @param {import('./auth.js').Access} access
   * @returns {Promise<void> | null} while its place is taken (null: welcomed
   *   now); it never rejects, and the client is authed after it unless refused
   */
  welcome (client, access) {
    if (access.user !== null) this.log.debug({ client: client.id, user: access.user, class: access.userClass }, 'authenticated')
    if (this.cap === null || access.user === null) {
      this.#greet(client, access)
      return null
    }
    const taking = this.cap.take(client, access.user).then((taken) => {
      if (client.closed) return
      if (taken) {
        this.#greet(client, access)
        return
      }
      this.log.info({ client: client.id, user: access.user }, 'session refused: its user holds WSPS_MAX_SESSIONS_PER_USER')
      this.reject(client, { code: ErrorCode.SESSION_LIMIT, message: 'this user holds as many sessions as it may' })
      client.close(Disconnect.SESSION_LIMIT)
    }, (err) => {
      this.log.warn({ err, client: client.id, user: access.user }, 'sessions not counted')
      client.close(Disconnect.SESSION_UNCOUNTED)
    })
    this.#wait(client, taking)
    return taking
  }

  /**
   * @param {Client} client
   * @param {import('./auth.js').Access} access
   */
  #greet (client, access) {
    client.authorize(access)
    const { expiresAt } = access
    const { node, heartbeatMs, limits } = this.helloInfo
    client.send(expiresAt === null ? this.hello : encodeHello(node, heartbeatMs, limits, expiresAt - Date.now()), ServerOp.HELLO)
  }

  /**
   * @param {Client} client
   * @param {import('ws').RawData} data
   * @param {boolean} isBinary
   */
  onMessage (client, data, isBinary) {
    if (!this.admit(client)) return
    const waiting = this.#waiting.get(client)
    if (waiting) waiting.push([data, isBinary])
    else this.#handle(client, data, isBinary)
  }

  /**
   * @param {Client} client
   * @param {import('ws').RawData} data
   * @param {boolean} isBinary
   */
  #handle (client, data, isBinary) {
    const parsed = parseClientFrame(data, isBinary, client.binary)
    if (!parsed.ok) {
      this.reject(client, parsed.error)
      return
    }
    const req = parsed.request
    if (req.op === ClientOp.AUTH) {
      this.onAuth(client, req.token, req.id).catch((err) => {
        this.log.error({ err, client: client.id }, 'auth failed')
        this.reject(client, { code: ErrorCode.INTERNAL, message: 'token check failed; retry', id: req.id })
      })
      return
    }
    if (!client.authed) {
      this.reject(client, { code: ErrorCode.AUTH_REQUIRED, message: 'send {"op":"auth","token":...} first', id: req.id })
      return
    }
    if (req.op !== ClientOp.PING && req.book !== undefined) {
      const reading = this.#onBook(client, /** @type {import('./books/book-requests.js').BookRequest} */ (req))
      if (reading !== null) this.#wait(client, reading)
      return
    }
    if (req.op !== ClientOp.PING && req.bars !== undefined) {
      this.#onBars(client, /** @type {import('./protocol.js').SymbolsRequest & {bars: string}} */ (req))
      return
    }
    switch (req.op) {
      case ClientOp.PING:
        client.send(encodePong(req.id), ServerOp.PONG)
        return
      case ClientOp.SUB: {
        const resuming = this.subscribe(client, req)
        if (resuming !== null) this.#wait(client, resuming)
        return
      }
      case ClientOp.UNSUB:
        this.unsubscribe(client, req.symbols, req.id)
    }
  }

  /**
   * Frames the connection sends until `pending` settles are handled after it, in order.
   *
   * @param {Client} client
   * @param {Promise<void>} pending
   */
  #wait (client, pending) {
    this.#waiting.set(client, [])
    pending.finally(() => this.#resume(client))
  }

  /**
   * A book `sub` or `unsub` (books/book-requests.js).
   *
   * @param {Client} client
   * @param {import('./books/book-requests.js').BookRequest} req
   * @returns {Promise<void> | null} while the books are read
   */
  #onBook (client, req) {
    if (this.bookRequests === null) {
      this.reject(client, { code: ErrorCode.BAD_BOOK, message: 'books are not served here', id: req.id })
      return null
    }
    if (req.op === ClientOp.UNSUB) {
      this.bookRequests.unsubscribe(client, req)
      return null
    }
    if (this.draining()) {
      this.reject(client, { code: ErrorCode.DRAINING, message: 'gateway is draining; reconnect', id: req.id })
      return null
    }
    return this.bookRequests.subscribe(client, req)
  }

  /**
   * A bars `sub` or `unsub` (bars/bar-requests.js).
   *
   * @param {Client} client
   * @param {import('./protocol.js').SymbolsRequest & {bars: string}} req
   */
  #onBars (client, req) {
    if (this.barRequests === null) {
      this.reject(client, { code: ErrorCode.BAD_BARS, message: 'bars are not served here', id: req.id })
      return
    }
    if (req.op === ClientOp.UNSUB) {
      this.barRequests.unsubscribe(client, req)
      return
    }
    if (this.draining()) {
      this.reject(client, { code: ErrorCode.DRAINING, message: 'gateway is draining; reconnect', id: req.id })
      return
    }
    this.barRequests.subscribe(client, req)
  }

  /**
   * A resuming `sub` was applied: handle what the connection sent meanwhile,
   * in order, until another one waits.
   *
   * @param {Client} client
   */
  #resume (client) {
    const queued = this.#waiting.get(client) ?? []
    this.#waiting.delete(client)
    while (queued.length && !client.closed) {
      const [data, isBinary] = /** @type {[import('ws').RawData, boolean]} */ (queued.shift())
      this.#handle(client, data, isBinary)
      const again = this.#waiting.get(client)
      if (again) {
        again.push(...queued)
        return
      }
    }
  }

  /**
   * `{"op":"auth"}`: the first token of a connection, or a refresh.
   * A rejected token closes the connection (4001): its old grants must not
   * outlive a token the issuer no longer stands behind.
   *
   * @param {Client} client
   * @param {string} token
   * @param {number | string | undefined} id
   */
  async onAuth (client, token, id) {
    if (this.authenticate === null) {
      // Auth is off: every connection is authed already; nothing to replace.
      client.send(encodeAck(id, client.subscriptions.symbols), ServerOp.ACK)
      return
    }
    const auth = await this.authenticate(token)
    if (client.closed) return
    if (!auth.ok) {
      const code = auth.code ?? ErrorCode.UNAUTHORIZED
      this.metrics.clientErrors.inc({ code })
      client.send(encodeError({ code, message: `token rejected: ${auth.reason}`, ...(id === undefined ? {} : { id }) }), ServerOp.ERROR)
      client.close(Disconnect.UNAUTHORIZED)
      return
    }
    if (!client.authed) {
      await this.welcome(client, auth)
      return
    }
    // The connection's place among its user's sessions (and an operator's
    // view of it) is its user's: a token of another user is not a refresh.
    if (auth.user !== client.user) {
      this.metrics.clientErrors.inc({ code: ErrorCode.BAD_IDENTITY })
      client.send(encodeError({ code: ErrorCode.BAD_IDENTITY, message: 'token rejected: a refresh must name the same user (sub)', ...(id === undefined ? {} : { id }) }), ServerOp.ERROR)
      client.close(Disconnect.UNAUTHORIZED)
      return
    }
    client.authorize(auth)
    const revoked = ungranted(auth.grants, client.subscriptions.symbols)
    // Bars follow the new grants too: ended, or moved to the timeline granted.
    for (const s of this.barRequests?.regrant(client) ?? []) if (!revoked.includes(s)) revoked.push(s)
    for (const s of this.bookRequests?.regrant(client) ?? []) if (!revoked.includes(s)) revoked.push(s)
    if (revoked.length) {
      this.removeSymbols(client, revoked)
      this.metrics.clientErrors.inc({ code: ErrorCode.GRANT_REVOKED })
      client.send(encodeError({ code: ErrorCode.GRANT_REVOKED, message: 'the new token does not grant these symbols; unsubscribed', symbols: revoked }), ServerOp.ERROR)
    }
    // Symbols now granted delayed only move to the delayed hub, and those
    // delayed only because the old token said so (not asked `"delayed":true`)
    // and now granted real-time move to the real-time hub, before the ack,
    // with the same delivery: from here on nothing of the old timeline is
    // written for them, and the ack's `delayed` tells the new one.
    const delayedOnly = auth.delayed ?? null
    /** @param {string} s */
    const grantedDelayed = (s) => delayedOnly !== null && delayedOnly(s)
    const subs = client.subscriptions
    const moving = subs.symbols.filter((s) => subs.delayedOf(s)
      ? !subs.askedDelayed(s) && !grantedDelayed(s)
      : grantedDelayed(s))
    /** @type {string[]} */
    const snapped = []
    /** @type {string[]} */
    const quotes = []
    for (const s of moving) {
      const delivery = subs.deliveryOf(s)
      const delayed = !subs.delayedOf(s)
      this.#hub(!delayed).remove(s, client, delivery)
      client.setDelayed(s, delayed)
      const raw = this.#hub(delayed).add(s, client, delivery)
      if (raw !== null) {
        snapped.push(s)
        quotes.push(raw)
      }
    }
    this.usage?.saw(client, moving, (s) => subs.delayedOf(s))
    /** @type {{expiresInMs?: number, delayed?: string[], delayMs?: number}} */
    const extra = this.#delayedOf(client)
    if (auth.expiresAt !== null) extra.expiresInMs = auth.expiresAt - Date.now()
    client.send(encodeAck(id, subs.symbols, Object.keys(extra).length ? extra : null), ServerOp.ACK)
    if (quotes.length) client.sendSnap(snapped, new TextFrame(encodeSnap(quotes)))
  }

  /**
   * What an ack says of the symbols served delayed: `delayed`, the held
   * ones that are, and `delayMs`, by how much, when any is.
   *
   * @param {Client} client
   * @returns {{delayed?: string[], delayMs?: number}}
   */
  #delayedOf (client) {
    const subs = client.subscriptions
    const delayed = subs.symbols.filter((s) => subs.delayedOf(s))
    return delayed.length ? { delayed, delayMs: this.timelines.delayed ? this.timelines.delayMs : undefined } : {}
  }

  /**
   * The hub and recovery of the real-time or the delayed timeline.
   *
   * @param {boolean} delayed
   */
  #timeline (delayed) {
    return this.timelines.of(delayed)
  }

  /**
   * The hub that holds (or is to hold) a symbol of a connection.
   *
   * @param {boolean} delayed
   */
  #hub (delayed) {
    return this.#timeline(delayed).hub
  }

  /**
   * A WebSocket ping frame from the client: answered by its transport
   * (ws-server.js) rather than by `ws` (autoPong costs a closure per
   * connection), when the same message rate limit as protocol messages and
   * the send buffer cap allow.
   *
   * @param {Client} client
   * @returns {boolean} whether to answer it
   */
  onPing (client) {
    return this.admit(client) && client.writable()
  }

  /**
   * The message rate limit: true to go on with a message.
   *
   * @param {Client} client
   */
  admit (client) {
    const dropped = client.admit()
    if (dropped === 0) return true
    // Answer the first dropped message of a flood, then drop silently:
    // replying to each would let a client amplify its own flood (and
    // the connection closes itself when the flood goes on).
    if (dropped === 1) this.reject(client, { code: ErrorCode.RATE_LIMITED, message: 'too many messages; slow down' })
    return false
  }

  /**
   * @param {Client} client
   * @param {ProtocolError} error
   */
  reject (client, error) {
    this.metrics.clientErrors.inc({ code: error.code })
    client.send(encodeError(error), ServerOp.ERROR)
    if (error.code !== ErrorCode.RATE_LIMITED) client.strike()
  }

  /**
   * Subscribes symbols with the request's delivery. Symbols already held
   * with another delivery move to this one (with a fresh snapshot). With
   * `since`, the symbols it names resume (recovery.js): the request is
   * applied once their history is read.
   *
   * @param {Client} client
   * @param {import('./protocol.js').SymbolsRequest} req
   * @returns {Promise<void> | null} while a resuming request is read for
   *   (it never rejects: a failure is answered INTERNAL); null: done
   */
  subscribe (client, req) {
    const { id, mode, maxRate, since } = req
    if (this.draining()) {
      this.reject(client, { code: ErrorCode.DRAINING, message: 'gateway is draining; reconnect', id })
      return null
    }
    const delivery = mode === DeliveryMode.DISTINCT ? DISTINCT : maxRate ?? FULL_RATE
    const admitted = this.#admit(client, req, delivery)
    if (admitted === null) return null
    const { fresh, moved, delayed } = admitted
    if (since === undefined) {
      this.#apply(client, req, delivery, admitted, null)
      return null
    }
    // Symbols this connection holds already with this delivery lost nothing
    // on it; the others resume from their cursor, each on its own timeline.
    /** @type {[Map<string, import('./protocol.js').Cursor>, Map<string, import('./protocol.js').Cursor>]} */
    const resumed = [new Map(), new Map()]
    for (const s of fresh.concat(moved)) {
      const cursor = since.get(s)
      if (cursor !== undefined) resumed[delayed(s) ? 1 : 0].set(s, readFrom(cursor, delivery === DISTINCT))
    }
    if (resumed[0].size === 0 && resumed[1].size === 0) {
      this.#apply(client, req, delivery, admitted, new Map())
      return null
    }
    const plans = resumed.map((cursors, i) => cursors.size === 0
      ? Promise.resolve(new Map())
      : this.#timeline(i === 1).recovery.plan(cursors, delivery, delivery === DISTINCT))
    return Promise.all(plans).then(([realtime, later]) => {
      // The turn plan() resolved in (recovery.js): apply now, before any I/O.
      // (A sub resuming on both timelines: the one planned first may have
      // moved on meanwhile; its symbols then get recovered:false.)
      if (client.closed) return
      // Checked again: a refresh or another request meanwhile may have
      // changed the grants or what the connection holds.
      const now = this.#admit(client, req, delivery)
      if (now === null) return
      // A symbol whose timeline changed meanwhile (a refresh narrowed or
      // widened it) cannot use what the other timeline planned: not recovered.
      /** @type {Map<string, string[] | null>} */
      const plan = new Map()
      for (const [s, p] of realtime) plan.set(s, now.delayed(s) ? null : p)
      for (const [s, p] of later) plan.set(s, now.delayed(s) ? p : null)
      this.#apply(client, req, delivery, now, plan)
    }).catch((err) => {
      this.log.error({ err, client: client.id }, 'recovery failed')
      if (!client.closed) this.reject(client, { code: ErrorCode.INTERNAL, message: 'recovery failed; retry', id })
    })
  }

  /**
   * What a sub would change, if the connection may have it: the symbols it
   * does not hold and those it holds with another delivery or on the other
   * timeline (real-time or delayed), and which are to be delayed. Refused
   * (and null) when the token does not grant a new symbol, grants delayed
   * only a symbol the sub asks real-time for (`"delayed":false`), or the
   * subscription limit would be passed.
   *
   * @param {Client} client
   * @param {import('./protocol.js').SymbolsRequest} req
   * @param {number} delivery
   * @returns {{fresh: string[], moved: string[], delayed: (symbol: string) => boolean} | null}
   */
  #admit (client, req, delivery) {
    const { symbols, id } = req
    const delayedOnly = client.delayedGrants
    if (req.delayed === false && delayedOnly !== null) {
      const only = symbols.filter(delayedOnly)
      if (only.length) {
        this.reject(client, { code: ErrorCode.DELAYED_ONLY, message: 'the token grants these symbols delayed only', id, symbols: only })
        return null
      }
    }
    /** @param {string} s @returns {boolean} whether the sub serves it delayed */
    const delayed = req.delayed === true ? () => true : delayedOnly ?? (() => false)
    const subs = client.subscriptions
    const held = subs.holds()
    const fresh = symbols.filter((s) => !held(s))
    const moved = symbols.filter((s) => held(s) && (subs.deliveryOf(s) !== delivery || subs.delayedOf(s) !== delayed(s)))
    const denied = ungranted(client.grants, fresh)
    if (denied.length) {
      this.reject(client, notEntitled(denied, id))
      return null
    }
    // Each bar subscription (symbol, interval) counts as one too.
    const holding = subs.count
    if (holding + fresh.length > this.maxSubscriptions) {
      this.reject(client, {
        code: ErrorCode.TOO_MANY_SUBSCRIPTIONS,
        message: `at most ${this.maxSubscriptions} subscriptions per connection (holding ${holding})`,
        id
      })
      return null
    }
    return { fresh, moved, delayed }
  }

  /**
   * Applies a sub: the symbols join their feeds, the ack goes out, then the
   * snapshots, or for resumed symbols their replay.
   *
   * @param {Client} client
   * @param {import('./protocol.js').SymbolsRequest} req
   * @param {number} delivery
   * @param {{fresh: string[], moved: string[], delayed: (symbol: string) => boolean}} admitted
   *   fresh: symbols the connection does not hold; moved: symbols it holds
   *   with another delivery or timeline; delayed: which are to be delayed
   * @param {Map<string, string[] | null> | null} plan resumed symbols: what
   *   to replay (null: not recoverable); null when the sub has no `since`
   */
  #apply (client, req, delivery, { fresh, moved, delayed }, plan) {
    const { id, mode, maxRate, since } = req
    const subs = client.subscriptions
    client.subscribe(fresh, delivery)
    for (const s of fresh) if (delayed(s)) client.setDelayed(s, true)
    for (const s of moved) {
      this.#hub(subs.delayedOf(s)).remove(s, client, subs.deliveryOf(s))
      client.redeliver(s, delivery)
      client.setDelayed(s, delayed(s))
    }
    // Whether the timeline of each symbol named is the sub's choice or the
    // token's: a refresh moves only the token's (onAuth()).
    subs.askDelayed(req.symbols, req.delayed === true)
    this.usage?.saw(client, fresh.concat(moved), delayed)
    /** @type {string[]} */
    const snapped = []
    /** @type {string[]} */
    const quotes = []
    /** @type {Record<string, boolean>} */
    const recovered = {}
    /** @type {string[]} */
    const replay = []
    /** @type {string[]} */
    const replayed = []
    /** @type {string[]} first quotes of what is replayed to cursors not held (`held: false`), sent as their snap */
    const bases = []
    const modeName = delivery === DISTINCT ? 'distinct' : 'merge'
    for (const s of fresh.concat(moved)) {
      const raw = this.#hub(subs.delayedOf(s)).add(s, client, delivery)
      const asked = since?.get(s)
      const planned = plan?.get(s)
      if (asked !== undefined && planned !== undefined) {
        const cursor = readFrom(asked, delivery === DISTINCT)
        const bare = cursor !== asked
        const base = cursorOf(raw)
        // Distinct: the replay reaches exactly the quote the live stream
        // continues from (plan() made sure of it in this turn), and holds
        // the quote at a cursor not held. Merge: the latest state is one
        // snapshot; recovered says it continues the client's epoch (nothing
        // it held was from another history).
        const ok = planned !== null && base !== null && base.epoch === cursor.epoch &&
          (delivery === DISTINCT ? base.seq === cursor.seq + planned.length && (!bare || planned.length > 0) : base.seq >= cursor.seq)
        recovered[s] = ok
        client.resumed(ok)
        this.metrics.recoveries.inc({ mode: modeName, result: ok ? 'recovered' : 'not_recovered' })
        if (ok && delivery === DISTINCT) {
          const ticks = /** @type {string[]} */ (planned)
          if (bare) bases.push(/** @type {string} */ (ticks[0]))
          replay.push(...(bare ? ticks.slice(1) : ticks))
          replayed.push(s)
          continue
        }
      }
      if (raw !== null) {
        snapped.push(s)
        quotes.push(raw)
      }
    }
    // Resumed symbols the connection held already lost nothing on it.
    if (since !== undefined) for (const s of since.keys()) if (!(s in recovered)) recovered[s] = true
    /** @type {{mode?: string, maxRate?: number, recovered?: Record<string, boolean>, delayed?: string[], delayMs?: number}} */
    const extra = mode === undefined && maxRate === undefined ? {} : { mode: mode ?? DeliveryMode.MERGE, ...(maxRate === undefined ? {} : { maxRate }) }
    Object.assign(extra, this.#delayedOf(client))
    if (since !== undefined) extra.recovered = recovered
    client.send(encodeAck(id, subs.symbols, Object.keys(extra).length ? extra : null), ServerOp.ACK)
    if (replay.length + bases.length) {
      this.metrics.recoveredTicks.inc(replay.length + bases.length)
      client.drop(replayed)
      if (bases.length) client.send(new TextFrame(encodeSnap(bases)), ServerOp.SNAP)
      // Full quotes, each continuing the one before (base = seq - 1), in
      // frames of a bounded size; the send buffer limits apply to them.
      for (let i = 0; i < replay.length && !client.closed; i += REPLAY_CHUNK) {
        client.send(new TextFrame(encodeQuotes(replay.slice(i, i + REPLAY_CHUNK))), ServerOp.QUOTES)
      }
    }
    if (since === undefined || snapped.every((s) => recovered[s] !== false)) {
      if (quotes.length) client.sendSnap(snapped, this.#snapFrame(quotes))
      return
    }
    // Snapshots over a hole history could not fill come in their own frame,
    // marked: the client learns which ticks it lost from the ack, and which
    // quotes replace them from the frame.
    for (const lost of [false, true]) {
      const syms = snapped.filter((s) => (recovered[s] === false) === lost)
      if (syms.length) client.sendSnap(syms, new TextFrame(encodeSnap(syms.map((s) => quotes[snapped.indexOf(s)]), lost)))
    }
  }

  /**
   * The snapshot frame of these full quotes: the last one sent when it
   * holds the same quotes, else a new one (kept as the last).
   *
   * @param {string[]} quotes
   * @returns {TextFrame}
   */
  #snapFrame (quotes) {
    const last = this.#lastSnap
    if (last !== null && last.quotes.length === quotes.length && last.quotes.every((q, i) => q === quotes[i])) return last.frame
    const frame = new TextFrame(encodeSnap(quotes))
    this.#lastSnap = { quotes, frame }
    return frame
  }

  /**
   * @param {Client} client
   * @param {string[]} symbols
   * @param {number | string | undefined} id
   */
  unsubscribe (client, symbols, id) {
    this.removeSymbols(client, symbols)
    const extra = this.#delayedOf(client)
    client.send(encodeAck(id, client.subscriptions.symbols, extra.delayed ? extra : null), ServerOp.ACK)
  }

  /**
   * @param {Client} client
   * @param {string[]} symbols
   */
  removeSymbols (client, symbols) {
    client.unsubscribe(symbols, (s, delivery, delayed) => this.#hub(delayed).remove(s, client, delivery))
  }

  /**
   * The socket closed: drop every subscription it held.
   *
   * @param {Client} client
   */
  onClose (client) {
    const subs = client.subscriptions
    for (const s of subs.symbols) this.#hub(subs.delayedOf(s)).remove(s, client, subs.deliveryOf(s))
    this.barRequests?.onClose(client)
    this.bookRequests?.onClose(client)
    this.cap?.release(client)
    this.usage?.end(client)
    client.dispose()
  }
}
