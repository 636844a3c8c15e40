// The admission every transport shares: drain, capacity (opening ones
// included), Origin, connections per IP, and the places it holds.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ErrorCode } from '@wsps/protocol'
import { Admission, NO_IP_LIMIT } from '../src/admission.js'

/**
 * @param {{origin?: string, ip?: string, forwardedFor?: string}} [r]
 * @returns {import('node:http').IncomingMessage}
 */
const request = ({ origin, ip = '10.0.0.1', forwardedFor } = {}) => /** @type {any} */ ({
  headers: { origin, 'x-forwarded-for': forwardedFor },
  socket: { remoteAddress: ip }
})

/** @param {Partial<ConstructorParameters<typeof Admission>[0]>} [o] */
const admission = (o = {}) => {
  let open = 0
  const a = new Admission({ maxConnections: 3, maxConnectionsPerIp: 0, allowedOrigins: [], trustProxy: false, authenticate: null, connected: () => open, ...o })
  return { a, setOpen: (/** @type {number} */ n) => { open = n } }
}

test('capacity counts open connections and those still opening', () => {
  const { a, setOpen } = admission()
  setOpen(1)
  const first = a.admit(request())
  const second = a.admit(request())
  assert.ok(first.ok && second.ok)
  const full = a.admit(request())
  assert.equal(!full.ok && full.code, ErrorCode.GATEWAY_FULL)
  assert.equal(!full.ok && full.status, 503)
  a.settle('10.0.0.1', false)
  assert.ok(a.admit(request()).ok, 'a settled attempt frees its place')
})

test('Origin allowlist: listed origins only; empty or * allows any', () => {
  const { a } = admission({ allowedOrigins: ['https://ok.example'] })
  const bad = a.admit(request({ origin: 'https://evil.example' }))
  assert.equal(!bad.ok && bad.code, ErrorCode.BAD_ORIGIN)
  assert.equal(!bad.ok && bad.status, 403)
  assert.equal(a.admit(request()).ok, false, 'no Origin is not a listed one')
  assert.ok(a.admit(request({ origin: 'https://ok.example' })).ok)
  assert.ok(admission({ allowedOrigins: ['*'] }).a.admit(request({ origin: 'https://any.example' })).ok)
})

test('per-IP limit: places are held until released; X-Forwarded-For only when trusted', () => {
  const { a } = admission({ maxConnections: 100, maxConnectionsPerIp: 2 })
  const r = request({ forwardedFor: '203.0.113.9' })
  assert.ok(a.admit(r).ok)
  a.settle('10.0.0.1', true)
  assert.ok(a.admit(r).ok)
  a.settle('10.0.0.1', true)
  const over = a.admit(r)
  assert.equal(!over.ok && over.code, ErrorCode.TOO_MANY_CONNECTIONS)
  assert.equal(!over.ok && over.status, 429)
  assert.ok(a.admit(request({ ip: '10.0.0.2' })).ok, 'another address is not held back')
  a.release('10.0.0.1')
  const again = a.admit(r)
  assert.ok(again.ok && again.ip === '10.0.0.1', 'a closed connection frees its place; the header is not trusted')

  const trusting = admission({ maxConnections: 100, maxConnectionsPerIp: 1, trustProxy: true }).a
  const forwarded = trusting.admit(request({ forwardedFor: '203.0.113.9, 10.0.0.1' }))
  assert.ok(forwarded.ok && forwarded.ip === '203.0.113.9')
  assert.ok(trusting.admit(request({ forwardedFor: '203.0.113.10' })).ok, 'clients behind one proxy are told apart')
})

