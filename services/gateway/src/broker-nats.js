// NATS JetStream implementation of the Broker (broker.js): the quote
// stream of nats-layout.js, read by one connection.
//
// Live quotes come by core NATS subscriptions of the symbols' live
// subjects, one per symbol a client here watches (interest-only: the
// servers send this gateway only those). Not ordered consumers: a consumer
// is server state per gateway and symbol (thousands of each), created and
// deleted on every subscribe and unsubscribe, with its own flow control;
// a core subscription is one SUB line, and what it misses is covered the
// way Redis pub/sub's losses are. The stream republishes a quote to its live
// subject only once it stored it, in stream order, so what arrives is a
// stored quote, never one a fenced writer sent (nats-layout.js).
//
// Guarantees, as broker.js states them for Redis: delivery is at-most-once.
// A quote republished while this connection is down, or by a stream leader
// that failed before it republished what its peers already stored, is not
// delivered. Covered the same way: a lost connection fires onInterrupted,
// and onReconnect when it is back (every subscription dropped, so the hub
// resubscribes and fills the gap from history()); a new stream leader
// (its advisory) fires onReconnect too; a seq that skips ahead is held back
// by the hub until history() fills it. The client library queues nothing
// while down: subscribe, latest and history refuse at once (NatsDownError).
// The link can stay up while the stream cannot store (its cluster lost
// quorum): a probe of its leader every second (withQuorum) makes ready()
// false and tells every symbol interrupted, and onReconnect when it serves
// again.
//
// Demand goes to the demand stream as this gateway's leases
// (nats-demand.js), read by readDemand(); no fetcher reads it yet.
// keepHistory is a no-op: the stream keeps MaxMsgsPerSubject per symbol
// whatever a pin asks (the delayed timeline's need beyond it is not met on
// NATS). Not here (the Redis broker's extras): books, fleet status, the
// admin channel, announce. Both services refuse WSPS_BROKER=nats until a
// fetcher publishes there (config.js), so nothing relies on what is missing.

import { jetstreamManager, RepublishHeaders } from '@nats-io/jetstream'
import { NatsDownError } from '@wsps/shared/errors'
import { connectNats } from '@wsps/shared/nats'
import { natsDemand } from '@wsps/shared/nats-demand'
import { natsLayout } from '@wsps/shared/nats-layout'
import { cursorOf, seqOf, traceOf, untraced } from '@wsps/shared/published'

/** A subscribe is confirmed by a round trip (PING/PONG after the SUBs) within this. */
const CONFIRM_MS = 5000
/** A JetStream read (direct get) waits this long for its answer. */
const READ_TIMEOUT_MS = 2000
/**
 * The quote stream's leader is asked this often whether it serves. The
 * connection can stay up while the stream has no leader (its cluster lost
 * quorum): nothing is stored or republished then, and the symbols must be
 * told stale, as when the link goes.
 */
const PROBE_MS = 1000
/**
 * A replica the leader has not heard from for this long is not counted
 * (Raft heartbeats come every second). A leader whose peers are gone
 * answers for ~10 s before it steps down, and stores nothing meanwhile.
 */
const PEER_SILENT_MS = 3000

/**
 * @param {import('@nats-io/jetstream').ClusterInfo | undefined} cluster the stream's (undefined: a single server)
 * @returns {boolean} it has a leader that hears from a majority of its replicas
 */
function withQuorum (cluster) {
  if (!cluster) return true
  if (!cluster.leader) return false
  const replicas = cluster.replicas ?? []
  const heard = replicas.filter((r) => !r.offline && r.active / 1e6 < PEER_SILENT_MS).length
  return 1 + heard > (replicas.length + 1) / 2
}

/**
 * @typedef {object} NatsBrokerSettings
 * @property {string[]} natsUrls the servers (WSPS_NATS_URL)
 * @property {string} [natsPrefix] nats-layout.js's prefix (default wsps)
 * @property {string} nodeName
 *
 * @typedef {object} NatsBrokerExtras
 * @property {(handlers: import('./broker.js').BrokerHandlers) => Promise<void>} start connects (waiting
 *   for a first server) and reports to the handlers; nothing is connected before
 * @property {() => string} server the server it is connected to now (`host:port`; '' before start)
 *
 * @typedef {import('./broker.js').Broker & NatsBrokerExtras} NatsBroker
 */

/**
 * @template T
 * @param {Promise<T>} p
 * @param {number} ms
 * @param {string} what
 * @returns {Promise<T>}
 */
