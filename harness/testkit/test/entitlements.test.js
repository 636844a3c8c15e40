// The fleet-wide cap on a user's sessions (WSPS_MAX_SESSIONS_PER_USER,
// docs/protocol.md "Sessions per user") on real processes: one Redis, two
// pairs of real gateways (one per policy, apart by key prefix), sessions
// over both gateways of a pair and both transports (WebSocket and SSE count
// alike). The third is refused (4011) or the oldest, on the other gateway,
// closed (4012); racing connects never exceed the cap; a refresh keeps the
// place; a SIGKILLed gateway's places free themselves after the lease.
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { SignJWT } from 'jose'
import { CloseCode, ErrorCode } from '@wsps/protocol'
import { SseStream, TestClient, setUp, useStack, waitFor } from '../src/index.js'

const SECRET = 'hs256-secret-for-entitlements-0123456789'
const ADMIN = 'admin-token-for-entitlements-test'
const LEASE_MS = 3000
const CAP = 2

const stack = useStack()
const on = setUp(async () => {
  const common = { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET, WSPS_MAX_SESSIONS_PER_USER: CAP, WSPS_SESSION_LEASE_MS: LEASE_MS, WSPS_ADMIN_TOKEN: ADMIN, WSPS_STATUS_INTERVAL_MS: 500 }
  const refuse = { ...common, WSPS_REDIS_KEY_PREFIX: 'refuse' }
  const oldest = { ...common, WSPS_REDIS_KEY_PREFIX: 'oldest', WSPS_SESSION_CAP_POLICY: 'close-oldest' }
  const [a, b, c, d, redis] = await Promise.all([
    stack.gateway(refuse), stack.gateway(refuse), stack.gateway(oldest), stack.gateway(oldest), stack.redisClient()
  ])
  return { refuse: [a, b], oldest: [c, d], redis }
})

/** @type {{close: () => void}[]} */
const opened = []
after(() => { for (const o of opened) o.close() })

/** @param {Record<string, unknown>} claims */
const token = (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))

/**
 * A WebSocket session, its token in the first frame or the upgrade's header.
 *
 * @param {import('../src/index.js').ServiceHandle} gw
 * @param {string} jwt
 * @param {boolean} [header]
 */
function ws (gw, jwt, header = false) {
  const c = header ? new TestClient(gw.wsUrl, { headers: { authorization: `Bearer ${jwt}` } }) : new TestClient(gw.wsUrl, undefined, { token: jwt })
  c.opened.catch(() => {})
  opened.push({ close: () => c.ws.terminate() })
  return c
}

/**
 * @param {import('../src/index.js').ServiceHandle} gw
 * @param {string} jwt
 */
async function sse (gw, jwt) {
  const s = await SseStream.open(`${gw.url}/sse`, { authorization: `Bearer ${jwt}` })
  opened.push(s)
  return s
}

/**
 * How a session ended up: `hello` (it holds a place) or the code it was closed with.
 *
 * @param {TestClient | SseStream} s
 * @returns {Promise<'hello' | number>}
 */
async function outcome (s) {
  if (s instanceof TestClient) return Promise.race([s.opened.then(() => /** @type {const} */ ('hello')), s.closedPromise.then((c) => c.code)])
  await waitFor(() => s.events.some((e) => e.event === 'hello') || s.closed, { message: 'hello or close on SSE' })
  return s.closed?.code ?? 'hello'
}

/**
 * @param {string} prefix
 * @param {string} user
 */
const held = (prefix, user) => on.redis.hlen(`${prefix}:{u:${user}}:sessions`)

