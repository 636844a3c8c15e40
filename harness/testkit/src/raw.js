// Raw TCP helpers for hostile-input tests: hand-written upgrade requests and
// WebSocket frames, so a test can send what no well-behaved client would
// (trickled headers, oversized header sections, lying length fields).

import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { connect } from 'node:net'

/**
 * The request line and headers of a WebSocket upgrade, without the final
 * blank line.
 *
 * @param {{path?: string, host?: string, headers?: Record<string, string>, extra?: string}} [options]
 *   host: the Host header (an ingress routes on it)
 */
export function upgradeHead ({ path = '/ws', host = '127.0.0.1', headers = {}, extra = '' } = {}) {
  const all = {
    Host: host,
    Upgrade: 'websocket',
    Connection: 'Upgrade',
    'Sec-WebSocket-Version': '13',
    'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
    ...headers
  }
  return `GET ${path} HTTP/1.1\r\n${Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`).join('')}${extra}`
}

/**
 * Sends `request` on a fresh TCP connection and resolves with the first
 * response line's status (0 when the server closed without answering), the
 * raw answer, how long it took, and the socket (ended unless keepOpen).
 *
 * @param {number} port
 * @param {string | Buffer} request
 * @param {{timeout?: number, keepOpen?: boolean}} [options]
 * @returns {Promise<{status: number, text: string, ms: number, socket: import('node:net').Socket}>}
 */
export async function rawRequest (port, request, { timeout = 10_000, keepOpen = false } = {}) {
  const started = Date.now()
  const socket = connect({ port, host: '127.0.0.1' })
  await once(socket, 'connect')
  socket.write(request)
  return new Promise((resolve, reject) => {
    let text = ''
    const done = () => {
      clearTimeout(timer)
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0)
      if (!keepOpen) socket.destroy()
      resolve({ status, text, ms: Date.now() - started, socket })
    }
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer within ${timeout} ms`))
    }, timeout)
    socket.on('data', (d) => {
      text += d.toString('latin1')
      if (text.includes('\r\n\r\n')) done()
    })
    socket.on('close', done)
    socket.on('error', () => {})
  })
}

/**
 * A masked client frame. `declaredLength` lets the header lie about the
 * payload length (to test limits enforced before the payload arrives).
 *
 * @param {number} opcode 1 text, 2 binary, 0 continuation, 8 close, 9 ping
 * @param {Buffer | string} payload
 * @param {{fin?: boolean, declaredLength?: number}} [options]
 */
export function clientFrame (opcode, payload, { fin = true, declaredLength } = {}) {
  const data = typeof payload === 'string' ? Buffer.from(payload) : payload
  const len = declaredLength ?? data.length
  /** @type {Buffer} */
  let head
  if (len < 126) {
    head = Buffer.alloc(2)
    head[1] = 0x80 | len
  } else if (len < 65536) {
    head = Buffer.alloc(4)
    head[1] = 0x80 | 126
    head.writeUInt16BE(len, 2)
  } else {
    head = Buffer.alloc(10)
    head[1] = 0x80 | 127
    head.writeBigUInt64BE(BigInt(len), 2)
  }
  head[0] = (fin ? 0x80 : 0) | opcode
  const mask = randomBytes(4)
  const body = Buffer.alloc(data.length)
  for (let i = 0; i < data.length; i++) body[i] = data[i] ^ mask[i & 3]
  return Buffer.concat([head, mask, body])
}

/**
 * Opens a WebSocket by hand (no library) and returns the socket positioned
 * after the 101 response, plus a reader of the server's close code.
 *
 * @param {number} port
 * @param {{host?: string}} [options] the Host header
 */
export async function rawWebSocket (port, { host } = {}) {
  const { status, text, socket } = await rawRequest(port, `${upgradeHead({ host })}\r\n`, { keepOpen: true })
  if (status !== 101) {
    socket.destroy()
    throw new Error(`upgrade answered ${status}: ${text.split('\r\n')[0]}`)
  }
  let rest = Buffer.from(text.slice(text.indexOf('\r\n\r\n') + 4), 'latin1')
  /** @type {Promise<number | null>} close code sent by the server, null if it sent none */
  const closeCode = new Promise((resolve) => {
    const scan = () => {
      // Server frames are unmasked; walk them until a close frame.
      while (rest.length >= 2) {
        const opcode = rest[0] & 0x0f
        let len = rest[1] & 0x7f
        let off = 2
        if (len === 126) {
          if (rest.length < 4) return
          len = rest.readUInt16BE(2)
          off = 4
        } else if (len === 127) {
          if (rest.length < 10) return
          len = Number(rest.readBigUInt64BE(2))
          off = 10
        }
        if (rest.length < off + len) return
        if (opcode === 8) return resolve(len >= 2 ? rest.readUInt16BE(off) : 1005)
        rest = rest.subarray(off + len)
      }
    }
    socket.on('data', (d) => {
      rest = Buffer.concat([rest, d])
      scan()
    })
    socket.on('close', () => resolve(null))
    scan()
  })
  return { socket, closeCode }
}
