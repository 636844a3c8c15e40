// The SSE fallback on real processes (docs/protocol.md, "Server-Sent
// Events"): the same frames as events with ids, Last-Event-ID, heartbeat
// comments, the same limits and auth as WebSocket with coded 4xx refusals,
// expiry as a `close` event, and the query-string token kept out of the logs.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { SignJWT } from 'jose'
import { CloseCode, ErrorCode, continues } from '@wsps/protocol'
import { SseStream, TestClient, useStack, waitFor } from '../src/index.js'

const SECRET = 'hs256-secret-for-the-sse-tests-0123456789'
const MAX_PER_IP = 3

const stack = useStack()
/** @type {import('../src/index.js').ServiceHandle} */
let open
/** @type {import('../src/index.js').ServiceHandle} */
let authed
/** @type {SseStream[]} */
const streams = []

before(async () => {
  ;[open, authed] = await Promise.all([
    stack.gateway({ WSPS_HEARTBEAT_MS: 1000, WSPS_MAX_CONNECTIONS_PER_IP: MAX_PER_IP, WSPS_MAX_SUBSCRIPTIONS: 5 }),
    // debug: the most a gateway ever logs, and still no token in it.
    stack.gateway({ WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET, WSPS_LOG_LEVEL: 'debug' }),
    stack.fetcher()
  ])
})

after(() => { for (const s of streams) s.close() })

/**
 * @param {string} url
 * @param {Record<string, string>} [headers]
 */
async function sse (url, headers) {
  const s = await SseStream.open(url, headers)
  streams.push(s)
  return s
}

/**
 * @param {Record<string, unknown>} claims
 * @param {number | string} [exp]
 */
function token (claims, exp = '1h') {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(exp).sign(new TextEncoder().encode(SECRET))
}

test('a stream carries hello, ack, snapshots and deltas as events with rising ids, and heartbeat comments', async () => {
  const s = await sse(`${open.url}/sse?symbols=AAPL,MSFT`)
  assert.equal(s.status, 200)
  assert.match(String(s.headers?.get('content-type')), /^text\/event-stream/)
  assert.equal(s.headers?.get('x-accel-buffering'), 'no')
  await waitFor(() => s.quotesOf('AAPL').length >= 3 && s.quotesOf('MSFT').length >= 3, { message: 'quotes of both' })
  await waitFor(() => s.comments >= 1, { message: 'a heartbeat comment' })
  const [hello, ack] = s.events
  assert.equal(hello.event, 'hello')
  assert.equal(hello.data.op, 'hello')
  assert.equal(hello.data.heartbeatMs, 1000)
  assert.equal(ack.event, 'ack')
  assert.deepEqual(ack.data.symbols, ['AAPL', 'MSFT'])
  for (const e of s.events) assert.equal(e.event, e.data.op, 'the event name is the op')
  const ids = s.events.map((e) => Number(e.id))
  assert.deepEqual(ids, ids.map((_, i) => i + 1), 'ids count from 1')
  // Applying them like the WebSocket client does: no gap.
  for (const sym of ['AAPL', 'MSFT']) {
    const [first, ...rest] = s.quotesOf(sym)
    let seq = first.seq
    for (const d of rest) {
      assert.ok(continues(d, seq), `${sym}: ${d.seq} after ${seq}`)
      seq = d.seq
    }
  }
  s.close()
})

test('Last-Event-ID: the next stream numbers on from it and starts with fresh snapshots', async () => {
  const s = await sse(`${open.url}/sse?symbols=AAPL`, { 'last-event-id': '41' })
  await s.next((e) => e.event === 'snap')
  assert.deepEqual(s.events.slice(0, 3).map((e) => [e.id, e.event]), [['42', 'hello'], ['43', 'ack'], ['44', 'snap']])
  s.close()
  const junk = await sse(`${open.url}/sse?symbols=AAPL`, { 'last-event-id': 'x-1' })
  await junk.next((e) => e.event === 'hello')
  assert.equal(junk.events[0].id, '1', 'an id that is not ours starts over')
  junk.close()
})

test('bad requests get 4xx with a protocol error frame: bad symbol, too many symbols, repeated parameter', async () => {
  /** @type {[string, number, string, string[] | undefined][]} */
  const cases = [
    ['/sse?symbols=AAPL,aapl', 400, ErrorCode.BAD_SYMBOL, ['aapl']],
    ['/sse?symbols=A,B,C,D,E,F,G', 400, ErrorCode.TOO_MANY_SUBSCRIPTIONS, ['F', 'G']],
    ['/sse?symbols=A&symbols=B', 400, ErrorCode.BAD_REQUEST, undefined]
  ]
  for (const [path, status, code, symbols] of cases) {
    const s = await sse(`${open.url}${path}`)
    assert.equal(s.status, status, path)
    const body = JSON.parse(s.body)
    assert.equal(body.op, 'error')
    assert.equal(body.code, code, path)
    assert.deepEqual(body.symbols, symbols, path)
  }
  const m = await open.metrics()
  assert.ok(m['wsps_gateway_sse_requests_total{result="bad_request"}'] >= 3)
  assert.equal(m.wsps_gateway_subscriptions, 0, 'a refused stream holds nothing')
})

