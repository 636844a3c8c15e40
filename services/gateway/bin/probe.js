#!/usr/bin/env node
// wsps-probe: opens a WebSocket, subscribes to one symbol and exits 0 once a
// quote for it arrives (1 on timeout or error). Used by `helm test` and by
// operators checking a deployment end to end:
//   node services/gateway/bin/probe.js --url ws://wsps-gateway:8080/ws --symbol AAPL --timeout-ms 15000

import { parseArgs } from 'node:util'
import WebSocket from 'ws'
import { ClientOp, ServerOp } from '@wsps/protocol'

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'ws://127.0.0.1:8080/ws' },
    symbol: { type: 'string', default: 'AAPL' },
    'timeout-ms': { type: 'string', default: '15000' }
  }
})
const timeoutMs = Number(values['timeout-ms'])
const started = Date.now()

/** @param {number} code @param {Record<string, unknown>} result */
function finish (code, result) {
  process.stdout.write(JSON.stringify({ ok: code === 0, url: values.url, symbol: values.symbol, ms: Date.now() - started, ...result }) + '\n')
  process.exit(code)
}

const timer = setTimeout(() => finish(1, { error: `no quote within ${timeoutMs} ms` }), timeoutMs)
const ws = new WebSocket(values.url, { handshakeTimeout: timeoutMs })
let node = null
ws.on('error', (err) => finish(1, { error: err.message }))
ws.on('close', (code) => finish(1, { error: `closed with ${code} before a quote arrived` }))
ws.on('message', (data) => {
  const msg = JSON.parse(String(data))
  if (msg.op === ServerOp.HELLO) {
    node = msg.node
    ws.send(JSON.stringify({ op: ClientOp.SUB, symbols: [values.symbol], id: 1 }))
  } else if (msg.op === ServerOp.ERROR) {
    finish(1, { node, error: `${msg.code}: ${msg.message}` })
  } else if ((msg.op === ServerOp.SNAP || msg.op === ServerOp.QUOTES) && msg.quotes.some((/** @type {any} */ q) => q.symbol === values.symbol)) {
    clearTimeout(timer)
    const quote = msg.quotes.find((/** @type {any} */ q) => q.symbol === values.symbol)
    finish(0, { node, op: msg.op, seq: quote.seq, latencyMs: Date.now() - quote.ts })
  }
})
