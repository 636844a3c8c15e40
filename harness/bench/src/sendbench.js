#!/usr/bin/env node
// Micro-benchmark behind analysis.md proposal 4: one core writing small
// text frames to N loopback WebSocket clients, interleaved:
//   ws.send(buffer)            a shared payload framed by ws per client (header + payload: cork, 2 writes, writev)
//   socket.write(preframed)    the gateway's shared frames: built once per update (TextFrame), one write per client
//   ws.send(string)            a per-client frame (several updates) framed by ws
//   socket.write(frame(string)) the same string framed into one Buffer per client, one write
//   ws.send(JSON.stringify())  the naive baseline's per-client serialization
// The clients are raw sockets in a child process that only drain.
//
//   node harness/bench/src/sendbench.js [clients=1000] [rounds=5] [ms per round=1500]

import { fork } from 'node:child_process'
import { createConnection } from 'node:net'
import * as wsModule from 'ws'
import { TextFrame } from '@wsps/gateway/text-frame'

if (process.argv[2] === 'drain') {
  // Child: open N raw WebSocket connections, discard whatever arrives.
  const [port, n] = [Number(process.argv[3]), Number(process.argv[4])]
  let open = 0
  for (let i = 0; i < n; i++) {
    const s = createConnection({ port, host: '127.0.0.1' }, () => {
      s.write(`GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`)
    })
    s.once('data', () => { if (++open === n) process.send?.('ready') })
    s.on('data', () => {})
    s.on('error', () => {})
  }
  process.on('disconnect', () => process.exit(0))
} else {
  const n = Number(process.argv[2] ?? 1000)
  const rounds = Number(process.argv[3] ?? 5)
  const ms = Number(process.argv[4] ?? 1500)
  const wss = new wsModule.WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, clientTracking: true })
  await new Promise((resolve) => wss.on('listening', resolve))
  const port = /** @type {import('node:net').AddressInfo} */ (wss.address()).port
  const child = fork(new URL(import.meta.url).pathname, ['drain', String(port), String(n)])
  await new Promise((resolve) => child.once('message', resolve))
  const clients = [...wss.clients]
  const quote = { symbol: 'S0001', seq: 1, ts: Date.now(), bid: 189.41, ask: 189.45, last: 189.43, volume: 1832200 }
  const text = `{"op":"q","quotes":[${JSON.stringify(quote)}]}`
  const shared = new TextFrame(text)
  const several = `{"op":"q","quotes":[${[1, 2, 3].map((seq) => JSON.stringify({ ...quote, seq })).join(',')}]}`
  const ways = {
    'ws.send(buffer)': (/** @type {any} */ ws) => ws.send(shared.payload, { binary: false }),
    'socket.write(preframed)': (/** @type {any} */ ws) => ws._socket.write(shared.wire),
    'ws.send(string)': (/** @type {any} */ ws) => ws.send(several),
    'socket.write(frame(string))': (/** @type {any} */ ws) => ws._socket.write(new TextFrame(several).wire),
    'ws.send(JSON.stringify)': (/** @type {any} */ ws) => ws.send(JSON.stringify({ op: 'q', quotes: [quote] }))
  }
  /** @type {Record<string, number[]>} */
  const rates = Object.fromEntries(Object.keys(ways).map((k) => [k, []]))
  for (let r = 0; r < rounds; r++) {
    for (const [name, send] of Object.entries(ways)) {
      const cpu0 = process.cpuUsage()
      const t0 = performance.now()
      let writes = 0
      while (performance.now() - t0 < ms) {
        for (const ws of clients) {
          if (ws.bufferedAmount > 64 * 1024) continue
          send(ws)
          writes++
        }
        await new Promise((resolve) => setImmediate(resolve))
      }
      const cpu = process.cpuUsage(cpu0)
      rates[name].push(writes / ((cpu.user + cpu.system) / 1e6))
      await new Promise((resolve) => setTimeout(resolve, 300))
    }
  }
  for (const [name, xs] of Object.entries(rates)) {
    xs.sort((a, b) => a - b)
    console.log(`${name.padEnd(28)} ${Math.round(xs[Math.floor(xs.length / 2)]).toLocaleString('en-US').padStart(9)} writes per CPU-second (median of ${xs.length})`)
  }
  child.kill()
  wss.close()
  process.exit(0)
}
