// Hostile input as named cases, each with the outcome the gateway promises
// (a close code or an HTTP status). One definition for two places: the local
// tests send them straight to a gateway process
// (test/hostile-input.test.js), the e2e sends them through the cluster's
// ingress while well-behaved clients stay subscribed (infra/e2e/hostile.mjs).
// A case resolves with what happened, in the words of its `expect`, so a
// broken guarantee reads as `expected close 1009, got close 1000`.

import { CloseCode, ErrorCode, Limits } from '@wsps/protocol'
import { clientFrame, rawRequest, rawWebSocket, upgradeHead } from './raw.js'
import { SseStream } from './sse-stream.js'
import { TestClient } from './test-client.js'
import { connect } from 'node:net'

/**
 * Where the cases go: a gateway, or an ingress in front of gateways.
 *
 * @typedef {object} Target
 * @property {number} port TCP port on 127.0.0.1
 * @property {string} host the Host header (the ingress routes on it)
 * @property {number} maxPayload the gateways' `hello.limits.maxPayload`
 * @property {number} maxSubscriptions the gateways' `hello.limits.maxSubscriptions`
 *
 * @typedef {object} HostileCase
 * @property {string} name
 * @property {'frames' | 'messages' | 'http'} kind
 * @property {boolean} [direct] only sent straight to a gateway, not through a proxy (says why where declared)
 * @property {string} expect the promised outcome
 * @property {(t: Target) => Promise<string>} run what happened, worded like `expect`
 */

/** @param {number | null} code */
const closed = (code) => (code === null ? 'closed without a close frame' : `close ${code}`)

/**
 * One raw frame on a hand-made WebSocket; what the server closed with.
 * @param {Target} t
 * @param {Buffer[]} frames
 */
async function sendRaw (t, frames) {
  const ws = await rawWebSocket(t.port, { host: t.host })
  try {
    for (const f of frames) ws.socket.write(f)
    const timeout = new Promise((resolve) => setTimeout(resolve, 15_000, 'still open after 15 s'))
    const code = await Promise.race([ws.closeCode, timeout])
    return typeof code === 'string' ? code : closed(code)
  } finally {
    ws.socket.destroy()
  }
}

/**
 * A raw HTTP request (upgrade head plus `extra`, or bytes); its status.
 * @param {Target} t
 * @param {string | Buffer} request
 */
async function status (t, request) {
  const r = await rawRequest(t.port, request)
  return r.status ? `HTTP ${r.status}` : 'closed without an answer'
}

/**
 * A TestClient on the target; `act` misbehaves; what the socket closed with.
 * @param {Target} t
 * @param {(c: TestClient) => Promise<void> | void} act
 */
async function client (t, act) {
  const c = await TestClient.connect(`ws://127.0.0.1:${t.port}/ws`, { headers: { host: t.host }, handshakeTimeout: 10_000 })
  try {
    await act(c)
    const timeout = new Promise((resolve) => setTimeout(resolve, 15_000, { code: 'none within 15 s' }))
    const { code } = /** @type {{code: number | string}} */ (await Promise.race([c.closedPromise, timeout]))
    return typeof code === 'number' ? closed(code) : `still open (${code})`
  } finally {
    c.ws.terminate()
  }
}

const unmasked = Buffer.concat([Buffer.from([0x81, 2]), Buffer.from('{}')])
const rsv1 = (() => { const f = clientFrame(1, '{}'); f[0] |= 0x40; return f })()

