// Shared by the browser-client tests, whose stacks (redis, a fetcher,
// gateways on free loopback ports) are the testkit's useStack: the stack of
// the reach tests, and small WebSocket fakes for what a real gateway cannot
// be made to do on demand.

import { once } from 'node:events'
import { after } from 'node:test'
import { SignJWT } from 'jose'
import WebSocket, { WebSocketServer } from 'ws'
import { WspsClient } from '@wsps/client'
import { setUp, useStack } from '@wsps/testkit'
import { createHttpApp } from '@wsps/shared/http-app'
import { RateLimit } from '@wsps/shared/rate-limit'
import { Admission } from '../../src/admission.js'
import { BookHub } from '../../src/books/book-hub.js'
import { Connections } from '../../src/connections.js'
import { registerHttpRoutes } from '../../src/http-routes.js'
import { Recovery } from '../../src/recovery.js'
import { Sessions } from '../../src/session.js'
import { Timelines } from '../../src/timelines.js'
import { WsServer } from '../../src/ws-server.js'
import { bookVenue, gatewayParts, silent } from '../helper.js'

/** The `authed` gateway's WSPS_PAGE_TOKEN_URL: a path nothing serves but a test's route. */
export const PAGE_TOKEN_PATH = '/page-token'

/** The HS256 secret of the `authed` gateway of useReachStack. */
const REACH_SECRET = 'hs256-secret-for-the-browser-reach-tests'

/**
 * The stack of a test of what reaches every client, on the testkit's stack
 * (closed in the file's `after` hook): a fetcher, an `open` gateway, an
 * `authed` one that wants HS256 tokens (reachToken signs them; its page
 * fetches them from PAGE_TOKEN_PATH) and a `small`
 * one that allows 2 subscriptions per client. The gateways
 * are there once the file's `before` hooks have run.
 */
export function useReachStack () {
  const stack = useStack()
  return setUp(async () => {
    await stack.fetcher()
    const open = await stack.gateway()
    return {
      open,
      authed: await stack.gateway({ WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: REACH_SECRET, WSPS_PAGE_TOKEN_URL: PAGE_TOKEN_PATH }),
      small: await stack.gateway({ WSPS_MAX_SUBSCRIPTIONS: '2' })
    }
  })
}

/**
 * A token the `authed` gateway of useReachStack accepts until `exp`.
 *
 * @param {import('jose').JWTPayload} claims
 * @param {number} exp seconds since the epoch
 */
export function reachToken (claims, exp) {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(exp).sign(new TextEncoder().encode(REACH_SECRET))
}

/**
 * A `ws` WebSocket that records every text frame it receives, parsed: what
 * the server really sent, beneath whatever the client does with it.
 */
export function recordingWebSocket () {
  /** @type {{at: number, msg: any}[]} */
  const received = []
  /** @type {{at: number, msg: any}[]} */
  const sent = []
  class RecordingWebSocket extends WebSocket {
    /** @param {string} url */
    constructor (url) {
      super(url)
      this.on('message', (data) => received.push({ at: Date.now(), msg: JSON.parse(String(data)) }))
    }

    /** @param {any} data */
    send (data) {
      sent.push({ at: Date.now(), msg: JSON.parse(String(data)) })
      super.send(data)
    }
  }
  return { WebSocket: RecordingWebSocket, received, sent }
}

/**
 * A test file's clients, fake gateways and whatever else `atEnd` is given,
 * closed in reverse order when the file ends (call it before useStack():
 * hooks run in the order they were registered, so these close before the
 * stack's gateways).
 *
 * @param {Partial<ConstructorParameters<typeof WspsClient>[0]>} [defaults] options every client gets, before its own
 */
