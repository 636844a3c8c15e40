#!/usr/bin/env node
// Centrifugo's feed in the bench: what a Centrifugo user's backend does with
// quotes it gets from elsewhere. It subscribes to every quote channel of its
// key prefix on the shared Redis publisher (one PSUBSCRIBE) and relays each
// quote, unchanged, as the data of a publication to the channel named by the
// symbol, through Centrifugo's HTTP server API: one /api/batch request per
// event-loop turn (the API's own way to publish many at once), at most 4 in
// flight. It runs beside the publisher, not on the server's core: Centrifugo's
// share of the work (the API, its Redis engine, the fan-out) is what the
// bench counts as the server.
//
//   centrifugo-bridge.js --redis=URL --prefix=P --api=http://127.0.0.1:PORT/api --key=KEY
// Prints {"type":"ready"} once subscribed.

import { Agent, request } from 'node:http'
import { Redis } from 'ioredis'
import { serverOptions } from './options.js'

const { args, redisUrl, prefix } = serverOptions(0, ['api', 'key'])
if (!args.api || !args.key) throw new Error('--api and --key are required')
const batchUrl = new URL(`${args.api}/batch`)
const key = args.key

const quotes = new Redis(redisUrl)
const agent = new Agent({ keepAlive: true, maxSockets: 4 })
/** Publish commands of this turn, as JSON text (the quote is already JSON: no parse, no re-encode). */
/** @type {string[]} */
let commands = []
let scheduled = false
let inFlight = 0
let failures = 0

// Channels are `${prefix}:{SYMBOL}:q`.
quotes.on('pmessage', (_pattern, channel, message) => {
  commands.push(`{"publish":{"channel":"${channel.slice(prefix.length + 2, -3)}","data":${message}}}`)
  if (!scheduled) {
    scheduled = true
    setImmediate(flush)
  }
})

function flush () {
  scheduled = false
  if (commands.length === 0) return
  if (inFlight >= 4) {
    scheduled = true
    setTimeout(flush, 1)
    return
  }
  const body = `{"commands":[${commands.join(',')}]}`
  commands = []
  inFlight++
  const req = request(batchUrl, {
    method: 'POST',
    agent,
    headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'X-API-Key': key }
  }, (res) => {
    if (res.statusCode !== 200) report(`HTTP ${res.statusCode}`)
    res.resume()
    res.on('end', () => { inFlight-- })
  })
  req.on('error', (err) => {
    inFlight--
    report(err.message)
  })
  req.end(body)
}

/** @param {string} why the first few failures are printed; the rest only counted */
function report (why) {
  if (++failures <= 5) process.stderr.write(`centrifugo publish failed: ${why}\n`)
}

await quotes.psubscribe(`${prefix}:{*}:q`)
process.stdout.write(JSON.stringify({ type: 'ready' }) + '\n')
