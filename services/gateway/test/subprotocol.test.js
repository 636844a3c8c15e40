// Negotiating the encoding on the upgrade (Sec-WebSocket-Protocol, ws-server.js
// chooseSubprotocol) and writing frames in it (ws-transport.js): a socket of
// `wsps.v1.proto` gets binary messages that decode to the JSON frame, on
// the one-write path and through ws (compression). Real sockets.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { test } from 'node:test'
import { WebSocket, WebSocketServer } from 'ws'
import { ServerOp, Subprotocol } from '@wsps/protocol'
import { decodeServerFrame } from '@wsps/protocol/proto-codec'
import { waitFor } from '@wsps/testkit'
import { TextFrame } from '../src/text-frame.js'
import { WsTransport } from '../src/ws-transport.js'
import { chooseSubprotocol } from '../src/ws-server.js'

/**
 * A server socket wrapped in a WsTransport, one client connected asking
 * for `protocols`.
 *
 * @param {string[]} protocols
 * @param {{deflate?: boolean}} [o]
 */
async function pair (protocols, { deflate = false } = {}) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: chooseSubprotocol, perMessageDeflate: deflate ? { threshold: 0 } : false })
  await once(wss, 'listening')
  const port = /** @type {import('node:net').AddressInfo} */ (wss.address()).port
  const accepted = once(wss, 'connection')
  const client = new WebSocket(`ws://127.0.0.1:${port}`, protocols, { perMessageDeflate: deflate })
  /** @type {{data: Buffer, binary: boolean}[]} */
  const got = []
  client.on('message', (data, binary) => got.push({ data: /** @type {Buffer} */ (data), binary }))
  await once(client, 'open')
  const [ws] = /** @type {[WebSocket]} */ (await accepted)
  const server = new WsTransport(ws, {})
  const close = async () => {
    client.terminate()
    for (const s of wss.clients) s.terminate()
    await new Promise((resolve) => wss.close(resolve))
  }
  return { server, client, got, close }
}

test('the first subprotocol of the client\'s list the gateway speaks wins; none asked is JSON', async () => {
  assert.equal(chooseSubprotocol(new Set([Subprotocol.PROTO, Subprotocol.JSON])), Subprotocol.PROTO)
  assert.equal(chooseSubprotocol(new Set([Subprotocol.JSON, Subprotocol.PROTO])), Subprotocol.JSON)
  assert.equal(chooseSubprotocol(new Set(['graphql-ws', Subprotocol.PROTO])), Subprotocol.PROTO)
  // Neither named: no subprotocol in the answer, the connection speaks JSON.
  assert.equal(chooseSubprotocol(new Set(['graphql-ws', 'wsps.v2.proto'])), false)
  for (const [asked, binary] of /** @type {const} */ ([[[], false], [[Subprotocol.JSON], false], [[Subprotocol.PROTO, Subprotocol.JSON], true]])) {
    const { server, client, close } = await pair([...asked])
    assert.equal(client.protocol, asked[0] ?? '')
    assert.equal(server.binary, binary, asked.join(','))
    await close()
  }
})

test('a wsps.v1.proto socket gets every frame as a binary message of its Protobuf', async (t) => {
  const { server, got, close } = await pair([Subprotocol.PROTO])
  t.after(close)
  const shared = new TextFrame('{"op":"q","quotes":[{"symbol":"AAPL","seq":2,"ts":1,"bid":1.5}]}')
  server.write(shared, ServerOp.QUOTES)
  server.write('{"op":"pong","id":3}', ServerOp.PONG)
  await waitFor(() => got.length === 2, { timeout: 20_000, message: 'two messages' })
  assert.ok(got.every((m) => m.binary))
  assert.deepStrictEqual(got.map((m) => decodeServerFrame(m.data)), [
    { op: 'q', quotes: [{ symbol: 'AAPL', seq: 2, ts: 1, bid: 1.5 }] },
    { op: 'pong', id: 3 }
  ])
  assert.equal(shared.binaryTwin, shared.binaryTwin, 'the twin is made once')
})

test('with permessage-deflate, ws frames the binary payload (still a binary message)', async (t) => {
  const { server, client, got, close } = await pair([Subprotocol.PROTO], { deflate: true })
  t.after(close)
  assert.equal(client.extensions, 'permessage-deflate')
  server.write(new TextFrame('{"op":"stale","symbols":["AAPL"],"since":1763800000123}'), ServerOp.STALE)
  await waitFor(() => got.length === 1, { timeout: 20_000, message: 'the message' })
  assert.equal(got[0].binary, true)
  assert.deepStrictEqual(decodeServerFrame(got[0].data), { op: 'stale', symbols: ['AAPL'], since: 1763800000123 })
})

test('a JSON socket still gets text', async (t) => {
  const { server, got, close } = await pair([Subprotocol.JSON])
  t.after(close)
  server.write(new TextFrame('{"op":"fresh","symbols":["AAPL"]}'), ServerOp.FRESH)
  await waitFor(() => got.length === 1, { timeout: 20_000, message: 'the message' })
  assert.deepEqual([got[0].binary, String(got[0].data)], [false, '{"op":"fresh","symbols":["AAPL"]}'])
})
