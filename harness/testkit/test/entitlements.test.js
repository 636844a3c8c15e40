// The fleet-wide cap on a user's sessions (WSPS_MAX_SESSIONS_PER_USER,
// docs/protocol.md "Sessions per user") on real processes: one Redis, two
// pairs of real gateways (one per policy, apart by key prefix), sessions
// over both gateways of a pair and both transports (WebSocket and SSE count
// alike). The third is refused (4011) or the oldest, on the other gateway,
// closed (4012); racing connects never exceed the cap; a refresh keeps the
// place; a SIGKILLed gateway's places free themselves after the lease.
// Venue grants (WSPS_VENUES) refuse and delay by the symbol grants' codes,
// and the usage records (WSPS_USAGE_RECORDS) of each session, venue and
// level make the monthly report (GET /admin/usage, `wsps usage --csv`),
// a killed gateway's closed at its last sign of life.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { SignJWT } from 'jose'
import { CloseCode, ErrorCode } from '@wsps/protocol'
import { ROOT, SseStream, TestClient, setUp, useStack, waitFor } from '../src/index.js'

const SECRET = 'hs256-secret-for-entitlements-0123456789'
const ADMIN = 'admin-token-for-entitlements-test'
const LEASE_MS = 3000
const CAP = 2
const VENUES = 'XNAS=AAPL MSFT;XNYS=IBM GE;ARCX=SPY'
const WSPS = join(ROOT, 'clients/cli/bin/wsps.js')
const MONTH = new Date().toISOString().slice(0, 7)

const stack = useStack()
const on = setUp(async () => {
  const common = { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET, WSPS_MAX_SESSIONS_PER_USER: CAP, WSPS_SESSION_LEASE_MS: LEASE_MS, WSPS_ADMIN_TOKEN: ADMIN, WSPS_STATUS_INTERVAL_MS: 500 }
  const refuse = { ...common, WSPS_REDIS_KEY_PREFIX: 'refuse', WSPS_VENUES: VENUES, WSPS_USAGE_RECORDS: 'true' }
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
  // The oldest now is on the gateway the newest comes to: closed there at once.
  const latest = ws(d, jwt)
  assert.equal(await outcome(latest), 'hello')
  assert.equal((await newer.closedPromise).code, CloseCode.SESSION_EVICTED, 'on the same gateway too')
  assert.equal(newest.closed, null)
  await waitFor(async () => await held('oldest', 'bo') === CAP, { message: 'the evicted sessions\' marks released by their gateways' })
  const m = await c.metrics()
  assert.ok(m['wsps_gateway_session_cap_total{outcome="evicted"}'] >= 1, 'counted where it was closed')
})

test('close-oldest under a race: of many sessions at once over both gateways, the cap\'s worth stay open', async () => {
  const [c, d] = on.oldest
  const jwt = await token({ sub: 'rush' })
  const sessions = await Promise.all(Array.from({ length: 8 }, (_, i) => i % 4 === 0 ? sse(i % 2 ? c : d, jwt) : ws(i % 2 ? c : d, jwt)))
  await Promise.all(sessions.map(outcome))
  const open = () => sessions.filter((s) => s instanceof TestClient ? s.closed === null : s.closed === null && !s.ended)
  await waitFor(() => open().length === CAP, { message: `${CAP} sessions left open` })
  await waitFor(async () => await held('oldest', 'rush') === CAP, { message: 'the place count at the cap' })
  for (const s of sessions) assert.ok(s.closed === null || s.closed.code === CloseCode.SESSION_EVICTED, `closed with ${s.closed?.code}`)
  assert.equal(open().length, CAP, 'and stay so')
})

/**
 * The month's usage report, as an operator gets it.
 *
 * @param {import('../src/index.js').ServiceHandle} gw
 * @returns {Promise<import('@wsps/shared/usage-records').UsageReport>}
 */
async function report (gw) {
  const res = await fetch(`${gw.url}/admin/usage?month=${MONTH}`, { headers: { authorization: `Bearer ${ADMIN}` } })
  assert.equal(res.status, 200)
  return res.json()
}

