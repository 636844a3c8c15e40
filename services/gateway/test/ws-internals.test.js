// The `ws` private fields WsTransport.write()'s fast path reads
// (ws-transport.js, WsInternals): if a `ws` upgrade renames or changes any of
// them, these tests fail by name, before a shared frame could overtake what
// `ws` queued or be written to a socket that is not there. `ws` is pinned to
// an exact version for it (services/gateway/package.json); an upgrade means
// reading lib/websocket.js and lib/sender.js again, then moving the pin.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Socket } from 'node:net'
import { test } from 'node:test'
import { WebSocket, WebSocketServer } from 'ws'

const require = createRequire(import.meta.url)
const pinned = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).dependencies.ws
const installed = require('ws/package.json').version

/** A server socket (what WsTransport wraps) with a client connected to it. */
async function serverSocket () {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
  await once(wss, 'listening')
  const port = /** @type {import('node:net').AddressInfo} */ (wss.address()).port
  const accepted = once(wss, 'connection')
  const client = new WebSocket(`ws://127.0.0.1:${port}`)
  await once(client, 'open')
  const [server] = /** @type {[WebSocket]} */ (await accepted)
  const close = async () => {
    client.terminate()
    server.terminate()
    await new Promise((resolve) => wss.close(resolve))
  }
  return { server: /** @type {any} */ (server), close }
}

test('ws is pinned to an exact version, the one installed', () => {
  assert.match(pinned, /^\d+\.\d+\.\d+$/, `services/gateway/package.json must pin ws exactly (is "${pinned}"): ws-transport.js reads its private fields`)
  assert.equal(installed, pinned, `ws ${installed} is installed but ${pinned} is pinned: check the fields ws-transport.js reads, then move the pin`)
})

test('an open ws socket has the private fields the fast path reads, idle as the fast path expects', async (t) => {
  const { server, close } = await serverSocket()
  t.after(close)
  assert.ok(server._socket instanceof Socket, 'ws._socket: the net.Socket the fast path writes to')
  assert.equal(typeof server._extensions, 'object', 'ws._extensions: negotiated extensions by name')
  assert.equal(server._extensions['permessage-deflate'], undefined, 'no compression negotiated: the fast path applies')
  const sender = server._sender
  assert.ok(sender, 'ws._sender')
  assert.equal(sender._state, 0, 'sender._state: 0 (DEFAULT) while it sends at once')
  assert.ok(Array.isArray(sender._queue) && sender._queue.length === 0, 'sender._queue: an empty array while idle')
  assert.equal(sender._firstFragment, true, 'sender._firstFragment: true between messages')
})

test('a send ws must queue (a Blob read) shows in the fields the fast path checks', async (t) => {
  const { server, close } = await serverSocket()
  t.after(close)
  const sender = server._sender
  server.send(new Blob(['{"op":"first"}']))
  assert.notEqual(sender._state, 0, 'sender._state leaves DEFAULT while a Blob is read')
  server.send('{"op":"second"}')
  assert.ok(sender._queue.length > 0, 'sender._queue holds the sends waiting behind it')
  server.send('x', { fin: false })
  assert.equal(sender._firstFragment, false, 'sender._firstFragment is false while a fragmented message is open')
})
