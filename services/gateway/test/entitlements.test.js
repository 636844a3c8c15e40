// Who a token names (sub, user class) and what it grants by venue
// (auth.js, venues.js), and the settings behind them, checked at start.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SignJWT } from 'jose'
import { ErrorCode } from '@wsps/protocol'
import { ConfigError } from '@wsps/shared/errors'
import { createAuthenticator, entitlementsFrom, identityOf } from '../src/auth.js'
import { loadGatewayConfig } from '../src/config.js'
import { parseVenues, venueTable } from '../src/venues.js'

const SECRET = 'entitlements-test-secret-0123456789abcdef'
const AUTHED = { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET }
const venueOf = venueTable('XNAS=AAPL MSFT NV*;XNYS=IBM GE N*;ARCX=SPY')

/** @param {Record<string, unknown>} claims */
const sign = (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))

test('venues: exact symbols, then the longest prefix; a symbol no entry names has none', () => {
  assert.equal(venueOf('AAPL'), 'XNAS')
  assert.equal(venueOf('NVDA'), 'XNAS', 'NV* is longer than N*')
  assert.equal(venueOf('NKE'), 'XNYS')
  assert.equal(venueOf('SPY'), 'ARCX')
  assert.equal(venueOf('TSLA'), null)
  assert.equal(venueTable('')('AAPL'), null, 'no table: no venues')
  const table = parseVenues(' XNAS = AAPL ; XNYS=IBM ;')
  assert.ok(table.ok && table.venueOf('AAPL') === 'XNAS' && table.venueOf('IBM') === 'XNYS', 'spaces and a trailing ; are fine')
})

test('venues: a bad MIC, a bad symbol, a symbol in two venues are refused, each named', () => {
  for (const [text, problem] of [
    ['xnas=AAPL', /"xnas" is not a MIC/],
    ['XNASDAQ=AAPL', /is not a MIC/],
    ['AAPL', /"AAPL" is not a MIC .* followed by =/],
    ['XNAS=aapl', /"aapl" \(XNAS\) is not a symbol/],
    ['XNAS=AAPL;XNYS=AAPL', /"AAPL" is named twice \(XNAS and XNYS\)/],
    ['XNAS=N*;XNYS=N*', /"N\*" is named twice/]
  ]) {
    const table = parseVenues(/** @type {string} */ (text))
    assert.ok(!table.ok && table.problems.some((p) => /** @type {RegExp} */ (problem).test(p)), `${text}: ${JSON.stringify(table)}`)
  }
  assert.throws(() => loadGatewayConfig({ WSPS_VENUES: 'XNAS=AAPL;XNYS=AAPL' }), (e) => e instanceof ConfigError && /named twice/.test(e.message))
})

test('venue grants add to symbol grants by the same rules: real-time wins, delayed where only delayed', () => {
  const e = /** @type {{grants: (s: string) => boolean, delayed: (s: string) => boolean}} */ (
    entitlementsFrom(['TSLA'], ['GE'], { realtime: ['XNAS'], delayed: ['XNYS'] }, venueOf))
  for (const s of ['AAPL', 'NVDA', 'TSLA']) assert.ok(e.grants(s) && !e.delayed(s), `${s} real-time`)
  for (const s of ['IBM', 'GE', 'NKE']) assert.ok(e.grants(s) && e.delayed(s), `${s} delayed`)
  for (const s of ['SPY', 'ZZZ']) assert.ok(!e.grants(s), `${s} not granted`)
  // A symbol granted delayed by its claim and real-time by its venue is real-time.
  const mixed = /** @type {{grants: (s: string) => boolean, delayed: (s: string) => boolean}} */ (
    entitlementsFrom(undefined, ['AAPL'], { realtime: ['XNAS'] }, venueOf))
  assert.ok(mixed.grants('AAPL') && !mixed.delayed('AAPL'))
  // With venues granted, an absent symbols claim grants nothing of its own (not all).
  const venuesOnly = /** @type {{grants: (s: string) => boolean, delayed: (s: string) => boolean}} */ (
    entitlementsFrom(undefined, undefined, { delayed: ['ARCX'] }, venueOf))
  assert.ok(venuesOnly.grants('SPY') && venuesOnly.delayed('SPY'))
  assert.ok(!venuesOnly.grants('AAPL') && !venuesOnly.grants('TSLA'))
  assert.deepEqual(entitlementsFrom(['*'], undefined, { delayed: ['XNAS'] }, venueOf), { grants: null, delayed: null }, '"*" still grants all real-time')
  assert.deepEqual(entitlementsFrom(undefined, undefined, undefined, venueOf), { grants: null, delayed: null }, 'no claim at all: all, as before')
  for (const bad of [['XNAS'], 'XNAS', null, { realtime: 'XNAS' }, { realtime: [1] }, { live: ['XNAS'] }]) {
    assert.equal(entitlementsFrom(undefined, undefined, bad, venueOf), null, JSON.stringify(bad))
  }
})