/** @type {readonly HostileCase[]} */
export const hostileCases = Object.freeze([
  { name: 'a text frame over maxPayload', kind: 'frames', expect: `close ${CloseCode.MESSAGE_TOO_BIG}`, run: (t) => sendRaw(t, [clientFrame(1, '{"op":"ping","pad":"' + 'x'.repeat(t.maxPayload + 1000) + '"}')]) },
  { name: 'a frame header announcing 1 TiB', kind: 'frames', expect: `close ${CloseCode.MESSAGE_TOO_BIG}`, run: (t) => sendRaw(t, [clientFrame(1, Buffer.alloc(0), { declaredLength: 2 ** 40 })]) },
  {
    name: 'fragments that each fit but add up to more than maxPayload', kind: 'frames', expect: `close ${CloseCode.MESSAGE_TOO_BIG}`,
    run: (t) => { const part = 'x'.repeat(Math.ceil(t.maxPayload * 0.75)); return sendRaw(t, [clientFrame(1, part, { fin: false }), clientFrame(0, part, { fin: false })]) }
  },
  { name: 'an unmasked client frame', kind: 'frames', expect: 'close 1002', run: (t) => sendRaw(t, [unmasked]) },
  { name: 'RSV1 set without an extension', kind: 'frames', expect: 'close 1002', run: (t) => sendRaw(t, [rsv1]) },
  { name: 'unknown opcode 3', kind: 'frames', expect: 'close 1002', run: (t) => sendRaw(t, [clientFrame(3, 'x')]) },
  { name: 'a fragmented ping', kind: 'frames', expect: 'close 1002', run: (t) => sendRaw(t, [clientFrame(9, 'x', { fin: false })]) },
  { name: 'a control frame over 125 bytes', kind: 'frames', expect: 'close 1002', run: (t) => sendRaw(t, [clientFrame(9, 'x'.repeat(200))]) },
  { name: 'a continuation without a start', kind: 'frames', expect: 'close 1002', run: (t) => sendRaw(t, [clientFrame(0, 'x')]) },
  { name: 'a close frame with an invalid code', kind: 'frames', expect: 'close 1002', run: (t) => sendRaw(t, [clientFrame(8, Buffer.from([0x03, 0xe7]))]) },
  { name: 'a text frame with invalid UTF-8', kind: 'frames', expect: 'close 1007', run: (t) => sendRaw(t, [clientFrame(1, Buffer.from([0x22, 0xff, 0xfe, 0x22]))]) },
  {
    name: 'a stream of invalid JSON frames', kind: 'messages', expect: `close ${CloseCode.POLICY_VIOLATION}`,
    run: (t) => client(t, (c) => { for (let i = 0; i < 40 && c.ws.readyState === 1; i++) c.ws.send(`garbage ${i}`) })
  },
  {
    // The gateway closes after more than two bursts dropped in a row, and a
    // token refilled in between admits one message and restarts the count.
    // Through a proxy on a busy cluster the flood can reach the gateway
    // spread out enough for that (seen once with four bursts in all), so it
    // sends ten: well past any one refill.
    name: 'a message-rate flood', kind: 'messages', expect: `close ${CloseCode.RATE_LIMIT_EXCEEDED}`,
    run: (t) => client(t, (c) => { for (let i = 0; i < 10 * c.hello.limits.rateBurst && c.ws.readyState === 1; i++) c.send({ op: 'ping', id: i }) })
  },
  {
    name: 'a subscription flood over maxSubscriptions', kind: 'messages', expect: `${ErrorCode.TOO_MANY_SUBSCRIPTIONS}, then close ${CloseCode.POLICY_VIOLATION}`,
    run: async (t) => {
      /** @type {string} */
      let first = ''
      const end = await client(t, async (c) => {
        // Up to the limit in requests of the largest allowed size, then one more symbol.
        const all = Array.from({ length: t.maxSubscriptions }, (_, i) => `HOSTILE${i}`)
        for (let i = 0; i < all.length; i += Limits.MAX_SYMBOLS_PER_REQUEST) await c.sub(all.slice(i, i + Limits.MAX_SYMBOLS_PER_REQUEST))
        const over = await c.sub(['HOSTILE-ONE-MORE'])
        first = over.op === 'error' ? over.code : `${over.op} of ${over.symbols?.length} symbols`
        // Keep asking: every refusal is a strike.
        for (let i = 0; i < 40 && c.ws.readyState === 1; i++) c.send({ op: 'sub', symbols: [`HOSTILEX${i}`] })
      })
      return `${first}, then ${end}`
    }
  },
  { name: 'a header over 8 KB', kind: 'http', expect: 'HTTP 431', run: (t) => status(t, `${upgradeHead({ host: t.host, headers: { 'X-Big': 'a'.repeat(9000) } })}\r\n`) },
  { name: '3000 headers', kind: 'http', expect: 'HTTP 431', run: (t) => status(t, `${upgradeHead({ host: t.host, extra: Array.from({ length: 3000 }, (_, i) => `X-H${i}: 1\r\n`).join('') })}\r\n`) },
  { name: 'binary bytes that are not HTTP', kind: 'http', expect: 'HTTP 400', run: (t) => status(t, Buffer.concat([Buffer.from([0x00, 0x01, 0x02, 0xff, 0xfe]), Buffer.from(' / HTTP/1.1\r\n\r\n')])) },
  // Straight to a gateway only: Traefik sniffs the first bytes of a
  // connection and takes a TLS record for TLS (its TCP routers), holding it
  // until its read timeout like the slow handshake, never answering.
  { name: 'a TLS ClientHello on the plain port', kind: 'http', direct: true, expect: 'HTTP 400', run: (t) => status(t, Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])) },
  { name: 'an upgrade to a wrong path', kind: 'http', expect: 'HTTP 404', run: (t) => status(t, `${upgradeHead({ host: t.host, path: '/socket' })}\r\n`) },
  { name: 'a malformed Sec-WebSocket-Key', kind: 'http', expect: 'HTTP 400', run: (t) => status(t, `${upgradeHead({ host: t.host, headers: { 'Sec-WebSocket-Key': 'short' } })}\r\n`) },
  {
    name: 'an SSE request for more than maxSubscriptions symbols', kind: 'http', expect: `HTTP 400 ${ErrorCode.TOO_MANY_SUBSCRIPTIONS}`,
    run: async (t) => {
      const symbols = Array.from({ length: t.maxSubscriptions + 1 }, (_, i) => `HOSTILE${i}`).join(',')
      const s = await SseStream.open(`http://127.0.0.1:${t.port}/sse?symbols=${symbols}`, { host: t.host })
      s.close()
      let code = ''
      try { code = JSON.parse(s.body).code ?? '' } catch {}
      return `HTTP ${s.status}${code ? ` ${code}` : ''}`
    }
  }
])