function within (p, ms, what) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  const timeout = new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms) })
  return /** @type {Promise<T>} */ (Promise.race([p, timeout]).finally(() => clearTimeout(timer)))
}

/**
 * @param {NatsBrokerSettings} config
 * @param {import('pino').Logger} logger
 * @returns {NatsBroker}
 */
export function createNatsBroker (config, logger) {
  const layout = natsLayout(config.natsPrefix)
  const log = logger.child({ component: 'nats' })
  /** @type {Map<string, import('@nats-io/transport-node').Subscription>} symbol -> its live subscription */
  const subs = new Map()
  /** @type {import('@nats-io/transport-node').NatsConnection | null} */
  let nc = null
  /** @type {import('@nats-io/jetstream').JetStreamManager | null} */
  let jsm = null
  /** @type {import('./broker.js').BrokerHandlers | null} */
  let handlers = null
  /** @type {ReturnType<typeof natsDemand> | null} */
  let demand = null
  let up = false
  /** The stream's leader answered the last probe. */
  let serving = false
  /** Wall clock of the last probe the leader answered. */
  let servedAt = 0
  /** @type {NodeJS.Timeout | null} */
  let probeTimer = null
  let closing = false
  /** The stream's MaxMsgsPerSubject: the most a history read can need (read once). */
  let perSubject = 0

  /**
   * symbol -> the newest live quote seen since it was subscribed: its seq
   * and stream sequence. A history read past it (a gap fill behind a live
   * quote that skipped ahead) starts there instead of at the subject's oldest.
   * @type {Map<string, {seq: number, at: number}>}
   */
  const seen = new Map()

  /** Every live subscription is dropped: the hub subscribes them again after onReconnect. */
  const dropAll = () => {
    for (const s of subs.values()) s.unsubscribe()
    subs.clear()
    seen.clear()
  }

  /** @param {string} what */
  const need = (what) => {
    if (!up || !nc || !jsm) throw new NatsDownError(what)
    return { conn: nc, manager: jsm }
  }

  /** @param {import('@nats-io/transport-node').NatsConnection} conn */
  const watch = async (conn) => {
    for await (const s of conn.status()) {
      if (closing) return
      switch (s.type) {
        case 'staleConnection':
          // Found silent: its symbols are stale now, not when TCP notices.
          log.warn('nats link silent: torn down to reconnect')
          handlers?.onSilent?.('nats')
          if (up) handlers?.onInterrupted?.(undefined, Date.now(), true)
          up = false
          break
        case 'disconnect':
          log.warn({ server: s.server }, 'nats connection lost')
          handlers?.onStatus?.(false, 'nats')
          // Dropped now, so the client does not restore them by itself on
          // reconnect: the hub resubscribes and knows when that is done.
          dropAll()
          if (up) handlers?.onInterrupted?.(undefined, Date.now(), false)
          up = false
          break
        case 'reconnect':
          log.info({ server: s.server }, 'nats ready again')
          up = true
          handlers?.onStatus?.(true, 'nats')
          handlers?.onReconnect()
          break
      }
    }
  }

  /**
   * A new leader of the quote stream may not have republished the last
   * quotes its predecessor stored: every symbol is filled in from history.
   *
   * @param {import('@nats-io/transport-node').NatsConnection} conn
   */
  const watchLeader = (conn) => conn.subscribe(`$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${layout.stream}`, {
    callback: () => {
      if (closing || !up || subs.size === 0) return
      log.info('nats stream leader elected: gap fill')
      dropAll()
      handlers?.onReconnect()
    }
  })

  /**
   * @param {import('@nats-io/jetstream').JetStreamManager} manager
   * @param {string} symbol
   * @returns {Promise<string | null>}
   */
  const newest = async (manager, symbol) => {
    const m = await manager.direct.getMessage(layout.stream, { last_by_subj: layout.subject(symbol) })
    return m ? untraced(m.string()) : null
  }

  /**
   * One probe: STREAM.INFO is answered by the stream's leader only. Lost:
   * every symbol is told interrupted at once; back: onReconnect (a new
   * leader may not have republished what its predecessor stored).
   *
   * @param {import('@nats-io/jetstream').JetStreamManager} manager
   */
  const probe = async (manager) => {
    // While the link is down, the link's events tell (watch).
    if (!up) return
    let ok = false
    try {
      ok = withQuorum((await manager.streams.info(layout.stream)).cluster)
    } catch {}
    if (closing || !up) return
    if (ok) servedAt = Date.now()
    if (ok === serving) return
    serving = ok
    if (!ok) {
      log.warn('nats quote stream has no leader: its symbols are interrupted')
      handlers?.onInterrupted?.(undefined, servedAt, true)
    } else {
      log.info('nats quote stream served again: gap fill')
      dropAll()
      handlers?.onReconnect()
    }
  }

  /** @param {import('@nats-io/jetstream').JetStreamManager} manager */
  const historyBound = async (manager) => {
    if (perSubject === 0) perSubject = (await manager.streams.info(layout.stream)).config.max_msgs_per_subject
    return perSubject
  }

  return {
    async start (h) {
      handlers = h
      const conn = nc = await connectNats({ servers: config.natsUrls, name: `wsps-gw-${config.nodeName}` })
      jsm = await jetstreamManager(conn, { timeout: READ_TIMEOUT_MS, checkAPI: false })
      demand = natsDemand(conn, layout, config.nodeName)
      watchLeader(conn)
      up = true
      const manager = jsm
      serving = true
      await probe(manager)
      let probing = false
      probeTimer = setInterval(() => {
        if (probing) return
        probing = true
        probe(manager).finally(() => { probing = false })
      }, PROBE_MS)
      probeTimer.unref()
      handlers.onStatus?.(true, 'nats')
      log.info({ server: conn.getServer() }, 'nats ready')
      watch(conn).catch((err) => log.warn({ err: err.message }, 'nats status watch ended'))
    },
    async subscribe (symbols) {
      const { conn } = need('subscribe')
      const fresh = symbols.filter((s) => !subs.has(s))
      for (const symbol of fresh) {
        subs.set(symbol, conn.subscribe(layout.liveSubject(symbol), {
          callback: (err, m) => {
            if (err || !subs.has(symbol)) return
            const raw = m.string()
            const at = Number(m.headers?.get(RepublishHeaders.Sequence))
            if (at > 0) seen.set(symbol, { seq: seqOf(raw), at })
            const traceparent = traceOf(raw)
            handlers?.onQuote(symbol, traceparent === null ? raw : untraced(raw), traceparent)
          }
        }))
      }
      try {
        // The servers hold the interest once they answered the PING behind the SUBs.
        await within(conn.flush(), CONFIRM_MS, 'subscribe')
      } catch (err) {
        for (const s of fresh) { subs.get(s)?.unsubscribe(); subs.delete(s) }
        throw err
      }
      return []
    },
    async unsubscribe (symbols) {
      for (const s of symbols) { subs.get(s)?.unsubscribe(); subs.delete(s); seen.delete(s) }
    },
    async latest (symbols) {
      const { manager } = need('latest')
      return Promise.all(symbols.map((s) => newest(manager, s).catch((/** @type {Error} */ err) => err)))
    },
    async history (symbol, fromSeq, toSeq, max) {
      const { manager } = need('history')
      const last = await newest(manager, symbol)
      const cursor = last === null ? null : cursorOf(last)
      const to = toSeq ?? cursor?.seq ?? 0
      if (!cursor || max <= 0 || fromSeq > Math.min(to, cursor.seq)) return []
      // A subject's stored quotes are walked in stream order from a stream
      // sequence: the live quote seen last when the read starts past it,
      // else the subject's oldest (then all of them are read, at most
      // MaxMsgsPerSubject: the history size). The stream holds epochs in
      // the order they began, so nothing of the newest's is before the one
      // seen; old epochs' quotes stay stored until trimmed and are left out.
      const mark = seen.get(symbol)
      const start = mark && mark.seq < fromSeq ? mark.at + 1 : 1
      const batch = await manager.direct.getBatch(layout.stream, { seq: start, next_by_subj: layout.subject(symbol), batch: await historyBound(manager) })
      /** @type {string[]} */
      const out = []
      for await (const m of batch) {
        const raw = untraced(m.string())
        const c = cursorOf(raw)
        if (c && c.epoch === cursor.epoch && c.seq >= fromSeq && c.seq <= to && out.length < max) out.push(raw)
      }
      return out
    },
    async renewDemand (symbols, leaseMs) {
      need('renewDemand')
      await demand?.renew(symbols, leaseMs)
    },
    // A no-op: the stream keeps what it keeps (see the top).
    async keepHistory () {},
    partition: (symbols) => [symbols],
    server: () => nc?.getServer() ?? '',
    ready: () => up && serving && nc !== null && !nc.isClosed(),
    channelCount: () => subs.size,
    async close () {
      closing = true
      if (probeTimer) clearInterval(probeTimer)
      dropAll()
      await nc?.close()
    }
  }
}
