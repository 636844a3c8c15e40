// The auth lifecycle on real processes (docs/protocol.md, "Authentication"):
// the first frame `{"op":"auth"}` for clients that cannot set headers, the
// auth timeout, in-band refresh that replaces grants, and expiry without a
// refresh closing with its own code.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { SignJWT } from 'jose'
import { CloseCode, ErrorCode } from '@wsps/protocol'
import { TestClient, useStack, waitFor } from '../src/index.js'

const SECRET = 'hs256-secret-for-auth-lifecycle-0123456789'
const AUTH_TIMEOUT_MS = 1500

const stack = useStack()
/** @type {import('../src/index.js').ServiceHandle} */
let gw
/** @type {TestClient[]} */
const clients = []

before(async () => {
  ;[gw] = await Promise.all([
    stack.gateway({ WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET, WSPS_AUTH_TIMEOUT_MS: AUTH_TIMEOUT_MS }),
    stack.fetcher()
  ])
})
after(() => { for (const c of clients) c.ws.terminate() })

/**
 * @param {Record<string, unknown>} claims
 * @param {number | string} [exp] seconds since the epoch, or a jose duration
 */
function token (claims, exp = '1h') {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(exp).sign(new TextEncoder().encode(SECRET))
}

/** @param {string} [jwt] sent as the first frame; none: an unauthenticated socket */
async function open (jwt) {
  const c = new TestClient(gw.wsUrl, undefined, jwt === undefined ? {} : { token: jwt })
  clients.push(c)
  c.opened.catch(() => {})
  await c.upgraded
  return c
}

test('a token in the first frame is answered with hello, which says when the token expires', async () => {
  const c = await open(await token({ sub: 'ann' }, '10m'))
  await c.opened
  assert.ok(c.hello.expiresInMs > 9 * 60_000 && c.hello.expiresInMs <= 10 * 60_000, `expiresInMs ${c.hello.expiresInMs}`)
  assert.equal((await c.sub(['AAPL'])).op, 'ack')
  await c.waitQuotes('AAPL', 2)
  assert.deepEqual(c.problems, [])
  c.ws.terminate()
})

test('without an auth frame: no hello, requests refused with AUTH_REQUIRED, no subscription held, closed with 4003 after the timeout', async () => {
  const started = Date.now()
  const c = await open()
  c.send({ op: 'sub', symbols: ['AAPL'], id: 1 })
  const refused = await c.next((m) => m.id === 1, { from: 0 })
  assert.equal(refused.op, 'error')
  assert.equal(refused.code, ErrorCode.AUTH_REQUIRED)
  const m = await gw.metrics()
  assert.equal(m.wsps_gateway_connections >= 1, true)
  assert.equal(m.wsps_gateway_subscriptions, 0, 'the unauthenticated socket holds nothing')
  const { code } = await c.closedPromise
  assert.equal(code, CloseCode.AUTH_TIMEOUT)
  assert.ok(Date.now() - started >= AUTH_TIMEOUT_MS - 50, 'not closed before the timeout')
  assert.equal(c.hello, null)
  assert.deepEqual(c.frames.map((f) => f.op), ['error'])
})

test('a bad token in the auth frame is answered with UNAUTHORIZED and a 4001 close', async () => {
  const forged = await new SignJWT({ sub: 'eve' }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h')
    .sign(new TextEncoder().encode('another-secret-of-at-least-32-bytes!!!'))
  for (const bad of [forged, 'not.a.jwt', await token({ sub: 'old' }, Math.floor(Date.now() / 1000) - 60)]) {
    const c = await open(bad)
    const { code } = await c.closedPromise
    assert.equal(code, CloseCode.UNAUTHORIZED)
    assert.equal(c.frames.find((f) => f.op === 'error')?.code, ErrorCode.UNAUTHORIZED)
    assert.equal(c.hello, null)
  }
})

test('a ?token= on /ws is refused (401): query strings end up in access logs', async () => {
  const jwt = await token({ sub: 'q' })
  await assert.rejects(TestClient.connect(`${gw.wsUrl}?token=${jwt}`), (/** @type {any} */ err) => err.status === 401)
})

test('a refresh that drops a grant unsubscribes those symbols with GRANT_REVOKED naming them', async () => {
  const c = await open(await token({ sub: 'bo', symbols: ['AAPL', 'MSFT', 'NV*'] }))
  await c.opened
  assert.equal((await c.sub(['AAPL', 'MSFT', 'NVDA'])).op, 'ack')
  await c.waitQuotes('MSFT', 1)
  await c.waitQuotes('NVDA', 1)
  const from = c.frames.length
  c.send({ op: 'auth', token: await token({ sub: 'bo', symbols: ['AAPL'] }, '2h'), id: 'r1' })
  const revoked = await c.next((m) => m.op === 'error', { from })
  assert.equal(revoked.code, ErrorCode.GRANT_REVOKED)
  assert.deepEqual(revoked.symbols.sort(), ['MSFT', 'NVDA'])
  const ack = await c.next((m) => m.id === 'r1', { from })
  assert.equal(ack.op, 'ack')
  assert.deepEqual(ack.symbols, ['AAPL'])
  assert.ok(ack.expiresInMs > 3600_000, 'the ack carries the new expiry')
  for (const s of ['MSFT', 'NVDA']) c.subscribed.delete(s)
  // Quotes keep coming for what is still granted, and none for the rest
  // (TestClient records a quote for an unsubscribed symbol as a problem).
  const seen = c.seqs.get('AAPL')?.length ?? 0
  await c.waitQuotes('AAPL', seen + 3)
  assert.deepEqual(c.problems, [])
  assert.equal((await c.sub(['MSFT'])).code, ErrorCode.NOT_ENTITLED, 'the new grants apply to new requests too')
  await waitFor(async () => (await gw.metrics())['wsps_gateway_client_errors_total{code="GRANT_REVOKED"}'] >= 1, { message: 'GRANT_REVOKED counted' })
  c.ws.terminate()
})

test('exp without a refresh closes with 4002; a refresh before exp keeps the connection past it', async () => {
  const exp = Math.floor(Date.now() / 1000) + 3
  const lapsing = await open(await token({ sub: 'cy' }, exp))
  const refreshed = await open(await token({ sub: 'di' }, exp))
  await Promise.all([lapsing.opened, refreshed.opened])
  for (const c of [lapsing, refreshed]) assert.equal((await c.sub(['AAPL'])).op, 'ack')
  refreshed.send({ op: 'auth', token: await token({ sub: 'di' }, '1h'), id: 'r' })
  assert.equal((await refreshed.next((m) => m.id === 'r', { from: 0 })).op, 'ack')

  const { code } = await lapsing.closedPromise
  assert.equal(code, CloseCode.TOKEN_EXPIRED)
  assert.ok(Date.now() >= exp * 1000 - 50, 'not closed before exp')
  // Past the first token's exp, the refreshed connection still streams.
  const seen = refreshed.seqs.get('AAPL')?.length ?? 0
  await refreshed.waitQuotes('AAPL', seen + 3)
  assert.equal(refreshed.closed, null)
  assert.deepEqual(refreshed.problems, [])
  refreshed.ws.terminate()
})
