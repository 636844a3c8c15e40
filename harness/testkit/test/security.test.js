// Security on real processes: JWT at upgrade (HS256 and JWKS) with
// per-symbol entitlements and expiry, the Origin allowlist, Redis AUTH, and
// secrets kept out of the logs even at debug level.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { SignJWT, UnsecuredJWT, exportJWK, generateKeyPair } from 'jose'
import { CloseCode, ErrorCode } from '@wsps/protocol'
import { GATEWAY_MAIN, TestClient, getJson, redisCommand, sleep, startFetcher, startGateway, startRedis, startService, waitFor } from '../src/index.js'

const SECRET = 'hs256-secret-for-tests-0123456789-abcdef'
const ISSUER = 'https://issuer.test'
const AUDIENCE = 'wsps'
const REDIS_PASSWORD = 'redis-pw-Xq7-never-in-logs'
const UPSTREAM_TOKEN = 'upstream-token-Zr4-never-in-logs'
const ORIGIN = 'https://app.example.com'

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis
/** @type {Awaited<ReturnType<typeof startRedis>>} */
let authRedis
/** @type {import('../src/index.js').ServiceHandle[]} */
const procs = []
/** @type {TestClient[]} */
const clients = []
/** @type {import('node:http').Server[]} */
const servers = []
const dir = mkdtempSync(join(tmpdir(), 'wsps-security-'))

/** @type {import('../src/index.js').ServiceHandle} */
let hsGw
/** @type {import('../src/index.js').ServiceHandle} */
let jwksGw
/** @type {import('../src/index.js').ServiceHandle} */
let originGw
/** @type {{privateKey: CryptoKey, kid: string}} */
let signingKey
/** @type {{count: number, up: boolean}} */
const jwksServer = { count: 0, up: true }
let jwksUrl = ''
let slowJwksUrl = ''

/**
 * @param {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void} handler
 * @returns {Promise<string>} base URL
 */
async function httpServer (handler) {
  const srv = createServer(handler)
  servers.push(srv)
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(undefined)))
  return `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (srv.address()).port}`
}

/**
 * @param {string} main
 * @param {Record<string, string | number>} env
 * @param {{ready?: boolean, name?: string}} [options]
 */
async function service (main, env, options) {
  const p = await startService(main, env, options)
  procs.push(p)
  return p
}

before(async () => {
  redis = await startRedis()
  const pair = await generateKeyPair('ES256')
  signingKey = { privateKey: pair.privateKey, kid: 'test-key-1' }
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: signingKey.kid, alg: 'ES256', use: 'sig' }
  const jwksBase = await httpServer((req, res) => {
    jwksServer.count++
    if (!jwksServer.up) {
      res.writeHead(503).end()
      return
    }
    // /slow/...: the identity provider takes its time (the first verify waits for it).
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })),
      req.url?.startsWith('/slow/') ? 1500 : 0)
  })
  jwksUrl = `${jwksBase}/.well-known/jwks.json`
  slowJwksUrl = `${jwksBase}/slow/jwks.json`
  const secretFile = join(dir, 'hs256-secret')
  writeFileSync(secretFile, `${SECRET}\n`)
  const started = await Promise.all([
    startGateway(redis.url, { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET_FILE: secretFile, WSPS_AUTH_ISSUER: ISSUER, WSPS_AUTH_AUDIENCE: AUDIENCE }),
    startGateway(redis.url, { WSPS_AUTH_MODE: 'jwks', WSPS_AUTH_JWKS_URL: jwksUrl }),
    startGateway(redis.url, { WSPS_ALLOWED_ORIGINS: `${ORIGIN},https://other.example.com` }),
    startFetcher(redis.url)
  ])
  procs.push(...started)
  ;[hsGw, jwksGw, originGw] = started
})

after(async () => {
  for (const c of clients) c.ws.terminate()
  await Promise.all(procs.map((p) => p.stop('SIGKILL')))
  for (const s of servers) s.close()
  await redis?.close()
  await authRedis?.close()
  rmSync(dir, { recursive: true, force: true })
})

/**
 * @param {Record<string, unknown>} claims
 * @param {{secret?: string, exp?: number | string, iss?: string, aud?: string, nbf?: number}} [options]
 */
function hsToken (claims, { secret = SECRET, exp = '1h', iss = ISSUER, aud = AUDIENCE, nbf } = {}) {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setIssuer(iss).setAudience(aud).setExpirationTime(exp)
  if (nbf !== undefined) jwt.setNotBefore(nbf)
  return jwt.sign(new TextEncoder().encode(secret))
}

