// How the bench's bridges hand quotes to a server's HTTP publish API: what
// arrives is collected and POSTed as one batch per window (the event-loop
// turn, or a fixed delay), at most 4 requests in flight; a batch due while 4
// are in flight waits a millisecond and tries again, collecting meanwhile.

import { Agent, request } from 'node:http'

const IN_FLIGHT = 4

/**
 * @template T
 * @param {object} options
 * @param {URL} options.url
 * @param {(items: T[]) => string} options.body the JSON request body of a batch
 * @param {Record<string, string>} [options.headers] besides Content-Type and Content-Length
 * @param {number} [options.everyMs] the window; 0: the event-loop turn
 * @param {(why: string) => void} options.onFailure a request that failed (with `statusOk`: or was answered another status than 200)
 * @param {boolean} [options.statusOk] check the answer's status
 * @returns {(item: T) => void} adds one to the next batch
 */
export function batchPoster ({ url, body, headers = {}, everyMs = 0, onFailure, statusOk = false }) {
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT })
  /** @type {T[]} */
  let items = []
  let scheduled = false
  let inFlight = 0

  function flush () {
    scheduled = false
    if (items.length === 0) return
    if (inFlight >= IN_FLIGHT) {
      scheduled = true
      setTimeout(flush, 1)
      return
    }
    const text = body(items)
    items = []
    inFlight++
    const req = request(url, { method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers } }, (res) => {
      if (statusOk && res.statusCode !== 200) onFailure(`HTTP ${res.statusCode}`)
      res.resume()
      res.on('end', () => { inFlight-- })
    })
    req.on('error', (err) => {
      inFlight--
      onFailure(err.message)
    })
    req.end(text)
  }

  return (item) => {
    items.push(item)
    if (scheduled) return
    scheduled = true
    if (everyMs > 0) setTimeout(flush, everyMs)
    else setImmediate(flush)
  }
}
