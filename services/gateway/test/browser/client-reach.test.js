// WspsClient in Node against real gateways, for what reaches every client:
// the SSE transport (chosen, or fallen back to when the WebSocket upgrade
// fails), getToken() on every connection, token refresh before expiry on
// both transports, and a refresh that revokes a grant.

import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import WebSocket from 'ws'
import { ErrorCode } from '@wsps/protocol'
import { waitFor } from '@wsps/testkit'
import { WspsClient } from '@wsps/client'
import { reachToken, useReachStack } from './stack.js'

/** @type {WspsClient[]} */
const clients = []
// Registered before the stack's own hook, so the clients close before their gateways.
after(() => { for (const c of clients) c.close() })
const gw = useReachStack()

/** @param {ConstructorParameters<typeof WspsClient>[0]} options */
function client (options) {
  const c = new WspsClient({ WebSocket, initialBackoffMs: 100, ...options })
  clients.push(c)
  return c
}

/**
 * @param {Record<string, unknown>} claims
 * @param {number} seconds lifetime
 */
function token (claims, seconds) {
  return reachToken(claims, Math.floor(Date.now() / 1000) + seconds)
}

/**
 * Quote events of a symbol, counted.
 * @param {WspsClient} c
 */
function counter (c) {
  /** @type {Map<string, number>} */
  const n = new Map()
  c.on('quote', (e) => n.set(e.symbol, (n.get(e.symbol) ?? 0) + 1))
  return (/** @type {string} */ s) => n.get(s) ?? 0
}

test('transport "sse": streams over GET /sse; subscribe and unsubscribe reopen the stream with the new set', async () => {
  const c = client({ url: gw.open.wsUrl, transport: 'sse', symbols: ['AAPL'] })
  const count = counter(c)
  c.connect()
  await waitFor(() => count('AAPL') >= 3, { message: 'AAPL over SSE' })
  assert.equal(c.status.transport, 'sse')
  assert.equal(c.status.state, 'live')
  assert.deepEqual(await c.subscribe(['MSFT', 'NVDA']), { ok: true })
  await waitFor(() => count('MSFT') >= 2 && count('NVDA') >= 2, { message: 'the added symbols' })
  c.unsubscribe(['AAPL'])
  const refused = await c.subscribe(['bad'])
  assert.equal(refused.ok, false)
  assert.equal(!refused.ok && refused.error.code, ErrorCode.BAD_SYMBOL)
  assert.deepEqual(c.symbols, ['MSFT', 'NVDA'], 'the refused symbol left the watch set, the rest stayed')
  await waitFor(() => c.status.state === 'live', { message: 'live again after the refusal' })
  const at = count('MSFT')
  await waitFor(() => count('MSFT') >= at + 2, { message: 'MSFT keeps coming' })
  const m = await gw.open.metrics()
  assert.ok(m['wsps_gateway_sse_requests_total{result="accepted"}'] >= 3, 'each change was a new stream')
  c.close()
})

test('sse: symbols over the gateway\'s maxSubscriptions are refused with TOO_MANY_SUBSCRIPTIONS, as over WebSocket', { timeout: 60_000 }, async () => {
  const c = client({ url: gw.small.wsUrl, transport: 'sse', symbols: ['AAPL', 'MSFT'] })
  const count = counter(c)
  /** @type {{symbols: string[], error: {code: string}}[]} */
  const rejected = []
  c.on('rejected', (e) => rejected.push(e))
  c.connect()
  await waitFor(() => count('AAPL') >= 1 && count('MSFT') >= 1, { message: 'the first two symbols over SSE' })
  const refused = await c.subscribe(['NVDA'])
  assert.equal(!refused.ok && refused.error.code, ErrorCode.TOO_MANY_SUBSCRIPTIONS)
  assert.deepEqual(rejected.map((r) => [r.symbols, r.error.code]), [[['NVDA'], ErrorCode.TOO_MANY_SUBSCRIPTIONS]])
  assert.deepEqual(c.symbols, ['AAPL', 'MSFT'], 'the refused symbol left the watch set')
  const at = count('MSFT')
  await waitFor(() => c.status.state === 'live' && count('MSFT') >= at + 1, { message: 'the kept symbols keep coming' })
  assert.equal(count('NVDA'), 0)
  c.close()
})