test('refuse: two sessions over two gateways and both transports; the third is refused with SESSION_LIMIT and 4011, on either', async () => {
  const [a, b] = on.refuse
  const jwt = await token({ sub: 'ann', userClass: 'nonpro' })
  const first = ws(a, jwt, true)
  assert.equal(await outcome(first), 'hello')
  const second = await sse(b, jwt)
  assert.equal(await outcome(second), 'hello')

  const third = ws(b, jwt)
  assert.equal(await outcome(third), CloseCode.SESSION_LIMIT)
  assert.equal(third.frames.find((f) => f.op === 'error')?.code, ErrorCode.SESSION_LIMIT)
  assert.equal(third.hello, null, 'no hello: it never held a place')
  const fourth = await sse(a, jwt)
  assert.equal(await outcome(fourth), CloseCode.SESSION_LIMIT)
  assert.equal(fourth.events.find((e) => e.event === 'error')?.data.code, ErrorCode.SESSION_LIMIT)
  assert.equal(await held('refuse', 'ann'), CAP)

  // A refresh keeps its place (no third one frees up or is taken)...
  first.send({ op: 'auth', token: await token({ sub: 'ann', userClass: 'nonpro' }), id: 'r' })
  assert.equal((await first.next((m) => m.id === 'r', { from: 0 })).op, 'ack')
  assert.equal(await outcome(ws(a, jwt)), CloseCode.SESSION_LIMIT, 'still full after the refresh')
  // ...and a refresh naming another user is not one.
  const other = ws(b, await token({ sub: 'bea' }))
  assert.equal(await outcome(other), 'hello')
  other.send({ op: 'auth', token: await token({ sub: 'eve' }), id: 'x' })
  assert.equal((await other.closedPromise).code, CloseCode.UNAUTHORIZED)
  assert.equal(other.frames.find((f) => f.op === 'error')?.code, ErrorCode.BAD_IDENTITY)

  // The operator's view names the user and its class.
  const res = await fetch(`${a.url}/admin/connections?user=ann`, { headers: { authorization: `Bearer ${ADMIN}` } })
  const view = await res.json()
  assert.equal(view.matched, CAP, JSON.stringify(view))
  assert.deepEqual(view.answers.flatMap((/** @type {any} */ x) => x.connections).map((/** @type {any} */ c) => [c.user, c.class]), [['ann', 'nonpro'], ['ann', 'nonpro']])

  // A session that ends frees its place.
  first.ws.close()
  await waitFor(async () => await held('refuse', 'ann') === 1, { message: 'the closed session released' })
  assert.equal(await outcome(ws(b, jwt)), 'hello')
  second.close()
})

test('racing connects over both gateways and both transports never exceed the cap', async () => {
  const [a, b] = on.refuse
  const jwt = await token({ sub: 'race' })
  const sessions = await Promise.all(Array.from({ length: 12 }, (_, i) => {
    const gw = i % 2 ? a : b
    return i % 3 === 0 ? sse(gw, jwt) : ws(gw, jwt, i % 3 === 1)
  }))
  const outcomes = await Promise.all(sessions.map(outcome))
  assert.equal(outcomes.filter((o) => o === 'hello').length, CAP, `outcomes: ${outcomes}`)
  assert.equal(outcomes.filter((o) => o === CloseCode.SESSION_LIMIT).length, 12 - CAP, `outcomes: ${outcomes}`)
  assert.equal(await held('refuse', 'race'), CAP)
  for (const s of sessions) s instanceof TestClient ? s.ws.close() : s.close()
  await waitFor(async () => await held('refuse', 'race') === 0, { message: 'every place released' })
})

test('close-oldest: a new session closes the user\'s oldest with 4012, on the other gateway and either transport', async () => {
  const [c, d] = on.oldest
  const jwt = await token({ sub: 'bo' })
  const oldest = ws(c, jwt)
  assert.equal(await outcome(oldest), 'hello')
  const middle = await sse(d, jwt)
  assert.equal(await outcome(middle), 'hello')

  const newer = ws(d, jwt, true)
  assert.equal(await outcome(newer), 'hello', 'the new one is kept')
  assert.equal((await oldest.closedPromise).code, CloseCode.SESSION_EVICTED, 'the oldest, on the other gateway, is closed')
  const newest = await sse(c, jwt)
  assert.equal(await outcome(newest), 'hello')
  await middle.whenEnded(5000)
  assert.equal(middle.closed?.code, CloseCode.SESSION_EVICTED, 'the SSE session was the oldest next')
  assert.equal(newer.closed, null)
  await waitFor(async () => await held('oldest', 'bo') === CAP, { message: 'the evicted sessions\' marks released by their gateways' })
  const m = await c.metrics()
  assert.ok(m['wsps_gateway_session_cap_total{outcome="evicted"}'] >= 1, 'counted where it was closed')
})

test('a SIGKILLed gateway\'s places free themselves after the lease', async () => {
  const [a, b] = on.refuse
  const jwt = await token({ sub: 'cy' })
  for (const s of [ws(b, jwt), await sse(b, jwt)]) assert.equal(await outcome(s), 'hello')
  assert.equal(await outcome(ws(a, jwt)), CloseCode.SESSION_LIMIT)
  await b.kill()
  const killedAt = Date.now()
  assert.equal(await outcome(ws(a, jwt)), CloseCode.SESSION_LIMIT, 'held until the lease runs out')
  /** @type {'hello' | number} */
  let got = CloseCode.SESSION_LIMIT
  await waitFor(async () => {
    got = await outcome(ws(a, jwt))
    return got === 'hello'
  }, { timeout: LEASE_MS * 3, interval: 250, message: 'a place after the lease' })
  const waited = Date.now() - killedAt
  assert.ok(waited <= LEASE_MS + 2000, `freed ${waited} ms after the kill (lease ${LEASE_MS} ms)`)
})