test('identity: sub and a user class of pro or nonpro (absent: pro); sub required while sessions are capped', () => {
  assert.deepEqual(identityOf({ sub: 'ann', userClass: 'nonpro' }, 'userClass', false), { ok: true, user: 'ann', userClass: 'nonpro' })
  assert.deepEqual(identityOf({ sub: 'ann' }, 'userClass', true), { ok: true, user: 'ann', userClass: 'pro' })
  assert.deepEqual(identityOf({}, 'userClass', false), { ok: true, user: null, userClass: 'pro' })
  assert.equal(identityOf({}, 'userClass', true).ok, false)
  for (const bad of [{ sub: 'a', userClass: 'retail' }, { sub: 'a', userClass: ['pro'] }, { sub: 'a', userClass: null }, { sub: '' }, { sub: 7 }, { sub: 'x'.repeat(257) }]) {
    assert.equal(identityOf(/** @type {any} */ (bad), 'userClass', false).ok, false, JSON.stringify(bad).slice(0, 60))
  }
})

test('the authenticator: identity and venue grants from a signed token; a bad one is refused with its code', async () => {
  const config = loadGatewayConfig({ ...AUTHED, WSPS_MAX_SESSIONS_PER_USER: '2', WSPS_AUTH_CLASS_CLAIM: 'cls', WSPS_VENUES: 'XNAS=AAPL;XNYS=IBM' })
  const authenticate = /** @type {import('../src/auth.js').Authenticator} */ (createAuthenticator(config, venueTable(config.venues)))
  const ok = await authenticate(await sign({ sub: 'ann', cls: 'nonpro', venues: { delayed: ['XNYS'] }, symbols: ['MSFT'] }))
  assert.ok(ok.ok)
  assert.equal(ok.user, 'ann')
  assert.equal(ok.userClass, 'nonpro')
  assert.ok(ok.grants?.('MSFT') && ok.grants('IBM') && !ok.grants('AAPL'))
  assert.ok(ok.delayed?.('IBM') && !ok.delayed('MSFT'))
  for (const [claims, code] of [
    [{ cls: 'pro' }, ErrorCode.BAD_IDENTITY],
    [{ sub: 'ann', cls: 'student' }, ErrorCode.BAD_IDENTITY],
    [{ sub: 'ann', venues: ['XNAS'] }, ErrorCode.BAD_GRANT]
  ]) {
    const refused = await authenticate(await sign(/** @type {Record<string, unknown>} */ (claims)))
    assert.ok(!refused.ok && refused.code === code, `${JSON.stringify(claims)}: ${JSON.stringify(refused)}`)
  }
  const uncapped = /** @type {import('../src/auth.js').Authenticator} */ (createAuthenticator(loadGatewayConfig(AUTHED)))
  const anonymous = await uncapped(await sign({}))
  assert.ok(anonymous.ok && anonymous.user === null && anonymous.userClass === 'pro', 'no sub while not capped: taken, as before')
  const recording = /** @type {import('../src/auth.js').Authenticator} */ (createAuthenticator(loadGatewayConfig({ ...AUTHED, WSPS_USAGE_RECORDS: 'true' })))
  const unnamed = await recording(await sign({}))
  assert.ok(!unnamed.ok && unnamed.code === ErrorCode.BAD_IDENTITY, 'no sub while usage is recorded: refused')
})

test('settings: the session cap needs auth; the claims must not share a name; the policy is one of two', () => {
  const c = loadGatewayConfig({ ...AUTHED, WSPS_MAX_SESSIONS_PER_USER: '3', WSPS_SESSION_CAP_POLICY: 'close-oldest', WSPS_SESSION_LEASE_MS: '5000' })
  assert.deepEqual([c.maxSessionsPerUser, c.sessionCapPolicy, c.sessionLeaseMs], [3, 'close-oldest', 5000])
  const d = loadGatewayConfig({})
  assert.deepEqual([d.maxSessionsPerUser, d.sessionCapPolicy, d.authClassClaim, d.authVenuesClaim, d.venues], [0, 'refuse', 'userClass', 'venues', ''])
  assert.throws(() => loadGatewayConfig({ WSPS_MAX_SESSIONS_PER_USER: '1' }), /WSPS_AUTH_MODE=none checks no token/)
  assert.throws(() => loadGatewayConfig({ WSPS_USAGE_RECORDS: 'true' }), /WSPS_USAGE_RECORDS .* WSPS_AUTH_MODE=none checks no token/)
  assert.throws(() => loadGatewayConfig({ ...AUTHED, WSPS_SESSION_CAP_POLICY: 'kick' }), ConfigError)
  assert.throws(() => loadGatewayConfig({ ...AUTHED, WSPS_AUTH_CLASS_CLAIM: 'symbols' }), /WSPS_AUTH_CLASS_CLAIM must be a claim name other/)
  assert.throws(() => loadGatewayConfig({ ...AUTHED, WSPS_AUTH_VENUES_CLAIM: 'userClass' }), /must be a claim name other/)
})