/**
 * A handshake whose headers trickle in one byte every 500 ms (slowloris):
 * resolves with how long the server (or the proxy in front of it) took to
 * cut it off, or null when it was still open after `limitMs`.
 *
 * @param {Target} t
 * @param {number} limitMs
 * @returns {Promise<number | null>}
 */
export function slowHandshake (t, limitMs) {
  const socket = connect({ port: t.port, host: '127.0.0.1' })
  const head = upgradeHead({ host: t.host, headers: { 'X-Pad': 'a'.repeat(300) } })
  let i = 0
  const timer = setInterval(() => { if (!socket.destroyed && i < head.length) socket.write(head[i++]) }, 500)
  const started = Date.now()
  socket.on('error', () => {})
  return new Promise((resolve) => {
    const limit = setTimeout(() => { clearInterval(timer); socket.destroy(); resolve(null) }, limitMs)
    socket.on('close', () => { clearInterval(timer); clearTimeout(limit); resolve(Date.now() - started) })
  })
}

/**
 * Runs the cases one after the other.
 *
 * @param {Target} t
 * @param {readonly HostileCase[]} [cases]
 * @returns {Promise<{name: string, expect: string, got: string, ok: boolean}[]>}
 */
export async function runHostileCases (t, cases = hostileCases) {
  const out = []
  for (const c of cases) {
    const got = await c.run(t).catch((/** @type {Error} */ err) => `failed: ${err.message}`)
    out.push({ name: c.name, expect: c.expect, got, ok: got === c.expect })
  }
  return out
}
