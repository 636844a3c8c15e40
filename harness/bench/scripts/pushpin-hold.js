#!/usr/bin/env node
// Why Pushpin passed no fan-out step before its bridge batched: clients
// each on a symbol of their own, quotes published at a fixed spacing, the
// symbols in turn. For each spacing it prints one JSON line: how many
// quotes the clients had while publishing went on, and how late they were.
//
// --via=direct (default): one request to Pushpin's HTTP publish API per
//   quote. Pushpin 1.36 holds them while requests come faster than about
//   every 20-25 ms or faster and hands them out when they pause.
// --via=bridge: the bench's own path (Redis PUBLISH -> the GRIP bridge,
//   one request per 35 ms with every quote since -> Pushpin), as measured.
// With --clients=N each client gets one quote in N, so a hold that comes
// with the total rate is told from one per connection.
//
// Usage: node harness/bench/scripts/pushpin-hold.js [--via=direct|bridge] [--spacings=50,20,15,10] [--count=100] [--clients=1]
// Needs pushpin and redis-server on PATH (make bench-deps).

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import WebSocket from 'ws'
import { startRedis } from '@wsps/testkit'
import { redisKeys } from '@wsps/shared/keys'
import { SERVERS } from '../src/servers.js'

const { values } = parseArgs({ options: { spacings: { type: 'string', default: '50,20,15,10' }, count: { type: 'string', default: '100' }, clients: { type: 'string', default: '1' }, via: { type: 'string', default: 'direct' } } })
const spacings = values.spacings.split(',').map(Number)
const count = Number(values.count)
const clients = Number(values.clients)
const via = values.via
if (!spacings.every((s) => s > 0) || !(count > 0) || !(Number.isInteger(clients) && clients > 0) || !['direct', 'bridge'].includes(via)) {
  throw new Error('--spacings: positive ms, comma-separated; --count: a positive number; --clients: a positive integer; --via: direct or bridge')
}

const prefix = 'bhold'
const redis = await startRedis()
const runDir = mkdtempSync(join(tmpdir(), 'wsps-pushpin-hold-'))
const srv = await SERVERS.pushpin.start({ redisUrl: redis.url, core: null, runDir, prefix })
const pub = new Redis(redis.url)
try {
  for (const [i, spacingMs] of spacings.entries()) {
    const symbols = Array.from({ length: clients }, (_, c) => `S${String(i * clients + c).padStart(4, '0')}`)
    console.log(JSON.stringify(await round(symbols, spacingMs)))
  }
} finally {
  pub.disconnect()
  await srv.stop()
  await redis.stop()
  rmSync(runDir, { recursive: true, force: true })
}

/**
 * One client per symbol; `count` quotes published spacingMs apart, the
 * symbols in turn.
 *
 * @param {string[]} symbols
 * @param {number} spacingMs
 */
async function round (symbols, spacingMs) {
  /** @type {{at: number, lateMs: number}[]} */
  const got = []
  const sockets = await Promise.all(symbols.map(async (symbol) => {
    const ws = new WebSocket(`${srv.url}/ws`)
    ws.on('message', (d) => {
      const m = JSON.parse(String(d))
      if (typeof m.seq === 'number') got.push({ at: Date.now(), lateMs: Date.now() - m.ts })
    })
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
    ws.send(JSON.stringify({ op: 'sub', symbols: [symbol], id: 1 }))
    return ws
  }))
  await sleep(1000)
  for (let n = 0; n < count; n++) {
    const symbol = symbols[n % symbols.length]
    const seq = Math.floor(n / symbols.length) + 1
    const quote = `{"seq":${seq},"symbol":"${symbol}","ts":${Date.now()}}`
    if (via === 'bridge') await pub.publish(redisKeys(prefix).channel(symbol), quote)
    else await publishDirect(symbol, quote)
    await sleep(spacingMs)
  }
  const lastPublish = Date.now()
  await sleep(2000)
  for (const ws of sockets) ws.close()
  const late = got.map((g) => g.lateMs).sort((a, b) => a - b)
  return {
    via,
    spacingMs,
    clients: symbols.length,
    published: count,
    received: got.length,
    whilePublishing: got.filter((g) => g.at <= lastPublish).length,
    lateMs: { p50: late[Math.floor(late.length / 2)] ?? null, max: late.at(-1) ?? null }
  }
}

/**
 * One request to Pushpin's publish API for one quote, answered before the next.
 *
 * @param {string} channel
 * @param {string} content
 */
async function publishDirect (channel, content) {
  if (!srv.publishUrl) throw new Error('the pushpin server handle has no publishUrl')
  const res = await fetch(srv.publishUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ items: [{ channel, formats: { 'ws-message': { content } } }] })
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`Pushpin's publish API answered ${res.status}: ${text}`)
}