test('venue grants: real-time or delayed by venue, others NOT_ENTITLED; each session\'s venues and levels in the usage report', async () => {
  const [a, b] = on.refuse
  const jwt = await token({ sub: 'vic', userClass: 'nonpro', symbols: ['TSLA'], venues: { realtime: ['XNAS'], delayed: ['XNYS'] } })
  const c = ws(a, jwt)
  assert.equal(await outcome(c), 'hello')
  const ack = await c.sub(['AAPL', 'MSFT', 'IBM'])
  assert.equal(ack.op, 'ack')
  assert.deepEqual(ack.delayed, ['IBM'], 'XNYS is granted delayed')
  assert.equal((await c.sub(['SPY'])).code, ErrorCode.NOT_ENTITLED, 'ARCX is not granted')
  assert.equal((await c.sub(['GE'], { delayed: false })).code, ErrorCode.DELAYED_ONLY)
  const refused = await fetch(`${b.url}/sse?symbols=SPY`, { headers: { authorization: `Bearer ${jwt}` } })
  assert.equal(refused.status, 403, 'SSE: the same refusal')
  assert.equal((await refused.json()).code, ErrorCode.NOT_ENTITLED)
  const tsla = await SseStream.open(`${b.url}/sse?symbols=TSLA`, { authorization: `Bearer ${jwt}` })
  opened.push(tsla)
  await tsla.next((e) => e.event === 'ack')
  c.ws.close()
  await c.closedPromise
  // Bars alone are access too, on the timeline they are served on.
  const barsOnly = ws(a, await token({ sub: 'barry', venues: { delayed: ['XNYS'] } }))
  assert.equal(await outcome(barsOnly), 'hello')
  assert.equal((await barsOnly.subBars(['GE'], '1m')).op, 'ack')

  const usage = /** @type {import('@wsps/shared/usage-records').UsageReport} */ (await waitFor(async () => {
    const r = await report(b)
    const rows = r.rows.filter((row) => row.user === 'vic')
    return rows.length === 3 && r
  }, { message: 'vic\'s three usage rows' }))
  const rows = usage.rows.filter((row) => row.user === 'vic').map((r) => [r.venue, r.level, r.class, r.sessions, r.gateways])
  assert.deepEqual(rows, [
    ['XNAS', 'realtime', 'nonpro', 1, [a.name]],
    ['XNYS', 'delayed', 'nonpro', 1, [a.name]],
    ['XXXX', 'realtime', 'nonpro', 1, [b.name]]
  ], 'a venue and level per row, XXXX for a symbol of no venue (its stream still open)')
  assert.ok(usage.totals.some((t) => t.venue === 'XNAS' && t.level === 'realtime' && t.class === 'nonpro' && t.users >= 1))
  assert.deepEqual(usage.rows.filter((r) => r.user === 'barry').map((r) => [r.venue, r.level, r.class]), [['XNYS', 'delayed', 'pro']], 'a bars sub, of a token without a class: pro')
  const csv = await new Promise((resolve) => {
    execFile(process.execPath, [WSPS, 'usage', '--month', MONTH, '--csv', '--url', b.url, '--token', ADMIN], { timeout: 20_000 }, (err, out, errOut) => resolve({ err, out, errOut }))
  })
  assert.equal(csv.err, null, csv.errOut)
  const lines = csv.out.trim().split('\n')
  assert.equal(lines[0], 'user,class,venue,level,sessions,firstAccess,lastAccess,accessSeconds,gateways')
  assert.ok(lines.some((l) => l.startsWith('vic,nonpro,XNAS,realtime,1,')), csv.out)
  tsla.close()
})

test('a SIGKILLed gateway\'s places free themselves after the lease, and its open usage records close at its last sign of life', async () => {
  const [a, b] = on.refuse
  const jwt = await token({ sub: 'cy' })
  const watching = await SseStream.open(`${b.url}/sse?symbols=AAPL`, { authorization: `Bearer ${jwt}` })
  opened.push(watching)
  for (const s of [ws(b, jwt), watching]) assert.equal(await outcome(s), 'hello')
  await watching.next((e) => e.event === 'ack')
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

  // Its record is closed by the sweep, not left open: it ends before the kill.
  const closed = /** @type {import('@wsps/shared/usage-records').UsageRecord} */ (await waitFor(async () => {
    const entries = await on.redis.xrange(`refuse:{usage}:${MONTH}`, '-', '+')
    return entries.map(([, f]) => JSON.parse(f[1])).find((r) => r.user === 'cy')
  }, { timeout: LEASE_MS * 3, message: 'cy\'s usage record closed' }))
  assert.equal(closed.venue, 'XNAS')
  assert.equal(closed.gateway, b.name)
  const end = Number(closed.end)
  assert.ok(end <= killedAt && end >= killedAt - LEASE_MS, `ended ${killedAt - end} ms before the kill`)
  const row = (await report(a)).rows.find((r) => r.user === 'cy')
  assert.equal(row?.sessions, 1, 'counted once')
})