test('auto: a WebSocket upgrade that fails falls back to SSE by itself', async () => {
  let attempts = 0
  // What a proxy that strips upgrades looks like from the client: the socket closes without opening.
  class StrippedWebSocket {
    readyState = 0
    /** @type {any} */ onopen = null
    /** @type {any} */ onmessage = null
    /** @type {any} */ onclose = null
    /** @type {any} */ onerror = null
    constructor () {
      attempts++
      setTimeout(() => this.onclose?.({ code: 1006, reason: '' }), 5)
    }

    send () {}
    close () {}
  }
  const c = client({ url: gw.open.wsUrl, WebSocket: StrippedWebSocket, symbols: ['AAPL'] })
  const count = counter(c)
  c.connect()
  await waitFor(() => count('AAPL') >= 2, { message: 'quotes after the fallback' })
  assert.equal(attempts, 1, 'one failed upgrade, then SSE')
  assert.equal(c.status.transport, 'sse')
})

for (const transport of /** @type {const} */ (['websocket', 'sse'])) {
  test(`${transport}: getToken() authenticates, and a refresh before expiry keeps the client live past the first token's exp`, async () => {
    let minted = 0
    const c = client({
      url: gw.authed.wsUrl,
      transport,
      symbols: ['AAPL'],
      getToken: async () => {
        minted++
        return token({ sub: 'ref', symbols: ['AAPL'] }, 4)
      }
    })
    const count = counter(c)
    /** @type {string[]} */
    const states = []
    c.on('status', (s) => states.push(s.state))
    c.connect()
    await waitFor(() => count('AAPL') >= 2, { message: 'live with the first token' })
    assert.equal(typeof c.hello?.expiresInMs, 'number')
    const firstExp = Date.now() + /** @type {number} */ (c.hello?.expiresInMs)
    await waitFor(() => Date.now() > firstExp + 1500, { timeout: 15_000, interval: 200, message: 'past the first exp' })
    const seen = count('AAPL')
    await waitFor(() => count('AAPL') >= seen + 2, { message: 'quotes after the first exp' })
    assert.ok(minted >= 2, `refreshed (${minted} tokens)`)
    assert.equal(c.status.state, 'live')
    assert.deepEqual(states.filter((s) => s !== 'live' && s !== 'connecting'), [], 'never dropped to reconnecting')
    assert.equal(c.status.closeCode, null, 'no close on the way')
    c.close()
  })
}

test('a refresh that no longer grants a symbol: GRANT_REVOKED drops it from the watch set', async () => {
  let grants = ['AAPL', 'MSFT']
  const c = client({ url: gw.authed.wsUrl, symbols: ['AAPL', 'MSFT'], getToken: () => token({ sub: 'rev', symbols: grants }, 3) })
  /** @type {{symbols: string[], error: {code: string}}[]} */
  const rejected = []
  c.on('rejected', (r) => rejected.push(r))
  const count = counter(c)
  c.connect()
  await waitFor(() => count('MSFT') >= 1 && count('AAPL') >= 1, { message: 'both' })
  grants = ['AAPL']
  await waitFor(() => rejected.length > 0, { timeout: 10_000, message: 'the revocation' })
  assert.deepEqual(rejected[0].symbols, ['MSFT'])
  assert.equal(rejected[0].error.code, ErrorCode.GRANT_REVOKED)
  assert.deepEqual(c.symbols, ['AAPL'])
  assert.equal(c.status.state, 'live')
  c.close()
})

test('without a token source an expired session goes offline with 4002; with one, a refused token is retried', async () => {
  const jwt = await token({ sub: 'once' }, 2)
  const once = client({ url: gw.authed.wsUrl, getToken: undefined, WebSocket: class extends WebSocket {
    /** @param {string} url */
    constructor (url) { super(url, { headers: { authorization: `Bearer ${jwt}` } }) }
  } })
  once.connect()
  await waitFor(() => once.status.state === 'offline', { timeout: 10_000, message: 'offline after exp' })
  assert.equal(once.status.closeCode, 4002)

  let calls = 0
  const retrying = client({ url: gw.authed.wsUrl, getToken: async () => (++calls === 1 ? 'not.a.jwt' : token({ sub: 'ok' }, 60)) })
  retrying.connect()
  await waitFor(() => retrying.status.state === 'live', { message: 'live with the second token' })
  assert.equal(calls, 2)
})
