// permessage-deflate as WSPS_COMPRESSION offers it (compression.js):
// negotiated only when the client asks and the gateway allows it, with no
// context takeover and the small window; a client that asks a gateway with
// it off, or past WSPS_COMPRESSION_MAX_CONNECTIONS, gets an uncompressed
// connection, not an error. Real sockets, the gateway's own transport class.

import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { test } from 'node:test'
import { WebSocket, WebSocketServer } from 'ws'
import { ServerOp } from '@wsps/protocol'
import { waitFor } from '@wsps/testkit'
import { loadGatewayConfig } from '../src/config.js'
import { TextFrame } from '../src/text-frame.js'
import { COMPRESS_MIN_BYTES, CompressionBudget, deflateOptions } from '../src/compression.js'
import { WsTransport } from '../src/ws-transport.js'

/**
 * @param {boolean} compression the gateway's setting
 * @param {boolean} ask whether the client offers permessage-deflate
 */
async function connect (compression, ask) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: deflateOptions(compression) })
  await once(wss, 'listening')
  const port = /** @type {import('node:net').AddressInfo} */ (wss.address()).port
  const accepted = once(wss, 'connection')
  const client = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: ask })
  /** @type {string[]} */
  const got = []
  client.on('message', (data) => got.push(String(data)))
  let agreed = ''
  client.on('upgrade', (res) => { agreed = String(res.headers['sec-websocket-extensions'] ?? '') })
  await once(client, 'open')
  const [ws] = /** @type {[WebSocket]} */ (await accepted)
  const server = new WsTransport(ws, {})
  const close = async () => {
    client.terminate()
    for (const s of wss.clients) s.terminate()
    await new Promise((resolve) => wss.close(resolve))
  }
  return { server, client, got, agreed, close }
}

test('on, and the client asks: deflate with no context takeover and a 1 KiB server window; frames arrive intact', async (t) => {
  const { server, client, got, agreed, close } = await connect(true, true)
  t.after(close)
  assert.equal(client.extensions, 'permessage-deflate')
  for (const param of ['server_no_context_takeover', 'client_no_context_takeover', 'server_max_window_bits=10']) assert.ok(agreed.includes(param), `${param} in ${agreed}`)
  const big = new TextFrame(`{"op":"q","quotes":[{"symbol":"AAPL","seq":2,"x":"${'z'.repeat(COMPRESS_MIN_BYTES * 2)}"}]}`)
  const small = new TextFrame('{"op":"q","quotes":[{"symbol":"AAPL","seq":3,"bid":1}]}')
  server.write(big, ServerOp.QUOTES)
  server.write(small, ServerOp.QUOTES)
  await waitFor(() => got.length === 2, { timeout: 20_000, message: 'both messages' })
  assert.deepEqual(got, [big.payload.toString(), small.payload.toString()])
})

test('on, and the client does not ask: an uncompressed connection', async (t) => {
  const { client, agreed, close } = await connect(true, false)
  t.after(close)
  assert.equal(client.extensions, '')
  assert.equal(agreed, '')
})

test('off (the default), and the client asks: an uncompressed connection, no error', async (t) => {
  const { server, client, got, close } = await connect(false, true)
  t.after(close)
  assert.equal(client.extensions, '')
  const frame = new TextFrame(`{"op":"q","quotes":[{"symbol":"AAPL","seq":2,"x":"${'z'.repeat(600)}"}]}`)
  server.write(frame, ServerOp.QUOTES)
  await waitFor(() => got.length === 1, { timeout: 20_000, message: 'the message' })
  assert.equal(got[0], frame.payload.toString())
})

test('WSPS_COMPRESSION: off by default, a boolean, anything else refused', () => {
  const env = { WSPS_REDIS_URL: 'redis://127.0.0.1:6379' }
  assert.equal(loadGatewayConfig(env).compression, false)
  assert.equal(loadGatewayConfig({ ...env, WSPS_COMPRESSION: 'true' }).compression, true)
  assert.throws(() => loadGatewayConfig({ ...env, WSPS_COMPRESSION: 'gzip' }), /WSPS_COMPRESSION/)
})

test('the cap: past WSPS_COMPRESSION_MAX_CONNECTIONS a client that asks gets an uncompressed connection; a close frees a place', async (t) => {
  const budget = new CompressionBudget(1)
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: deflateOptions(true) })
  const http = createServer()
  http.on('upgrade', (req, socket, head) => {
    budget.admit(req)
    wss.handleUpgrade(req, socket, head, (ws) => {
      budget.opened(ws)
      ws.on('close', () => budget.closed(ws))
    })
  })
  http.listen(0, '127.0.0.1')
  await once(http, 'listening')
  const url = `ws://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (http.address()).port}`
  /** @type {WebSocket[]} */
  const clients = []
  t.after(async () => {
    for (const c of clients) c.terminate()
    await new Promise((resolve) => http.close(resolve))
  })
  const open = async () => {
    const c = new WebSocket(url, { perMessageDeflate: true })
    clients.push(c)
    await once(c, 'open')
    return c
  }
  const first = await open()
  const second = await open()
  assert.equal(first.extensions, 'permessage-deflate')
  assert.equal(second.extensions, '', 'over the cap: uncompressed')
  assert.equal(budget.open, 1)
  second.close()
  await waitFor(() => clients.length === 2 && second.readyState === WebSocket.CLOSED, { message: 'the uncompressed one closed' })
  assert.equal(budget.open, 1, 'an uncompressed connection held no place')
  first.close()
  await waitFor(() => budget.open === 0, { message: 'the place freed' })
  assert.equal((await open()).extensions, 'permessage-deflate')
})
