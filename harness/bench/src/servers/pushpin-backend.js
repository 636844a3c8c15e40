#!/usr/bin/env node
// Pushpin's side of the bench: the GRIP origin and the publish bridge.
//
// Origin: Pushpin talks to it with WebSocket-over-HTTP. A client's
// {"op":"sub","symbols":[...]} is answered with one GRIP subscribe control
// message per symbol (channel = symbol), an ack and a snapshot.
// Bridge: it subscribes to the quote channels of the symbols clients hold
// on the shared Redis publisher and relays every quote, unchanged, to
// Pushpin's HTTP publish API, batched: at most one request per
// PUBLISH_EVERY_MS.

import { createServer } from 'node:http'
import { Redis } from 'ioredis'
import { batchPoster } from './batch-post.js'
import { announce, serverOptions } from './options.js'

const { args, port, redisUrl, prefix, keys } = serverOptions(8092, ['publish'])
const publishUrl = new URL(args.publish ?? 'http://127.0.0.1:5561/publish/')

const quotes = new Redis(redisUrl)
const cmd = new Redis(redisUrl)
/** @type {Set<string>} */
const subscribed = new Set()

/** @param {string} content */
const textEvent = (content) => `TEXT ${Buffer.byteLength(content).toString(16)}\r\n${content}\r\n`

/** @param {Buffer} body @returns {{type: string, content: string}[]} */
function decodeEvents (body) {
  const out = []
  let i = 0
  while (i < body.length) {
    const eol = body.indexOf('\r\n', i)
    if (eol < 0) break
    const line = body.toString('utf8', i, eol)
    const sp = line.indexOf(' ')
    const type = sp < 0 ? line : line.slice(0, sp)
    i = eol + 2
    let content = ''
    if (sp >= 0) {
      const len = parseInt(line.slice(sp + 1), 16)
      content = body.toString('utf8', i, i + len)
      i += len + 2
    }
    out.push({ type, content })
  }
  return out
}

/** @param {string} content */
async function onText (content) {
  let msg
  try { msg = JSON.parse(content) } catch { return '' }
  if (msg.op !== 'sub' || !Array.isArray(msg.symbols)) return ''
  /** @type {string[]} */
  const symbols = msg.symbols
  let body = ''
  for (const s of symbols) body += textEvent(`c:${JSON.stringify({ type: 'subscribe', channel: s })}`)
  const fresh = symbols.filter((s) => !subscribed.has(s))
  for (const s of fresh) subscribed.add(s)
  if (fresh.length) await quotes.subscribe(...fresh.map(keys.channel))
  body += textEvent(JSON.stringify({ op: 'ack', id: msg.id, symbols }))
  const lasts = await cmd.mget(...symbols.map(keys.latest))
  const snap = lasts.filter((x) => x !== null)
  if (snap.length) body += textEvent(`{"op":"snap","quotes":[${snap.join(',')}]}`)
  return body
}

const server = createServer({ keepAlive: true }, (req, res) => {
  /** @type {Buffer[]} */
  const chunks = []
  req.on('data', (c) => chunks.push(c))
  req.on('end', async () => {
    const events = decodeEvents(Buffer.concat(chunks))
    let body = ''
    for (const ev of events) {
      if (ev.type === 'OPEN') body += 'OPEN\r\n'
      else if (ev.type === 'TEXT') body += await onText(ev.content)
      else if (ev.type === 'CLOSE') body += 'CLOSE\r\n'
    }
    res.writeHead(200, {
      'Content-Type': 'application/websocket-events',
      'Sec-WebSocket-Extensions': 'grip; message-prefix=""'
    })
    res.end(body)
  })
})
server.keepAliveTimeout = 60_000

// Bridge: Redis -> Pushpin publish API.
// Pushpin 1.36 (Debian) holds what it is given to publish while publish
// requests come every 20-25 ms or faster, and hands it all out
// when they pause: one request per quote at 100 quotes/s delivered nothing
// until the publisher stopped, whatever the number of clients
// (harness/bench/scripts/pushpin-hold.js). One request per 35 ms with
// every quote since keeps it delivering. It adds up to 35 ms to Pushpin's
// latency; measured with that script (50 clients, ~200 quotes/s), it was
// the best window: p50 21 ms against 41 ms at 25 ms (part still held),
// 31 ms at 50 ms and 44 ms at 75 ms.
const PUBLISH_EVERY_MS = 35
const publish = batchPoster({
  url: publishUrl,
  body: (/** @type {object[]} */ items) => JSON.stringify({ items }),
  everyMs: PUBLISH_EVERY_MS,
  onFailure: (why) => process.stderr.write(`publish failed: ${why}\n`)
})
quotes.on('message', (channel, message) => {
  publish({ channel: channel.slice(prefix.length + 2, -3), formats: { 'ws-message': { content: message } } })
})

server.listen(port, '127.0.0.1', () => announce(port))
