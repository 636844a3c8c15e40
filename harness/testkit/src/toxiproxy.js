// Toxiproxy (Shopify's fault proxy) in front of a TCP service, for tests that
// need a link to go silent, slow or reset: a real toxiproxy-server of our own
// on a free loopback port (the pinned one: tools/tools.sh toxiproxy), driven
// over its HTTP API. Each proxy listens on loopback and forwards to its
// upstream; its methods add and remove toxics on every connection through it,
// those already open included.

import { accessSync, constants } from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, join } from 'node:path'
import { freePort, httpOk } from './net.js'
import { startProcess } from './process.js'
import { waitFor } from './wait.js'

const BIN = 'toxiproxy-server'

/** @param {string} file */
function executable (file) {
  try {
    accessSync(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * The toxiproxy-server to run: the first on PATH, else the one tools/tools.sh
 * links into $WSPS_CACHE/bin.
 *
 * @returns {string} its path
 */
export function toxiproxyBin () {
  const cacheBin = join(process.env.WSPS_CACHE || join(homedir(), '.cache/wsps'), 'bin')
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), cacheBin]
  const found = dirs.map((d) => join(d, BIN)).find(executable)
  if (!found) throw new Error(`${BIN} not found on PATH nor in ${cacheBin}: install it with \`tools/tools.sh toxiproxy\` (make test-integration does)`)
  return found
}

/**
 * One call to the API: the parsed JSON answer (null for none). Throws on a
 * status that is not 2xx, quoting toxiproxy's error.
 *
 * @param {string} url the API's base URL
 * @param {string} method
 * @param {string} path
 * @param {object} [body]
 * @returns {Promise<any>}
 */
async function api (url, method, path, body) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(5000)
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`toxiproxy ${method} ${path}: ${res.status} ${text.trim()}`)
  return text ? JSON.parse(text) : null
}

/**
 * @typedef {object} Toxic
 * @property {string} name
 * @property {string} type latency, timeout, reset_peer, ...
 * @property {'upstream' | 'downstream'} stream upstream: client to server; downstream: server to client
 * @property {number} [toxicity] the share of connections it applies to (default 1)
 * @property {Record<string, number>} attributes
 */

/**
 * A proxy of a running toxiproxy-server (made by createProxy()).
 */
export class ToxiProxy {
  #url

  /**
   * @param {string} url the server's API
   * @param {{name: string, listen: string, upstream: string}} fields as the server reported them
   */
  constructor (url, { name, listen, upstream }) {
    this.#url = url
    this.name = name
    /** host:port it listens on */
    this.listen = listen
    /** host:port it forwards to */
    this.upstream = upstream
    const i = listen.lastIndexOf(':')
    this.host = listen.slice(0, i)
    this.port = Number(listen.slice(i + 1))
  }

  /**
   * @param {string} method
   * @param {string} [path] under /proxies/<name>
   * @param {object} [body]
   */
  #call (method, path = '', body) {
    return api(this.#url, method, `/proxies/${encodeURIComponent(this.name)}${path}`, body)
  }

  /**
   * Adds a toxic, or updates the one of that name (in place: its
   * connections stay as they are).
   *
   * @param {Toxic} toxic
   */
  async toxic (toxic) {
    const body = { toxicity: 1, ...toxic }
    try {
      await this.#call('POST', '/toxics', body)
    } catch (err) {
      if (!/: 409 /.test(/** @type {Error} */ (err).message)) throw err
      await this.#call('POST', `/toxics/${encodeURIComponent(toxic.name)}`, body)
    }
  }

