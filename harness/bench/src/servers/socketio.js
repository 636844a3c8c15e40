#!/usr/bin/env node
// Socket.IO 4 with @socket.io/redis-adapter: one room per symbol. Fed from
// the same Redis publisher through its own subscription to the quote
// channels of the rooms it holds; each quote is broadcast to the room on this
// node (`io.local`: with several nodes each one holds the same
// subscriptions, so a cluster-wide emit would deliver every quote twice). The
// adapter is the Redis one, so rooms and broadcasts go through what a
// multi-node Socket.IO deployment runs.

import { createServer } from 'node:http'
import { Server } from 'socket.io'
import { createAdapter } from '@socket.io/redis-adapter'
import { Redis } from 'ioredis'
import { announce, serverOptions } from './options.js'

const { port, redisUrl, prefix, keys } = serverOptions(8091)

const pubClient = new Redis(redisUrl)
const subClient = pubClient.duplicate()
const quotes = new Redis(redisUrl)
const cmd = new Redis(redisUrl)
/** @type {Set<string>} */
const subscribed = new Set()

const httpServer = createServer()
const io = new Server(httpServer, {
  transports: ['websocket'],
  perMessageDeflate: false,
  httpCompression: false,
  serveClient: false,
  adapter: createAdapter(pubClient, subClient)
})

io.on('connection', (socket) => {
  socket.on('sub', async (/** @type {string[]} */ symbols) => {
    if (!Array.isArray(symbols)) return
    socket.join(symbols)
    const fresh = symbols.filter((s) => !subscribed.has(s))
    for (const s of fresh) subscribed.add(s)
    if (fresh.length) await quotes.subscribe(...fresh.map(keys.channel))
    socket.emit('ack', { symbols })
    const lasts = await cmd.mget(...symbols.map(keys.latest))
    const snap = lasts.filter((x) => x !== null).map((x) => JSON.parse(/** @type {string} */ (x)))
    if (snap.length) socket.emit('snap', { quotes: snap })
  })
})

quotes.on('message', (channel, message) => {
  io.local.to(channel.slice(prefix.length + 2, -3)).emit('q', JSON.parse(message))
})

httpServer.listen(port, '127.0.0.1', () => announce(port))