/**
 * @param {string} url
 * @param {string | null} token
 */
async function connectWith (url, token) {
  const c = await TestClient.connect(url, token ? { headers: { authorization: `Bearer ${token}` } } : undefined)
  clients.push(c)
  return c
}

/**
 * @param {string} url
 * @param {string | null} token
 * @returns {Promise<number>} the HTTP status of the refused upgrade
 */
async function refusedWith (url, token) {
  try {
    const c = await connectWith(url, token)
    c.ws.terminate()
    return 101
  } catch (err) {
    return /** @type {any} */ (err).status ?? 0
  }
}

test('HS256: a valid token in the header is admitted; in the query of /ws it is refused (auth-lifecycle.test.js has the first frame)', async () => {
  const token = await hsToken({ sub: 'alice' })
  const a = await connectWith(hsGw.wsUrl, token)
  assert.equal((await a.sub(['AAPL'])).op, 'ack')
  assert.equal(await refusedWith(`${hsGw.wsUrl}?token=${token}`, null), 401)
  a.ws.terminate()
})

test('HS256: malformed, forged, expired, not-yet-valid, wrong-issuer/audience and alg=none tokens in the header get 401', async () => {
  const now = Math.floor(Date.now() / 1000)
  const bad = {
    garbage: 'not.a.jwt',
    'wrong secret': await hsToken({ sub: 'eve' }, { secret: 'another-secret-of-at-least-32-bytes!!' }),
    expired: await hsToken({ sub: 'alice' }, { exp: now - 60 }),
    'not yet valid': await hsToken({ sub: 'alice' }, { nbf: now + 3600 }),
    'wrong issuer': await hsToken({ sub: 'alice' }, { iss: 'https://evil.test' }),
    'wrong audience': await hsToken({ sub: 'alice' }, { aud: 'other' }),
    'alg none': new UnsecuredJWT({ sub: 'alice' }).setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime('1h').encode(),
    'tampered claims': await (async () => {
      const [h, , s] = (await hsToken({ sub: 'alice', symbols: ['AAPL'] })).split('.')
      const forged = Buffer.from(JSON.stringify({ sub: 'alice', symbols: ['*'], iss: ISSUER, aud: AUDIENCE, exp: now + 3600 })).toString('base64url')
      return `${h}.${forged}.${s}`
    })()
  }
  for (const [name, token] of Object.entries(bad)) {
    assert.equal(await refusedWith(hsGw.wsUrl, token), 401, name)
  }
  const m = await hsGw.metrics()
  assert.ok(m['wsps_gateway_upgrades_total{result="unauthorized"}'] >= Object.keys(bad).length)
})

test('entitlements: exact symbols and `*`-suffix prefixes; anything else is NOT_ENTITLED and changes nothing', async () => {
  const c = await connectWith(hsGw.wsUrl, await hsToken({ sub: 'bob', symbols: ['AAPL', 'MS*', 'BRK.*'] }))
  const ok = await c.sub(['AAPL', 'MSFT', 'MSTR', 'BRK.B'])
  assert.deepEqual(ok.op, 'ack')
  await c.waitQuotes('MSFT', 1)
  const denied = await c.sub(['GOOG', 'MSFT', 'AAP', 'XMS'])
  assert.equal(denied.op, 'error')
  assert.equal(denied.code, ErrorCode.NOT_ENTITLED)
  assert.deepEqual(denied.symbols, ['GOOG', 'AAP', 'XMS'])
  const held = await c.unsub(['NONE'])
  assert.deepEqual(held.symbols.sort(), ['AAPL', 'BRK.B', 'MSFT', 'MSTR'], 'the refused request changed nothing')
  assert.deepEqual(c.problems.filter((p) => !p.includes('unsubscribed')), [])

  const all = await connectWith(hsGw.wsUrl, await hsToken({ sub: 'carol' }))
  assert.equal((await all.sub(['GOOG'])).op, 'ack', 'no claim: every symbol')
  const star = await connectWith(hsGw.wsUrl, await hsToken({ sub: 'dan', symbols: ['*'] }))
  assert.equal((await star.sub(['GOOG'])).op, 'ack', '"*": every symbol')
  const none = new TestClient(hsGw.wsUrl, { headers: { authorization: `Bearer ${await hsToken({ sub: 'erin', symbols: 'AAPL' })}` } })
  none.opened.catch(() => {})
  await assert.rejects(none.opened, (/** @type {any} */ err) => err.status === 401, 'a claim that is not an array rejects the token (BAD_GRANT)')
  const empty = await connectWith(hsGw.wsUrl, await hsToken({ sub: 'finn', symbols: [] }))
  assert.equal((await empty.sub(['AAPL'])).code, ErrorCode.NOT_ENTITLED, 'an empty list grants nothing')
  for (const x of [c, all, star, none, empty]) x.ws.terminate()
})