export function scripted (defaults = {}) {
  /** @type {(() => Promise<unknown> | void)[]} */
  const cleanups = []
  after(async () => {
    for (const fn of cleanups.reverse()) await fn()
  })
  return {
    /** @param {ConstructorParameters<typeof WspsClient>[0]} options */
    client (options) {
      const c = new WspsClient({ WebSocket, ...defaults, ...options })
      cleanups.push(() => c.close())
      return c
    },
    /** @param {Parameters<typeof fakeGateway>[0]} onConnection */
    async fake (onConnection) {
      const f = await fakeGateway(onConnection)
      cleanups.push(() => f.close())
      return f
    },
    /** @param {() => Promise<unknown> | void} fn */
    atEnd (fn) { cleanups.push(fn) }
  }
}

/**
 * A full quote with every field, `q`'s over the defaults.
 * @param {any} q
 */
export const fullQuote = (q) => ({ bid: 1, ask: 2, last: 1.5, bidSize: 1, askSize: 1, volume: 1, open: 1, high: 2, low: 1, prevClose: 1, ts: Date.now(), ...q })

/**
 * A scripted fake gateway on a free port. `onConnection` gets each socket
 * and the frames it sends, parsed (`sent` keeps those of every connection).
 * Pings are answered, as a gateway does, until answerPings(false) (a frozen
 * gateway).
 *
 * @param {(ws: WebSocket, frames: any[]) => void} onConnection
 */
export async function fakeGateway (onConnection) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await once(wss, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (wss.address())
  let connections = 0
  let answering = true
  /** @type {any[][]} */
  const sent = []
  wss.on('connection', (ws) => {
    connections++
    /** @type {any[]} */
    const frames = []
    sent.push(frames)
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data))
      frames.push(frame)
      // As a gateway does: a client's liveness probe is answered.
      if (frame.op === 'ping' && answering) ws.send(JSON.stringify({ op: 'pong', id: frame.id }))
    })
    onConnection(ws, frames)
  })
  return {
    url: `ws://127.0.0.1:${port}/ws`,
    get connections () { return connections },
    /** the frames each connection sent, parsed, in the order they connected */
    sent,
    /** @param {boolean} on */
    answerPings (on) { answering = on },
    /** the server side of every open connection */
    get sockets () { return [...wss.clients] },
    async close () {
      for (const ws of wss.clients) ws.terminate()
      await new Promise((resolve) => wss.close(resolve))
    }
  }
}

/**
 * Calls `handle` with each frame the client sends on `ws` whose op is one of
 * `ops`, parsed: how a fake gateway answers what it is asked.
 *
 * @param {WebSocket} ws the server side of a connection
 * @param {string[]} ops
 * @param {(frame: any) => void} handle
 * @returns {() => void} stops it
 */
export function onClientFrame (ws, ops, handle) {
  /** @param {import('ws').RawData} data */
  const listener = (data) => {
    const frame = JSON.parse(String(data))
    if (ops.includes(frame.op)) handle(frame)
  }
  ws.on('message', listener)
  return () => { ws.off('message', listener) }
}

/**
 * The `hello` a gateway sends first.
 * @param {string} node
 * @param {number} [heartbeatMs]
 */
export function hello (node, heartbeatMs = 15_000) {
  return JSON.stringify({ op: 'hello', v: 1, node, heartbeatMs, limits: { maxSubscriptions: 200, maxPayload: 4096, ratePerSec: 20, rateBurst: 40, batchMs: 10 } })
}

/**
 * A proxy in front of a real gateway that passes every frame through
 * unchanged except those `filter` edits or drops (return null): a way to
 * make a real stream lose a frame.
 *
 * @param {string} target ws URL of the gateway
 * @param {(msg: any) => any | null} filter server -> client frames
 */
