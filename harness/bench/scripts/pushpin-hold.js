#!/usr/bin/env node
// Why Pushpin passes no fan-out step: clients each on a symbol of their own,
// quotes sent along the bench's own path (Redis PUBLISH -> the GRIP bridge ->
// Pushpin's HTTP publish API -> each client's WebSocket-over-HTTP session)
// at a fixed spacing, the symbols in turn. For each spacing it prints one
// JSON line: how many quotes the clients had while publishing went on, and
// how late they were. With --clients=N each client gets one quote in N, so
// a hold that comes with the total rate is told from one per connection.
//
// Usage: node harness/bench/scripts/pushpin-hold.js [--spacings=50,20,15,10] [--count=100] [--clients=1]
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

const { values } = parseArgs({ options: { spacings: { type: 'string', default: '50,20,15,10' }, count: { type: 'string', default: '100' }, clients: { type: 'string', default: '1' } } })
const spacings = values.spacings.split(',').map(Number)
const count = Number(values.count)
const clients = Number(values.clients)
if (!spacings.every((s) => s > 0) || !(count > 0) || !(Number.isInteger(clients) && clients > 0)) {
  throw new Error('--spacings: positive ms, comma-separated; --count: a positive number; --clients: a positive integer')
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
    await pub.publish(redisKeys(prefix).channel(symbol), `{"seq":${seq},"symbol":"${symbol}","ts":${Date.now()}}`)
    await sleep(spacingMs)
  }
  const lastPublish = Date.now()
  await sleep(2000)
  for (const ws of sockets) ws.close()
  const late = got.map((g) => g.lateMs).sort((a, b) => a - b)
  return {
    spacingMs,
    clients: symbols.length,
    published: count,
    received: got.length,
    whilePublishing: got.filter((g) => g.at <= lastPublish).length,
    lateMs: { p50: late[Math.floor(late.length / 2)] ?? null, max: late.at(-1) ?? null }
  }
}
