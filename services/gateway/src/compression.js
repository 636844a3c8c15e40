// permessage-deflate on /ws (WSPS_COMPRESSION): what `ws` is offered, and
// the cap on compressed connections (WSPS_COMPRESSION_MAX_CONNECTIONS).
// Each compressed connection keeps a deflate state between messages, so
// past the cap a client that asks gets an uncompressed connection: its
// offer is dropped before `ws` negotiates (the standard outcome of an offer
// a server declines, never an error).

/** Frames shorter than this go uncompressed: a small delta gains a few bytes for a deflate call. */
export const COMPRESS_MIN_BYTES = 256

/** The request header a client offers extensions in (RFC 6455 9.1). */
const OFFER = 'sec-websocket-extensions'

/**
 * What `ws` is given as `perMessageDeflate`. No context takeover either
 * way, so no message depends on the last one's history, and a 1 KiB server
 * window (server_max_window_bits=10) with a small zlib memLevel: `ws`
 * resets a compressed connection's deflate state after each message, it
 * does not free it, so this is its size (a few KiB instead of ~256 KiB at
 * zlib's defaults). Quote frames are well under 1 KiB.
 *
 * @param {boolean} enabled
 * @returns {false | import('ws').PerMessageDeflateOptions}
 */
export function deflateOptions (enabled) {
  if (!enabled) return false
  return {
    serverNoContextTakeover: true,
    clientNoContextTakeover: true,
    serverMaxWindowBits: 10,
    zlibDeflateOptions: { memLevel: 4 },
    threshold: COMPRESS_MIN_BYTES
  }
}

/** Counts this process's compressed connections against the cap. */
export class CompressionBudget {
  #max
  #open = 0

  /** @param {number} max compressed connections at most (0: no cap) */
  constructor (max) {
    this.#max = max
  }

  /** @returns {number} compressed connections open now */
  get open () { return this.#open }

  /**
   * Before the upgrade: at the cap, the client's extension offer is
   * dropped, so `ws` answers with an uncompressed connection.
   *
   * @param {import('node:http').IncomingMessage} req
   */
  admit (req) {
    if (this.#max > 0 && this.#open >= this.#max) delete req.headers[OFFER]
  }

  /** @param {import('ws').WebSocket} ws a connection just opened */
  opened (ws) {
    if (ws.extensions) this.#open++
  }

  /** @param {import('ws').WebSocket} ws a connection just closed */
  closed (ws) {
    if (ws.extensions) this.#open--
  }
}
