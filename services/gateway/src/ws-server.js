// WebSocket transport: the upgrade gate (path, drain, capacity, per-IP,
// Origin, token), connection set-up, heartbeat and drain. Knows the hub and
// the broker only through Sessions.

import { STATUS_CODES } from 'node:http'
import { WebSocketServer } from 'ws'
import { CloseCode, ErrorCode } from '@wsps/protocol'
import { bearerOf, hasQueryToken } from './auth.js'
import { Connection } from './connection.js'
import { Heartbeat } from './heartbeat.js'
import { WsTransport } from './ws-transport.js'

export const WS_PATH = '/ws'

/**
 * @param {import('node:stream').Duplex} socket
 * @param {number} status
 * @param {string} message
 * @param {Record<string, string>} [headers]
 */
function refuse (socket, status, message, headers = {}) {
  if (!socket.writable) return socket.destroy()
  const body = `${message}\n`
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`)
}

export class WsServer {
  /**
   * @param {object} options
   * @param {import('./config.js').GatewayConfig} options.config
   * @param {import('./session.js').Sessions} options.sessions
   * @param {import('./connection.js').ConnectionContext} options.ctx
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   * @param {import('./auth.js').Authenticator | null} options.authenticate
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ config, sessions, ctx, metrics, authenticate, logger }) {
    this.config = config
    this.sessions = sessions
    this.ctx = ctx
    this.metrics = metrics
    this.authenticate = authenticate
    this.log = logger.child({ component: 'ws' })
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: config.maxPayload,
      perMessageDeflate: false,
      clientTracking: false,
      // Pings are answered by Sessions.onPing, under the rate limit.
      autoPong: false,
      WebSocket: WsTransport
    })
    /** @type {Set<Connection>} */
    this.clients = new Set()
    /** @type {Map<string, number>} open or opening sockets per client IP */
    this.perIp = new Map()
    this.nextId = 1
    /** Upgrades admitted by the gate but still waiting for the token check. */
    this.opening = 0
    this.draining = false
    const origins = config.allowedOrigins
    this.originAllowed = origins.length === 0 || origins.includes('*')
      ? () => true
      : (/** @type {string | undefined} */ o) => o !== undefined && origins.includes(o)
    this.heartbeat = new Heartbeat(this.clients, config.heartbeatMs)
    this.handlers = socketHandlers(this)
  }

  /** @param {import('node:http').Server} server */
  attach (server) {
    server.on('upgrade', (req, socket, head) => {
      this.onUpgrade(req, socket, head).catch((err) => {
        this.log.error({ err }, 'upgrade failed')
        refuse(socket, 500, 'internal error')
      })
    })
    this.heartbeat.start()
  }

  /** @param {import('node:http').IncomingMessage} req */
  clientIp (req) {
    if (this.config.trustProxy) {
      const fwd = req.headers['x-forwarded-for']
      const first = (Array.isArray(fwd) ? fwd[0] : fwd)?.split(',')[0]?.trim()
      if (first) return first
    }
    return req.socket.remoteAddress ?? 'unknown'
  }

  /**
   * @param {import('node:http').IncomingMessage} req
   * @param {import('node:stream').Duplex} socket
   * @param {Buffer} head
   */
  async onUpgrade (req, socket, head) {
    socket.on('error', destroySelf)
    const m = this.metrics.upgrades
    const path = (req.url ?? '').split('?', 1)[0]
    if (path !== WS_PATH) {
      m.inc({ result: 'not_found' })
      return refuse(socket, 404, `WebSocket endpoint is ${WS_PATH}`)
    }
    // A query-string token would land in every proxy's access log; on a
    // WebSocket the first frame can carry it instead (docs/protocol.md).
    if (hasQueryToken(req.url)) {
      m.inc({ result: 'unauthorized' })
      return refuse(socket, 401, 'unauthorized: no ?token= on /ws; send {"op":"auth","token":...} as the first frame or an Authorization header')
    }
    const gate = this.gate(req)
    if (!gate.ok) {
      m.inc({ result: gate.result })
      return refuse(socket, gate.status, gate.message, gate.retryAfter ? { 'Retry-After': gate.retryAfter } : {})
    }
    const ip = gate.ip
    let admitted = false
    try {
      /** @type {import('./auth.js').Grants | null} */
      let grants = null
      let expiresAt = null
      // Auth on and no header: the connection opens unauthenticated and
      // must send {"op":"auth"} within WSPS_AUTH_TIMEOUT_MS (browsers).
      let authed = true
      const bearer = this.authenticate ? bearerOf(req) : null
      if (this.authenticate && bearer === null) {
        authed = false
      } else if (this.authenticate) {
        const auth = await this.authenticate(bearer)
        if (!auth.ok) {
          m.inc({ result: 'unauthorized' })
          return refuse(socket, 401, `unauthorized: ${auth.reason}`)
        }
        grants = auth.grants
        expiresAt = auth.expiresAt
      }
      if (this.draining || socket.destroyed) {
        m.inc({ result: this.draining ? 'draining' : 'aborted' })
        return refuse(socket, 503, 'draining')
      }
      admitted = true
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        // `ws` handles the socket's errors from now on; a second listener
        // would cost every connection an array in the socket's listener table.
        socket.off('error', destroySelf)
        this.onConnection(/** @type {WsTransport} */ (ws), ip, authed, grants, expiresAt)
      })
      m.inc({ result: 'accepted' })
    } finally {
      this.settle(ip, admitted)
    }
  }

  /**
   * The admission checks every transport (WebSocket, SSE) shares: drain,
   * capacity, Origin and connections per IP. When it admits, it holds a
   * place for the IP and counts the connection as opening until settle().
   *
   * @param {import('node:http').IncomingMessage} req
   * @returns {{ok: true, ip: string} | {ok: false, status: number, code: string, message: string, result: string, retryAfter?: string}}
   */
  gate (req) {
    if (this.draining) return { ok: false, status: 503, code: ErrorCode.DRAINING, message: 'draining', result: 'draining', retryAfter: '1' }
    // Connections waiting for the token check count too, or a burst that
    // waits for the JWKS would all be admitted at once.
    if (this.clients.size + this.opening >= this.config.maxConnections) {
      return { ok: false, status: 503, code: ErrorCode.GATEWAY_FULL, message: 'gateway full', result: 'full', retryAfter: '5' }
    }
    if (!this.originAllowed(req.headers.origin)) {
      return { ok: false, status: 403, code: ErrorCode.BAD_ORIGIN, message: 'origin not allowed', result: 'bad_origin' }
    }
    const ip = this.clientIp(req)
    const held = this.perIp.get(ip) ?? 0
    if (this.config.maxConnectionsPerIp > 0 && held >= this.config.maxConnectionsPerIp) {
      return { ok: false, status: 429, code: ErrorCode.TOO_MANY_CONNECTIONS, message: 'too many connections from this address', result: 'ip_limit', retryAfter: '5' }
    }
    this.perIp.set(ip, held + 1)
    this.opening++
    return { ok: true, ip }
  }

  /**
   * Ends what gate() started: the connection opened (its IP place is kept
   * until it closes) or not.
   *
   * @param {string} ip
   * @param {boolean} admitted
   */
  settle (ip, admitted) {
    this.opening--
    if (!admitted) this.releaseIp(ip)
  }

  /**
   * A connection another transport (SSE) opened after gate(): counted,
   * heartbeated and drained with the WebSocket ones. The transport calls
   * onClose() when it closes.
   *
   * @param {Connection} client
   */
  adopt (client) {
    this.clients.add(client)
    this.metrics.connections.set(this.clients.size)
  }

  /** @returns {number} an id for a new connection, unique in this process */
  nextConnectionId () {
    return this.nextId++
  }

  /** @param {string} ip */
  releaseIp (ip) {
    const n = (this.perIp.get(ip) ?? 1) - 1
    if (n <= 0) this.perIp.delete(ip)
    else this.perIp.set(ip, n)
  }

  /**
   * @param {WsTransport} ws
   * @param {string} ip
   * @param {boolean} authed false: waits for {"op":"auth"}
   * @param {import('./auth.js').Grants | null} grants
   * @param {number | null} expiresAt
   */
  onConnection (ws, ip, authed, grants, expiresAt) {
    const client = new Connection(ws, this.ctx, { id: this.nextConnectionId(), ip, grants, authed: false })
    ws.connection = client
    this.adopt(client)
    const h = this.handlers
    ws.on('message', h.message)
    ws.on('pong', h.pong)
    ws.on('ping', h.ping)
    ws.on('error', h.error)
    ws.on('close', h.close)
    if (authed) this.sessions.welcome(client, grants, expiresAt)
    else client.closeAt(Date.now() + this.config.authTimeoutMs, CloseCode.AUTH_TIMEOUT, 'no auth frame in time')
  }

  /**
   * The socket closed: forget the client everywhere.
   *
   * @param {Connection} client
   * @param {number} code
   */
  onClose (client, code) {
    // The code we closed with, not the peer's answer: a stuck reader never
    // echoes the close frame and would show as 1006.
    code = client.closeCode ?? code
    this.clients.delete(client)
    this.releaseIp(client.ip)
    this.sessions.onClose(client)
    this.metrics.connections.set(this.clients.size)
    this.metrics.closes.inc({ code: String(code) })
  }

  /**
   * Closes every client with 1012, spread evenly at random over `windowMs`
   * so they do not all reconnect to the remaining pods in the same instant.
   * Resolves when every socket is closed.
   *
   * @param {number} windowMs
   */
  drain (windowMs) {
    this.draining = true
    const clients = [...this.clients]
    this.log.info({ clients: clients.length, windowMs }, 'draining')
    return new Promise((resolve) => {
      if (this.clients.size === 0) return resolve(undefined)
      const check = setInterval(() => {
        if (this.clients.size === 0) {
          clearInterval(check)
          resolve(undefined)
        }
      }, 50)
      for (const client of clients) {
        setTimeout(() => client.close(CloseCode.SERVICE_RESTART, 'server restart'), Math.floor(Math.random() * windowMs))
      }
    })
  }

  close () {
    this.heartbeat.stop()
    for (const client of this.clients) client.terminate()
    this.wss.close()
  }
}

/**
 * A socket error before (or while) the upgrade completes. Shared, not a
 * closure; removed once `ws` owns the socket.
 *
 * @this {import('node:stream').Duplex}
 */
function destroySelf () {
  this.destroy()
}

/** @param {import('ws').WebSocket} ws */
const clientOf = (ws) => /** @type {WsTransport} */ (ws).connection

/**
 * The event handlers every connection of a server shares; `this` is the
 * socket.
 *
 * @param {WsServer} server
 */
function socketHandlers (server) {
  return {
    /**
     * @this {import('ws').WebSocket}
     * @param {import('ws').RawData} data
     * @param {boolean} isBinary
     */
    message (data, isBinary) {
      const client = clientOf(this)
      if (client) server.sessions.onMessage(client, data, isBinary)
    },
    /**
     * @this {import('ws').WebSocket}
     * @param {Buffer} data
     */
    ping (data) {
      const client = clientOf(this)
      if (client) server.sessions.onPing(client, data)
    },
    /** @this {import('ws').WebSocket} */
    pong () {
      const client = clientOf(this)
      if (client) client.markAlive()
    },
    /**
     * @this {import('ws').WebSocket}
     * @param {Error & {code?: string}} err
     */
    error (err) {
      server.log.debug({ client: clientOf(this)?.id, err: err.message, code: err.code }, 'client socket error')
    },
    /**
     * @this {import('ws').WebSocket}
     * @param {number} code
     */
    close (code) {
      const socket = /** @type {WsTransport} */ (this)
      const client = socket.connection
      socket.connection = null
      if (client) server.onClose(client, code)
    }
  }
}