export async function filteringProxy (target, filter) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await once(wss, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (wss.address())
  wss.on('connection', (client) => {
    const upstream = new WebSocket(target)
    /** @type {string[]} */
    const early = []
    upstream.on('open', () => { for (const m of early.splice(0)) upstream.send(m) })
    upstream.on('message', (data) => {
      const out = filter(JSON.parse(String(data)))
      if (out !== null && client.readyState === WebSocket.OPEN) client.send(JSON.stringify(out))
    })
    client.on('message', (data) => {
      if (upstream.readyState === WebSocket.OPEN) upstream.send(String(data))
      else early.push(String(data))
    })
    const closeBoth = () => {
      client.terminate()
      upstream.terminate()
    }
    upstream.on('close', closeBoth)
    upstream.on('error', closeBoth)
    client.on('close', closeBoth)
    client.on('error', closeBoth)
  })
  return {
    url: `ws://127.0.0.1:${port}/ws`,
    async close () {
      for (const ws of wss.clients) ws.terminate()
      await new Promise((resolve) => wss.close(resolve))
    }
  }
}

/**
 * A gateway in this process whose broker is in memory, serving order books
 * on a free port: the real WsServer, Sessions and BookHub, and the page,
 * fed by a venue per symbol (helper.js bookVenue). The Redis book ingest is
 * not needed: what the gateway reads and hears is what the venue says.
 *
 * @param {{maxSubscriptions?: number}} [options]
 */
export async function bookGateway ({ maxSubscriptions = 20 } = {}) {
  const parts = gatewayParts()
  const books = new BookHub({ source: parts.broker, demandLeaseMs: 60_000, appearMs: 0, logger: silent })
  const sessions = new Sessions({
    timelines: new Timelines({ realtime: { hub: parts.hub, recovery: new Recovery({ hub: parts.hub, broker: parts.broker, max: 100, logger: silent }), bars: null } }),
    books,
    metrics: parts.metrics,
    maxSubscriptions,
    draining: () => false,
    authenticate: null,
    hello: { node: 'books-gw', heartbeatMs: 30_000, limits: { maxSubscriptions } },
    logger: silent
  })
  const ctx = {
    metrics: parts.metrics,
    sendMax: 1 << 24,
    messageRate: new RateLimit(1000, 1000),
    outbox: { metrics: parts.metrics, sendHighWater: 1 << 22, slowCloseMs: 10_000, latest: (/** @type {string} */ s, /** @type {any} */ d) => parts.hub.latest(s, d), bookSnapshot: (/** @type {string} */ s, /** @type {number} */ d, /** @type {number} */ r) => books.snapshotOf(s, d, r) },
    retry: (/** @type {import('../../src/connection.js').Connection} */ c) => parts.fanout.retry(c)
  }
  const admission = new Admission({ maxConnections: 100, maxConnectionsPerIp: 0, allowedOrigins: [], trustProxy: false, authenticate: null, connected: () => connections.size })
  const connections = new Connections({ ctx, admission, sessions, metrics: parts.metrics, heartbeatMs: 30_000, logger: silent })
  const ws = new WsServer({ admission, connections, sessions, metrics: parts.metrics, maxPayload: 65_536, authTimeoutMs: 10_000, logger: silent })
  const app = createHttpApp(silent)
  await registerHttpRoutes(app, { broker: () => ({ alive: true, aliveForMs: 0 }), readiness: () => ({}), registry: null, staticDir: '' })
  ws.attach(app.server)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = /** @type {import('node:net').AddressInfo} */ (app.server.address())
  return {
    url: `ws://127.0.0.1:${port}/ws`,
    /** the page */
    httpUrl: `http://127.0.0.1:${port}/`,
    broker: parts.broker,
    /** the BookHub (resync(): the broker came back, every book is read again) */
    books,
    /**
     * @param {string} symbol
     * @param {{seed?: number, epoch?: string}} [o]
     */
    venue: (symbol, o) => bookVenue(parts.broker, books, symbol, o),
    /** Ends every connection as a drain does (1012): clients reconnect. */
    restart () { connections.drain(0) },
    async close () {
      connections.close()
      ws.close()
      books.close()
      await app.close()
    }
  }
}
