// The http provider against a real local HTTP server playing the upstream.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import { test } from 'node:test'
import pino from 'pino'
import client from 'prom-client'
import { BreakerOpenError } from '../src/errors.js'
import { createHttpProvider } from '../src/providers/http.js'

/**
 * @param {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, n: number) => void} handler
 */
async function upstream (handler) {
  let n = 0
  let inflight = 0
  let maxInflight = 0
  const server = createServer((req, res) => {
    inflight++
    maxInflight = Math.max(maxInflight, inflight)
    res.on('close', () => inflight--)
    handler(req, res, ++n)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  return {
    url: `http://127.0.0.1:${port}/quotes?symbols={symbols}`,
    requests: () => n,
    maxInflight: () => maxInflight,
    close: () => { server.closeAllConnections(); server.close() }
  }
}

function provider (url, options = {}) {
  const registry = new client.Registry()
  const metrics = {
    requests: new client.Counter({ name: 'r', help: 'r', labelNames: ['result'], registers: [registry] }),
    breaker: new client.Gauge({ name: 'b', help: 'b', registers: [registry] })
  }
  const p = createHttpProvider({
    url, timeoutMs: 200, retries: 2, backoffMs: 10, breakerThreshold: 3, breakerCooldownMs: 60000, maxInflight: 2,
    logger: pino({ level: 'silent' }), metrics, ...options
  })
  return { p, metrics }
}

const json = (/** @type {import('node:http').ServerResponse} */ res, /** @type {unknown} */ body, status = 200) => {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

test('maps upstream records, many symbols per request, ignoring ones not asked for', async (t) => {
  let seen = ''
  const up = await upstream((req, res) => {
    seen = decodeURIComponent(new URL(/** @type {string} */ (req.url), 'http://x').searchParams.get('symbols') ?? '')
    json(res, { quotes: [{ symbol: 'aapl', bid: '1.5', ask: 1.6, last: 1.55, junk: 'x' }, { symbol: 'MSFT', bid: 2, ask: 2.1 }, { symbol: 'ZZZ', bid: 1 }, { nope: 1 }] })
  })
  t.after(up.close)
  const { p } = provider(up.url)
  const quotes = await p.fetch(['AAPL', 'MSFT'], new Map(), Date.now() + 5000)
  assert.equal(seen, 'AAPL,MSFT')
  assert.deepEqual(quotes.map((q) => ({ ...q, ts: 0 })), [
    { symbol: 'AAPL', ts: 0, bid: 1.5, ask: 1.6, last: 1.55 },
    { symbol: 'MSFT', ts: 0, bid: 2, ask: 2.1 }
  ])
})

test('retries 5xx with backoff, then succeeds', async (t) => {
  const up = await upstream((_req, res, n) => (n < 3 ? json(res, { error: 'busy' }, 503) : json(res, [{ symbol: 'AAPL', bid: 1 }])))
  t.after(up.close)
  const { p } = provider(up.url)
  const quotes = await p.fetch(['AAPL'], new Map(), Date.now() + 5000)
  assert.equal(quotes.length, 1)
  assert.equal(up.requests(), 3)
})

test('a timeout fails the job without waiting past its deadline', async (t) => {
  const up = await upstream(() => {}) // never answers
  t.after(up.close)
  const { p } = provider(up.url, { retries: 5 })
  const started = Date.now()
  await assert.rejects(p.fetch(['AAPL'], new Map(), Date.now() + 500), (/** @type {any} */ err) => err.code === 'timeout')
  assert.ok(up.requests() <= 3, `gave up within the deadline budget (${up.requests()} requests, ${Date.now() - started} ms)`)
})

test('the breaker opens after consecutive failures and then spares the upstream', async (t) => {
  const up = await upstream((_req, res) => json(res, {}, 500))
  t.after(up.close)
  const { p } = provider(up.url, { retries: 0 })
  for (let i = 0; i < 3; i++) await assert.rejects(p.fetch(['AAPL'], new Map(), Date.now() + 5000))
  const before = up.requests()
  await assert.rejects(p.fetch(['AAPL'], new Map(), Date.now() + 5000), BreakerOpenError)
  assert.equal(up.requests(), before, 'no request while the breaker is open')
})

test('no pile-up: at most maxInflight requests reach a slow upstream', async (t) => {
  const up = await upstream((_req, res) => setTimeout(() => json(res, [{ symbol: 'AAPL', bid: 1 }]), 100))
  t.after(up.close)
  const { p } = provider(up.url, { maxInflight: 2, timeoutMs: 2000 })
  await Promise.all(Array.from({ length: 8 }, () => p.fetch(['AAPL'], new Map(), Date.now() + 10000)))
  assert.equal(up.requests(), 8)
  assert.equal(up.maxInflight(), 2)
})

test('invalid JSON and wrong shapes are coded errors', async (t) => {
  const up = await upstream((_req, res, n) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(n % 2 ? 'not json' : '{"data":1}')
  })
  t.after(up.close)
  const { p } = provider(up.url, { retries: 0, breakerThreshold: 100 })
  await assert.rejects(p.fetch(['AAPL'], new Map(), Date.now() + 5000), (/** @type {any} */ e) => e.code === 'bad_json')
  await assert.rejects(p.fetch(['AAPL'], new Map(), Date.now() + 5000), (/** @type {any} */ e) => e.code === 'bad_shape')
})
