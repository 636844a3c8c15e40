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

import { Redis } from 'ioredis'
import { batchPoster } from './batch-post.js'
import { serverOptions } from './options.js'

const { args, redisUrl, prefix } = serverOptions(0, ['api', 'key'])
if (!args.api || !args.key) throw new Error('--api and --key are required')
const batchUrl = new URL(`${args.api}/batch`)
const key = args.key

const quotes = new Redis(redisUrl)
let failures = 0
/** Publish commands, as JSON text (the quote is already JSON: no parse, no re-encode). */
const publish = batchPoster({
  url: batchUrl,
  headers: { 'X-API-Key': key },
  body: (/** @type {string[]} */ commands) => `{"commands":[${commands.join(',')}]}`,
  onFailure: report,
  statusOk: true
})

// Channels are `${prefix}:{SYMBOL}:q`.
quotes.on('pmessage', (_pattern, channel, message) => {
  publish(`{"publish":{"channel":"${channel.slice(prefix.length + 2, -3)}","data":${message}}}`)
})

/** @param {string} why the first few failures are printed; the rest only counted */
function report (why) {
  if (++failures <= 5) process.stderr.write(`centrifugo publish failed: ${why}\n`)
}

await quotes.psubscribe(`${prefix}:{*}:q`)
process.stdout.write(JSON.stringify({ type: 'ready' }) + '\n')
