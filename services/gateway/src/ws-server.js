// WebSocket upgrades on /ws: the path, the admission (admission.js), the
// token in the header (or none yet: the `auth` frame must follow), then the
// socket's events handed to Sessions. Knows the hub and the broker only
// through Sessions.

import { STATUS_CODES } from 'node:http'
import { WebSocketServer } from 'ws'
import { Disconnect, Subprotocol } from '@wsps/protocol'
import { bearerOf, hasQueryToken } from './auth.js'
import { CompressionBudget, deflateOptions } from './compression.js'
import { WsTransport, transportOf } from './ws-transport.js'

export const WS_PATH = '/ws'

/**
 * The subprotocol of an upgrade (`Sec-WebSocket-Protocol`): the first of
 * the client's list the gateway speaks, in the client's order of
 * preference. A list naming neither is answered with no subprotocol: the
 * connection speaks JSON, as one that asked for none (docs/protocol.md,
 * Binary encoding).
 *
 * @param {Set<string>} protocols the client's, in its order
 * @returns {string | false}
 */
export function chooseSubprotocol (protocols) {
  for (const p of protocols) if (p === Subprotocol.PROTO || p === Subprotocol.JSON) return p
  return false
}

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
  #admission
  #connections
  #sessions
  #metrics
  #authTimeoutMs
  #wss
  #compression
  #handlers
  #log

  /**
   * @param {object} options
   * @param {import('./admission.js').Admission} options.admission
   * @param {import('./connections.js').Connections} options.connections
   * @param {import('./session.js').Sessions} options.sessions
   * @param {import('./metrics.js').GatewayMetrics} options.metrics
   * @param {number} options.maxPayload largest client frame (larger: 1009)
   * @param {boolean} [options.compression] offer permessage-deflate (compression.js)
   * @param {number} [options.compressionMaxConnections] compressed connections at most (0: no cap)
   * @param {number} options.authTimeoutMs auth on and no header: the `auth` frame must come within this
   * @param {import('pino').Logger} options.logger
   */
  constructor ({ admission, connections, sessions, metrics, maxPayload, compression = false, compressionMaxConnections = 0, authTimeoutMs, logger }) {
    this.#admission = admission
    this.#connections = connections
    this.#sessions = sessions
    this.#metrics = metrics
    this.#authTimeoutMs = authTimeoutMs
    this.#log = logger.child({ component: 'ws' })
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload,
      perMessageDeflate: deflateOptions(compression),
      clientTracking: false,
      handleProtocols: chooseSubprotocol,
      // Pings are answered by Sessions.onPing, under the rate limit.
      autoPong: false
    })
    this.#compression = new CompressionBudget(compressionMaxConnections)
    this.#handlers = socketHandlers(this.#log, sessions, connections, this.#compression)
  }

  /** @param {import('node:http').Server} server */
  attach (server) {
    server.on('upgrade', (req, socket, head) => {
      this.#onUpgrade(req, socket, head).catch((err) => {
        this.#log.error({ err }, 'upgrade failed')
        refuse(socket, 500, 'internal error')
      })
    })
  }

  /**
   * @param {import('node:http').IncomingMessage} req
   * @param {import('node:stream').Duplex} socket
   * @param {Buffer} head
   */
  async #onUpgrade (req, socket, head) {
    socket.on('error', destroySelf)
    const m = this.#metrics.upgrades
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
    // Auth on and no header: the connection opens unauthenticated and
    // must send {"op":"auth"} within WSPS_AUTH_TIMEOUT_MS (browsers).
    const lease = await this.#admission.open(req, bearerOf(req), { authFrame: true })
    if (!lease.ok) {
      m.inc({ result: lease.result })
      return refuse(socket, lease.status, lease.message, lease.retryAfter ? { 'Retry-After': lease.retryAfter } : {})
    }
    this.#compression.admit(req)
    try {
      this.#wss.handleUpgrade(req, socket, head, (ws) => {
        // `ws` handles the socket's errors from now on; a second listener
        // would cost every connection an array in the socket's listener table.
        socket.off('error', destroySelf)
        this.#onConnection(ws, lease)
      })
      m.inc({ result: 'accepted' })
    } finally {
      this.#admission.settle(lease.ip, true)
    }
  }

  /**
   * @param {import('ws').WebSocket} ws
   * @param {import('./admission.js').Lease} lease
   */
  #onConnection (ws, lease) {
    const transport = new WsTransport(ws, this.#handlers)
    const client = this.#connections.open(transport, lease)
    this.#compression.opened(ws)
    transport.serve(client)
    if (lease.authed) this.#sessions.welcome(client, lease.access)
    else client.closeAt(Date.now() + this.#authTimeoutMs, Disconnect.AUTH_TIMEOUT)
  }

  close () {
    this.#wss.close()
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
const clientOf = (ws) => transportOf(ws)?.connection

/**
 * The event handlers every connection of a server shares; `this` is the
 * socket.
 *
 * @param {import('pino').Logger} log
 * @param {import('./session.js').Sessions} sessions
 * @param {import('./connections.js').Connections} connections
 * @param {CompressionBudget} compression
 */
function socketHandlers (log, sessions, connections, compression) {
  return {
    /**
     * @this {import('ws').WebSocket}
     * @param {import('ws').RawData} data
     * @param {boolean} isBinary
     */
    message (data, isBinary) {
      const client = clientOf(this)
      if (client) sessions.onMessage(client, data, isBinary)
    },
    /**
     * A WebSocket ping frame: answered here, on the socket, when Sessions
     * lets it through.
     *
     * @this {import('ws').WebSocket}
     * @param {Buffer} data
     */
    ping (data) {
      const client = clientOf(this)
      if (client && sessions.onPing(client)) this.pong(data)
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
      log.debug({ client: clientOf(this)?.id, err: err.message, code: err.code }, 'client socket error')
    },
    /**
     * @this {import('ws').WebSocket}
     * @param {number} code
     */
    close (code) {
      compression.closed(this)
      const client = transportOf(this)?.detach()
      if (client) connections.onClose(client, code)
    }
  }
}
