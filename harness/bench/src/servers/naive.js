#!/usr/bin/env node
// The naive baseline, written for the bench only: how the classic blog
// servers did it. One Redis subscription per watched symbol; every published
// quote is parsed once and then, for each subscriber, JSON.stringify'd and
// ws.send'd on its own: no batching, no shared frame, no backpressure, no
// heartbeat. It speaks the wsps frames (sub/ack/snap/q) so the same load
// generator reads it. (Kinder than the classic `wss.clients.forEach` loop:
// subscribers are found through a symbol -> sockets map, not a scan.)

import { WebSocketServer } from 'ws'
import { Redis } from 'ioredis'
import { announce, serverOptions } from './options.js'

const { port, redisUrl, prefix, keys } = serverOptions(8090)

const sub = new Redis(redisUrl)
const cmd = new Redis(redisUrl)
/** @type {Map<string, Set<import('ws').WebSocket>>} */
const bySymbol = new Map()

const wss = new WebSocketServer({ host: '127.0.0.1', port, path: '/ws', perMessageDeflate: false, clientTracking: false })
wss.on('connection', (ws) => {
  /** @type {Set<string>} */
  const mine = new Set()
  ws.on('message', async (data) => {
    let msg
    try { msg = JSON.parse(String(data)) } catch { return }
    if (msg.op !== 'sub' || !Array.isArray(msg.symbols)) return
    const fresh = []
    for (const s of msg.symbols) {
      mine.add(s)
      let set = bySymbol.get(s)
      if (!set) {
        bySymbol.set(s, set = new Set())
        fresh.push(s)
      }
      set.add(ws)
    }
    if (fresh.length) await sub.subscribe(...fresh.map(keys.channel))
    ws.send(JSON.stringify({ op: 'ack', id: msg.id, symbols: [...mine] }))
    const lasts = await cmd.mget(...msg.symbols.map(keys.latest))
    const quotes = lasts.filter((x) => x !== null).map((x) => JSON.parse(/** @type {string} */ (x)))
    if (quotes.length) ws.send(JSON.stringify({ op: 'snap', quotes }))
  })
  ws.on('error', () => {})
  ws.on('close', () => {
    for (const s of mine) bySymbol.get(s)?.delete(ws)
  })
})

sub.on('message', (channel, message) => {
  const symbol = channel.slice(prefix.length + 2, -3)
  const set = bySymbol.get(symbol)
  if (!set) return
  const quote = JSON.parse(message)
  for (const ws of set) {
    if (ws.readyState === 1) ws.send(JSON.stringify({ op: 'q', quotes: [quote] }))
  }
})

wss.on('listening', () => announce(port))