test('a token that expires during the session closes the socket with 4002 at expiry', async () => {
  const exp = Math.floor(Date.now() / 1000) + 3
  const c = await connectWith(hsGw.wsUrl, await hsToken({ sub: 'gina' }, { exp }))
  await c.sub(['AAPL'])
  const { code } = await Promise.race([c.closedPromise, sleep(10_000).then(() => ({ code: -1 }))])
  assert.equal(code, CloseCode.TOKEN_EXPIRED)
  const at = Date.now()
  assert.ok(at >= exp * 1000 - 50, `closed ${exp * 1000 - at} ms before exp`)
  assert.ok(at <= exp * 1000 + 3000, `closed ${at - exp * 1000} ms after exp`)
})

test('a token valid for 30 days keeps its session open', async () => {
  const c = await connectWith(hsGw.wsUrl, await hsToken({ sub: 'hank' }, { exp: '30d' }))
  await sleep(1000)
  assert.equal(c.closed, null, `closed with ${c.closed?.code}`)
  c.ws.terminate()
})

test('JWKS: tokens signed by the published key are admitted, with entitlements; others get 401', async () => {
  const sign = (/** @type {Record<string, unknown>} */ claims, /** @type {CryptoKey} */ key = signingKey.privateKey, kid = signingKey.kid, exp = /** @type {number | string} */ ('1h')) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid }).setExpirationTime(exp).sign(key)
  const c = await connectWith(jwksGw.wsUrl, await sign({ sub: 'ivy', symbols: ['AA*'] }))
  assert.equal((await c.sub(['AAPL'])).op, 'ack')
  assert.equal((await c.sub(['MSFT'])).code, ErrorCode.NOT_ENTITLED)
  c.ws.terminate()
  assert.ok(jwksServer.count >= 1, 'the gateway fetched the JWKS')

  const stranger = await generateKeyPair('ES256')
  assert.equal(await refusedWith(jwksGw.wsUrl, await sign({ sub: 'eve' }, stranger.privateKey)), 401, 'same kid, other key')
  assert.equal(await refusedWith(jwksGw.wsUrl, await sign({ sub: 'eve' }, stranger.privateKey, 'unknown-kid')), 401, 'unknown kid')
  assert.equal(await refusedWith(jwksGw.wsUrl, await hsToken({ sub: 'eve' })), 401, 'an HS256 token where keys are asymmetric')
  assert.equal(await refusedWith(jwksGw.wsUrl, await sign({ sub: 'eve' }, signingKey.privateKey, signingKey.kid, Math.floor(Date.now() / 1000) - 10)), 401, 'expired')

  // The JWKS endpoint failing must not crash the gateway or admit anyone.
  jwksServer.up = false
  assert.equal(await refusedWith(jwksGw.wsUrl, await sign({ sub: 'eve' }, stranger.privateKey, 'rotated-kid')), 401)
  jwksServer.up = true
  assert.equal(jwksGw.proc.exitCode, null)
  const again = await connectWith(jwksGw.wsUrl, await sign({ sub: 'ivy' }))
  assert.equal((await again.sub(['AAPL'])).op, 'ack', 'cached keys keep working')
  again.ws.terminate()
})