  /** @returns {Promise<Toxic[]>} the toxics in force */
  toxics () { return this.#call('GET', '/toxics') }

  /**
   * Nothing gets through in either direction and nothing is closed: what the
   * client and the server send is dropped, their sockets stay open (a
   * `timeout` toxic with timeout 0 each way). heal() ends it by closing the
   * connections it held (toxiproxy closes a link when its timeout toxic goes);
   * new connections while it is in force are accepted and silenced too.
   */
  async silence () {
    for (const [name, stream] of /** @type {const} */ ([['silence_downstream', 'downstream'], ['silence_upstream', 'upstream']])) {
      await this.toxic({ name, type: 'timeout', stream, attributes: { timeout: 0 } })
    }
  }

  /**
   * Delays what comes back from the server by `ms` (± `jitter`) ms: a
   * `latency` toxic on the downstream (a request's round trip gets `ms` longer).
   * Called again, it replaces the delay.
   *
   * @param {number} ms
   * @param {{jitter?: number, stream?: 'upstream' | 'downstream'}} [options]
   */
  slow (ms, { jitter = 0, stream = 'downstream' } = {}) {
    return this.toxic({ name: `slow_${stream}`, type: 'latency', stream, attributes: { latency: ms, jitter } })
  }

  /**
   * Resets connections (a `reset_peer` toxic on the upstream): each is closed
   * as soon as the client sends something, after `timeoutMs`. Connections
   * made while it is in force get a TCP RST (SO_LINGER 0); one already open
   * when it is added is closed with a FIN (toxiproxy sets the linger only
   * when a connection starts).
   *
   * @param {{timeoutMs?: number}} [options]
   */
  resetPeer ({ timeoutMs = 0 } = {}) {
    return this.toxic({ name: 'reset_peer_upstream', type: 'reset_peer', stream: 'upstream', attributes: { timeout: timeoutMs } })
  }

  /** Removes every toxic (what silence(), slow() and resetPeer() added). */
  async heal () {
    for (const t of await this.toxics()) await this.#call('DELETE', `/toxics/${encodeURIComponent(t.name)}`)
  }

  /** Closes every connection and stops listening (connects are refused) until enable(). */
  async disable () { await this.#call('POST', '', { enabled: false }) }

  /** Listens again on the same address. */
  async enable () { await this.#call('POST', '', { enabled: true }) }

  /** Deletes the proxy (its connections are closed). */
  async delete () { await this.#call('DELETE') }
}

/**
 * A toxiproxy-server of our own on a free loopback port.
 */
export async function startToxiproxy () {
  const bin = toxiproxyBin()
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const child = startProcess(bin, ['-host', '127.0.0.1', '-port', String(port)], { name: `toxiproxy ${port}`, env: { LOG_LEVEL: 'warn' } })
  try {
    await waitFor(() => {
      if (!child.alive) throw new Error(`${BIN} exited: ${child.logs.join('\n')}`)
      return httpOk(`${url}/version`)
    }, { timeout: 10_000, message: `${BIN} on ${port}` })
  } catch (err) {
    await child.kill()
    throw err
  }
  let n = 0
  return {
    /** The port of its HTTP API. */
    port,
    /** Its HTTP API. */
    url,
    get pid () { return child.alive ? child.pid : 0 },
    /** Its last log lines (warnings and errors). */
    get logs () { return child.logs },
    /**
     * A proxy to `upstream`, listening on `listen` (default: a port the
     * server picks on 127.0.0.1).
     *
     * @param {{upstream: string, listen?: string, name?: string}} options upstream and listen as host:port
     */
    async createProxy ({ upstream, listen = '127.0.0.1:0', name = `proxy${++n}` }) {
      const created = await api(url, 'POST', '/proxies', { name, listen, upstream, enabled: true })
      return new ToxiProxy(url, created)
    },
    /** Every proxy enabled again and every toxic removed. */
    async reset () { await api(url, 'POST', '/reset') },
    /** Stops the server (its proxies and their connections go with it). */
    async stop () { await child.stop('SIGTERM', { killAfterMs: 2000 }) }
  }
}

/** @typedef {Awaited<ReturnType<typeof startToxiproxy>>} ToxiproxyHandle */
