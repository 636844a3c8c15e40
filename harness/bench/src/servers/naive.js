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

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')))
const port = Number(args.port ?? 8090)
const redisUrl = args.redis ?? 'redis://127.0.0.1:6379'
const prefix = args.prefix ?? 'wsps'

const sub = new Redis(redisUrl)
const cmd = new Redis(redisUrl)
/** @type {Map<string, Set<import('ws').WebSocket>>} */
const bySymbol = new Map()
const channelOf = (/** @type {string} */ s) => `${prefix}:{${s}}:q`

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
    if (fresh.length) await sub.subscribe(...fresh.map(channelOf))
    ws.send(JSON.stringify({ op: 'ack', id: msg.id, symbols: [...mine] }))
    const lasts = await cmd.mget(...msg.symbols.map((/** @type {string} */ s) => `${prefix}:{${s}}:last`))
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

wss.on('listening', () => process.stdout.write(JSON.stringify({ type: 'listening', port }) + '\n'))
process.on('SIGTERM', () => process.exit(0))