test('WSPS_MAX_CONNECTIONS holds while upgrades wait for the JWKS', async (t) => {
  const max = 10
  const g = await service(GATEWAY_MAIN, { WSPS_REDIS_URL: redis.url, WSPS_AUTH_MODE: 'jwks', WSPS_AUTH_JWKS_URL: slowJwksUrl, WSPS_MAX_CONNECTIONS: max, WSPS_DRAIN_MS: 200 }, { name: 'gw-jwks-max' })
  const token = await new SignJWT({ sub: 'mob' }).setProtectedHeader({ alg: 'ES256', kid: signingKey.kid }).setExpirationTime('1h').sign(signingKey.privateKey)
  // 40 upgrades at once, all waiting for the same (slow) first JWKS fetch.
  const attempts = await Promise.allSettled(Array.from({ length: 40 }, () => connectWith(g.wsUrl, token)))
  const admitted = attempts.filter((a) => a.status === 'fulfilled').length
  const m = await g.metrics()
  t.diagnostic(`${admitted} of 40 admitted with WSPS_MAX_CONNECTIONS=${max}; gateway holds ${m.wsps_gateway_connections}`)
  assert.ok(m.wsps_gateway_connections <= max, `${m.wsps_gateway_connections} connections open, limit ${max}`)
})

test('Origin allowlist: listed origins are admitted, others and a missing Origin get 403', async () => {
  const ok = await TestClient.connect(originGw.wsUrl, { origin: ORIGIN })
  clients.push(ok)
  assert.equal((await ok.sub(['AAPL'])).op, 'ack')
  for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.test', 'http://app.example.com', 'null', undefined]) {
    await assert.rejects(TestClient.connect(originGw.wsUrl, origin === undefined ? {} : { origin }), (/** @type {any} */ err) => err.status === 403, String(origin))
  }
  const m = await originGw.metrics()
  assert.ok(m['wsps_gateway_upgrades_total{result="bad_origin"}'] >= 5)
  ok.ws.terminate()
})