test('connections per IP count WebSockets and streams together: over the limit is 429 TOO_MANY_CONNECTIONS', async () => {
  const ws = await TestClient.connect(open.wsUrl)
  const held = [await sse(`${open.url}/sse?symbols=AAPL`), await sse(`${open.url}/sse?symbols=MSFT`)]
  for (const s of held) await s.next((e) => e.event === 'hello')
  const over = await sse(`${open.url}/sse?symbols=AAPL`)
  assert.equal(over.status, 429)
  assert.equal(JSON.parse(over.body).code, ErrorCode.TOO_MANY_CONNECTIONS)
  await assert.rejects(TestClient.connect(open.wsUrl), (/** @type {any} */ err) => err.status === 429)
  // A closed stream gives its place back.
  held[0].close()
  await waitFor(async () => (await sse(`${open.url}/sse?symbols=AAPL`)).status === 200, { message: 'a place again' })
  for (const s of streams) s.close()
  ws.ws.terminate()
})

test('auth: a token in the header or the query opens the stream with its grants; missing or bad is 401, ungranted symbols 403', async () => {
  const jwt = await token({ sub: 'sam', symbols: ['AAPL', 'MS*'] })
  const viaHeader = await sse(`${authed.url}/sse?symbols=AAPL,MSFT`, { authorization: `Bearer ${jwt}` })
  const viaQuery = await sse(`${authed.url}/sse?symbols=MSFT&token=${jwt}`)
  for (const s of [viaHeader, viaQuery]) {
    assert.equal(s.status, 200)
    await s.next((e) => e.event === 'snap')
    assert.ok(s.events[0].data.expiresInMs > 3500_000, 'hello says when the token expires')
  }
  /** @type {[string, Record<string, string>, number, string][]} */
  const refused = [
    ['/sse?symbols=AAPL', {}, 401, ErrorCode.UNAUTHORIZED],
    ['/sse?symbols=AAPL&token=not.a.jwt', {}, 401, ErrorCode.UNAUTHORIZED],
    ['/sse?symbols=AAPL', { authorization: 'Bearer not.a.jwt' }, 401, ErrorCode.UNAUTHORIZED],
    [`/sse?symbols=AAPL,GOOG&token=${jwt}`, {}, 403, ErrorCode.NOT_ENTITLED]
  ]
  for (const [path, headers, status, code] of refused) {
    const s = await sse(`${authed.url}${path}`, headers)
    assert.equal(s.status, status, path.slice(0, 40))
    assert.equal(JSON.parse(s.body).code, code)
  }
  assert.deepEqual(JSON.parse((await sse(`${authed.url}/sse?symbols=AAPL,GOOG&token=${jwt}`)).body).symbols, ['GOOG'])
  viaHeader.close()
  viaQuery.close()
})

test('a stream whose token expires ends with a close event carrying 4002', async () => {
  const exp = Math.floor(Date.now() / 1000) + 2
  const s = await sse(`${authed.url}/sse?symbols=AAPL&token=${await token({ sub: 'tim' }, exp)}`)
  assert.equal(s.status, 200)
  await s.whenEnded()
  assert.deepEqual(s.closed, { code: CloseCode.TOKEN_EXPIRED, reason: 'token expired' })
  assert.ok(Date.now() >= exp * 1000 - 50, 'not before exp')
})

test('the query-string token is in no log line, even at debug level', async () => {
  const jwt = await token({ sub: 'logged' })
  // A request the gateway logs about: a client that goes away mid-stream.
  const s = await sse(`${authed.url}/sse?symbols=AAPL&token=${jwt}`)
  await s.next((e) => e.event === 'snap')
  s.close()
  await sse(`${authed.url}/sse?symbols=AAPL&token=${jwt}x`)
  await waitFor(async () => (await authed.metrics()).wsps_gateway_connections === 0, { message: 'the stream closed' })
  // The refusal is logged with its request, URL and all: masked.
  await waitFor(() => authed.logs.some((l) => l.includes('sse request refused') && l.includes('token=[redacted]')), { message: 'the refusal logged, masked' })
  const [, payload] = jwt.split('.')
  for (const line of authed.logs) assert.ok(!line.includes(payload), `token in: ${line.slice(0, 200)}`)
})