test('no per-IP limit: the peer address is not read (it would stay cached on every socket)', () => {
  const { a } = admission({ maxConnections: 100 })
  let reads = 0
  const r = /** @type {any} */ ({ headers: {}, socket: { get remoteAddress () { reads++; return '10.0.0.1' } } })
  const admitted = a.admit(r)
  assert.ok(admitted.ok && admitted.ip === NO_IP_LIMIT)
  a.settle(NO_IP_LIMIT, true)
  a.release(NO_IP_LIMIT)
  assert.equal(reads, 0)
  assert.equal(admission({ maxConnections: 100, maxConnectionsPerIp: 5 }).a.admit(r).ok, true)
  assert.equal(reads, 1, 'with a limit it is read')
})

test('drain: everything is refused from then on, with Retry-After', () => {
  const { a } = admission()
  assert.equal(a.draining, false)
  a.drain()
  assert.equal(a.draining, true)
  const r = a.admit(request())
  assert.equal(!r.ok && r.code, ErrorCode.DRAINING)
  assert.equal(!r.ok && r.retryAfter, '1')
})

test('verify: the token check of the authenticator; auth off needs none', async () => {
  assert.equal(admission().a.authRequired, false)
  const { a } = admission({ authenticate: async (token) => token === 'good' ? { ok: true, grants: null, delayed: null, expiresAt: 7, user: 'u1', userClass: 'pro' } : { ok: false, reason: 'bad' } })
  assert.equal(a.authRequired, true)
  assert.deepEqual(await a.verify('good'), { ok: true, grants: null, delayed: null, expiresAt: 7, user: 'u1', userClass: 'pro' })
  assert.deepEqual(await a.verify(null), { ok: false, reason: 'bad' })
})

test('open: the one path to a lease or a coded refusal; a refusal frees the place it took', async () => {
  const grantsAapl = (/** @type {string} */ s) => s === 'AAPL'
  /** @type {import('../src/auth.js').Authenticator} */
  const authenticate = async (token) => token === 'good' ? { ok: true, grants: grantsAapl, delayed: null, expiresAt: 7, user: 'u1', userClass: 'pro' } : { ok: false, reason: 'bad' }
  const off = admission({ maxConnections: 1 }).a
  const lease = await off.open(request(), null)
  assert.ok(lease.ok && lease.authed && lease.access.grants === null && lease.access.expiresAt === null && lease.access.user === null, 'auth off: authed, every symbol')
  const full = await off.open(request(), null)
  assert.equal(!full.ok && full.code, ErrorCode.GATEWAY_FULL, 'the lease holds its place until settled')
  off.settle(NO_IP_LIMIT, false)

  const { a } = admission({ maxConnections: 1, authenticate })
  const later = await a.open(request(), null, { authFrame: true })
  assert.ok(later.ok && !later.authed, 'no token on a WebSocket: open, the auth frame to follow')
  a.settle(NO_IP_LIMIT, false)
  const missing = await a.open(request(), null)
  assert.deepEqual(!missing.ok && [missing.status, missing.code, missing.message, missing.result], [401, ErrorCode.UNAUTHORIZED, 'unauthorized: bad', 'unauthorized'])
  const denied = await a.open(request(), 'good', { symbols: { ok: true, symbols: ['AAPL', 'MSFT'] } })
  assert.deepEqual(!denied.ok && [denied.status, denied.code, denied.symbols, denied.result], [403, ErrorCode.NOT_ENTITLED, ['MSFT'], 'not_entitled'])
  const good = await a.open(request(), 'good', { symbols: { ok: true, symbols: ['AAPL'] } })
  assert.ok(good.ok && good.authed && good.access.grants === grantsAapl && good.access.expiresAt === 7 && good.access.user === 'u1' && good.symbols.length === 1, 'refusals freed their places')
  a.settle(NO_IP_LIMIT, true)

  const { a: draining } = admission({ authenticate: async () => { draining.drain(); return { ok: true, grants: null, delayed: null, expiresAt: null, user: null, userClass: null } } })
  const late = await draining.open(request(), 'good')
  assert.deepEqual(!late.ok && [late.status, late.code, late.result], [503, ErrorCode.DRAINING, 'draining'], 'drained while the token was checked')
})