test('Redis AUTH: gateway and fetcher authenticate by WSPS_REDIS_PASSWORD or _FILE; a wrong password is not ready but alive; no secret in debug logs', async () => {
  authRedis = await startRedis({ password: REDIS_PASSWORD })
  assert.match(await redisCommand(authRedis.port, 'PING'), /NOAUTH/, 'the server requires AUTH')
  const pwFile = join(dir, 'redis-password')
  writeFileSync(pwFile, `${REDIS_PASSWORD}\n`)
  const tokenFile = join(dir, 'upstream-token')
  writeFileSync(tokenFile, UPSTREAM_TOKEN)
  /** @type {string[]} */
  const upstreamAuth = []
  const upstream = await httpServer((req, res) => {
    upstreamAuth.push(String(req.headers.authorization))
    const symbols = decodeURIComponent(new URL(req.url ?? '/', 'http://x').searchParams.get('s') ?? '').split(',')
    // Every other request fails, so the error paths log too.
    if (upstreamAuth.length % 2 === 0) {
      res.writeHead(500).end('boom')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify(symbols.map((symbol) => ({ symbol, bid: 1, ask: 2, last: 1.5 }))))
  })
  const hsSecretFile = join(dir, 'hs256-secret-2')
  writeFileSync(hsSecretFile, SECRET)
  const common = { WSPS_LOG_LEVEL: 'debug' }
  const [gwFile, gwEnv, fetcher] = await Promise.all([
    service(GATEWAY_MAIN, { ...common, WSPS_DRAIN_MS: 200, WSPS_REDIS_URL: authRedis.url, WSPS_REDIS_PASSWORD_FILE: pwFile, WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET, WSPS_AUTH_ISSUER: ISSUER, WSPS_AUTH_AUDIENCE: AUDIENCE }, { name: 'gw-pwfile' }),
    service(GATEWAY_MAIN, { ...common, WSPS_DRAIN_MS: 200, WSPS_REDIS_URL: `redis://:${encodeURIComponent(REDIS_PASSWORD)}@127.0.0.1:${authRedis.port}`, WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET_FILE: hsSecretFile }, { name: 'gw-pwurl' }),
    startFetcher(authRedis.url, {
      ...common,
      WSPS_REDIS_PASSWORD: REDIS_PASSWORD,
      WSPS_PROVIDER: 'http',
      WSPS_UPSTREAM_URL: `${upstream}/quotes?s={symbols}`,
      WSPS_UPSTREAM_TOKEN_FILE: tokenFile,
      WSPS_FETCH_INTERVAL_MS: 1000,
      WSPS_SCHEDULE_TICK_MS: 50,
      WSPS_UPSTREAM_TIMEOUT_MS: 300,
      WSPS_UPSTREAM_RETRIES: 1,
      WSPS_UPSTREAM_BREAKER_THRESHOLD: 1000
    })
  ])
  procs.push(fetcher)
  const [gwWrong, gwNone] = await Promise.all([
    service(GATEWAY_MAIN, { ...common, WSPS_REDIS_URL: authRedis.url, WSPS_REDIS_PASSWORD: 'not-the-password' }, { ready: false, name: 'gw-wrongpw' }),
    service(GATEWAY_MAIN, { ...common, WSPS_REDIS_URL: authRedis.url }, { ready: false, name: 'gw-nopw' })
  ])
  /** Everything each process printed from here on (startService keeps only the tail). */
  const logs = new Map([gwFile, gwEnv, fetcher, gwWrong, gwNone].map((p) => {
    const all = [...p.logs]
    p.proc.stdout?.on('data', (d) => all.push(String(d)))
    p.proc.stderr?.on('data', (d) => all.push(String(d)))
    return [p, all]
  }))

  // Data flows through the password-protected Redis, with the upstream token sent.
  const token = await hsToken({ sub: 'judy', symbols: ['SEC*'] })
  const c = await connectWith(gwFile.wsUrl, token)
  await c.sub(['SEC1', 'SEC2'])
  await c.waitQuotes('SEC1', 2, 15_000)
  assert.ok(upstreamAuth.includes(`Bearer ${UPSTREAM_TOKEN}`), 'the fetcher sends the upstream token')
  assert.equal(await refusedWith(gwFile.wsUrl, await hsToken({ sub: 'eve' }, { secret: 'x'.repeat(40) })), 401)
  const d = await connectWith(gwEnv.wsUrl, await new SignJWT({ sub: 'kim' }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(new TextEncoder().encode(SECRET)))
  await d.sub(['SEC1'])
  await d.waitQuotes('SEC1', 2, 15_000)
  // A frame over maxPayload: the gateway logs the socket error at debug level.
  const big = await connectWith(gwFile.wsUrl, token)
  big.ws.send('x'.repeat(5000))
  assert.equal((await big.closedPromise).code, CloseCode.MESSAGE_TOO_BIG)

  // Wrong or no password: alive, not ready, and it says why.
  for (const g of [gwWrong, gwNone]) {
    await waitFor(async () => (await getJson(`${g.url}/readyz`)).status === 503, { message: `${g.name} not ready` })
    assert.equal((await getJson(`${g.url}/healthz`)).status, 200)
    assert.equal(g.proc.exitCode, null)
  }
  await waitFor(() => (logs.get(gwWrong) ?? []).join('').match(/WRONGPASS|invalid username-password/), { message: 'the wrong password is reported' })
  await waitFor(() => (logs.get(gwNone) ?? []).join('').match(/NOAUTH/), { message: 'the missing password is reported' })

  // Shut down cleanly (the stop path logs too), then search every line.
  c.ws.terminate()
  d.ws.terminate()
  await Promise.all([gwFile, gwEnv, fetcher, gwWrong, gwNone].map((p) => p.stop('SIGTERM')))
  const secrets = { REDIS_PASSWORD, UPSTREAM_TOKEN, SECRET, 'the JWT': token, 'the JWT signature': token.split('.')[2] }
  let lines = 0
  for (const [p, out] of logs) {
    const text = out.join('')
    lines += text.split('\n').length
    assert.match(text, /"logLevel":"debug"/, `${p.name} ran at debug level`)
    for (const [name, value] of Object.entries(secrets)) {
      assert.ok(!text.includes(value), `${p.name} logged ${name}`)
      assert.ok(!text.includes(encodeURIComponent(value)), `${p.name} logged ${name} (URL-encoded)`)
    }
  }
  assert.ok(lines > 20, `${lines} log lines searched`)
  assert.match([...logs.values()].flat().join(''), /"level":20/, 'debug lines were written (and searched)')
})

test('Redis ACL user: a gateway that logs in as WSPS_REDIS_USERNAME is ready; the default user is refused', async () => {
  const aclRedis = await startRedis({ username: 'wsps-gw', password: REDIS_PASSWORD })
  try {
    assert.match(await redisCommand(aclRedis.port, `AUTH ${REDIS_PASSWORD}`), /WRONGPASS|invalid username-password/, 'the default user cannot log in')
    const gw = await service(GATEWAY_MAIN, { WSPS_REDIS_URL: aclRedis.url, WSPS_REDIS_USERNAME: 'wsps-gw', WSPS_REDIS_PASSWORD: REDIS_PASSWORD }, { name: 'gw-acl' })
    assert.equal((await getJson(`${gw.url}/readyz`)).status, 200)
  } finally {
    await aclRedis.close()
  }
})
