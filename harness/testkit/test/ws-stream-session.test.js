// The ws-stream upstream session on real processes: a fake vendor speaking
// Alpaca's (or Polygon's) documented dialect (fake-vendor.js, its own
// process), redis-server, ws-stream fetchers, a gateway and WebSocket
// clients. What a real vendor does besides the happy path: refuse the
// credentials, refuse a connection over the key's limit, take credentials in
// upgrade headers; and what the fetcher must never do: hammer it, strand
// symbols on a refused replica, print a credential.
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, afterEach, before, test } from 'node:test'
import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { ClientPool, sleep, startFakeVendor, startFetcher, startGateway, startRedis, waitFor } from '../src/index.js'

const KEY = 'AKFAKEKEYID0042'
const SECRET = 'fakesecret-9f8e7d6c5b4a'

// The Alpaca configuration of docs/feeding.md (quotes only: the mapping of
// several record kinds is another test's subject).
const ALPACA = {
  WSPS_PROVIDER: 'ws-stream',
  WSPS_STREAM_KEY: KEY,
  WSPS_STREAM_SECRET: SECRET,
  WSPS_STREAM_AUTH: '{"action":"auth","key":{key},"secret":{secret}}',
  WSPS_STREAM_AUTH_REPLIES: '{"ok":{"T":"success","msg":"authenticated"},"refused":{"T":"error"},"limited":{"T":"error","code":406},"code":"code","message":"msg"}',
  WSPS_STREAM_SUBSCRIBE: '{"action":"subscribe","quotes":{symbols}}',
  WSPS_STREAM_UNSUBSCRIBE: '{"action":"unsubscribe","quotes":{symbols}}',
  WSPS_STREAM_MAPPING: '{"recordMatch":{"T":"q"},"fields":{"symbol":"S","bid":"bp","ask":"ap","bidSize":"bs","askSize":"as","ts":"t"}}',
  WSPS_STREAM_BACKOFF_MS: 100,
  WSPS_STREAM_AUTH_BACKOFF_MS: 4000,
  WSPS_LOG_LEVEL: 'info'
}

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis
/** @type {import('../src/index.js').ServiceHandle} */
let gateway
/** @type {Redis} */
let r
const keys = redisKeys('wsps')
const clients = new ClientPool()
/** Processes a test started, stopped after it. @type {{stop(): Promise<unknown>}[]} */
let started = []

before(async () => {
  redis = await startRedis()
  r = new Redis(redis.url)
  gateway = await startGateway(redis.url, { WSPS_DEMAND_LEASE_MS: 1500, WSPS_UNSUBSCRIBE_DELAY_MS: 100 })
})

afterEach(async () => {
  clients.terminate()
  await Promise.all(started.map((p) => p.stop()))
  started = []
  // Ownerships and connection slots of this test's fetchers go with them.
  await r.del(keys.streamOwner, keys.streamLease, keys.streamToken, keys.streamConnections)
})

after(async () => {
  await gateway.stop()
  r.disconnect()
  await redis.close()
})

/** @param {import('../src/services.js').FakeVendorOptions} options */
async function vendorWith (options) {
  const v = await startFakeVendor(options)
  started.push(v)
  return v
}

/** @param {Record<string, string | number>} env */
async function fetcherWith (env) {
  const f = await startFetcher(redis.url, env)
  started.push(f)
  return f
}

/**
 * @param {import('../src/index.js').ServiceHandle} f
 * @param {string} series
 */
const metric = async (f, series) => (await f.metrics())[series] ?? 0

/**
 * The JSON log lines a service printed (pino), others left out.
 * @param {import('../src/index.js').ServiceHandle} f
 * @returns {Record<string, any>[]}
 */
const logLines = (f) => f.logs.flatMap((l) => { try { return [JSON.parse(l)] } catch { return [] } })

/**
 * The log line of a vendor's refusal, which the fetcher logs by name (`code`)
 * with the vendor's own code and message.
 *
 * @param {import('../src/index.js').ServiceHandle} f
 * @param {string} code
 * @param {{vendorCode: string, vendorMessage: string}} vendor
 */
function refusalLine (f, code, { vendorCode, vendorMessage }) {
  const line = logLines(f).find((l) => l.code === code)
  assert.ok(line, `${code}: the refusal is logged by name`)
  assert.equal(line.vendorCode, vendorCode)
  assert.equal(line.vendorMessage, vendorMessage)
  return line
}

/**
 * @param {Awaited<ReturnType<typeof startFakeVendor>>} v
 * @param {string} action
 */
const eventsOf = async (v, action) => (await v.state()).events.filter((e) => e.action === action)

test('problem 1: a vendor that accepts the socket, then refuses the credentials and closes, is not hammered: the refusal is counted (402), logged with the vendor\'s message and the close code, and retried after the long auth backoff', async (t) => {
  const vendor = await vendorWith({ key: KEY, secret: SECRET, closeOnRefusal: true })
  const f = await fetcherWith({ ...ALPACA, WSPS_STREAM_URL: vendor.streamUrl, WSPS_STREAM_SECRET: 'not-the-secret' })
  const c = await clients.connect(gateway.wsUrl)
  await c.sub(['AAPL'])
  await waitFor(async () => (await eventsOf(vendor, 'auth-failed')).length > 0, { message: 'a refusal' })
  const first = (await eventsOf(vendor, 'auth-failed'))[0].at
  // Long enough for one retry after the 4 s auth backoff (up to 4.8 s with jitter).
  await sleep(Math.max(0, first + 6000 - Date.now()))
  const connects = await eventsOf(vendor, 'connect')
  t.diagnostic(`${connects.length} connections in the 6 s after the first refusal (first version: ~60 in 12 s)`)
  assert.ok(connects.length <= 3, `${connects.length} connections in 6 s`)
  for (let i = 1; i < connects.length; i++) assert.ok(connects[i].at - connects[i - 1].at >= 4000, 'retried only after WSPS_STREAM_AUTH_BACKOFF_MS')
  assert.ok(await metric(f, 'wsps_fetcher_stream_auth_total{result="refused"}') >= 1)
  assert.deepEqual(await eventsOf(vendor, 'subscribe'), [], 'never subscribed without the vendor\'s ok')
  assert.equal(await metric(f, 'wsps_fetcher_stream_auth_total{result="ok"}'), 0)
  assert.equal(await metric(f, 'wsps_fetcher_stream_session_state{state="refused"}'), 1)
  assert.equal(await metric(f, 'wsps_fetcher_stream_symbols'), 0)
  const line = refusalLine(f, 'WSPS_ERR_STREAM_AUTH_REFUSED', { vendorCode: '402', vendorMessage: 'auth failed' })
  assert.equal(line.closeCode, 1008, 'the vendor\'s close code')
  assert.equal(line.closeReason, 'auth failed')
  assert.ok(!f.logs.some((l) => l.includes('subscribed upstream')))
})

test('problem 1: without auth answers configured, a vendor that accepts and drops every connection is retried ever more slowly (the backoff is reset only once the connection proved itself)', async (t) => {
  const vendor = await vendorWith({ key: KEY, closeOnRefusal: true })
  const f = await fetcherWith({
    WSPS_PROVIDER: 'ws-stream',
    WSPS_STREAM_URL: vendor.streamUrl,
    WSPS_STREAM_AUTH: '{"action":"auth","key":{token}}',
    WSPS_STREAM_TOKEN: 'wrong-key',
    WSPS_STREAM_BACKOFF_MS: 100
  })
  const from = Date.now()
  await sleep(6000)
  const connects = await eventsOf(vendor, 'connect')
  t.diagnostic(`${connects.length} connections in ${Date.now() - from} ms; gaps ${connects.slice(1).map((e, i) => e.at - connects[i].at).join(', ')} ms`)
  // 100, 200, 400, ... ms with jitter down to half: at most ~8 attempts in 6 s.
  assert.ok(connects.length <= 10, `${connects.length} connections in 6 s`)
  const gaps = connects.slice(1).map((e, i) => e.at - connects[i].at)
  assert.ok(gaps[gaps.length - 1] >= 800, `the last gap (${gaps[gaps.length - 1]} ms) grew`)
  assert.ok(await metric(f, 'wsps_fetcher_stream_reconnects_total') >= 3)
})

test('problem 2: a replica whose credentials are refused on a socket the vendor keeps open holds no symbols; the healthy replica serves them all', async () => {
  const vendor = await vendorWith({ key: KEY, secret: SECRET })
  const bad = await fetcherWith({ ...ALPACA, WSPS_STREAM_URL: vendor.streamUrl, WSPS_STREAM_SECRET: 'not-the-secret', WSPS_STREAM_AUTH_BACKOFF_MS: 60_000 })
  await waitFor(async () => (await eventsOf(vendor, 'auth-failed')).length >= 1, { message: 'the bad replica refused' })
  const good = await fetcherWith({ ...ALPACA, WSPS_STREAM_URL: vendor.streamUrl })
  const c = await clients.connect(gateway.wsUrl)
  const symbols = ['AAPL', 'MSFT', 'IBM', 'ORCL', 'NVDA']
  await c.sub(symbols)
  for (const s of symbols) await c.waitQuotes(s, 3, 8000)
  const owners = await r.hgetall(keys.streamOwner)
  assert.deepEqual(Object.keys(owners).sort(), [...symbols].sort())
  assert.ok(Object.values(owners).every((o) => o === good.name), `every symbol held by the healthy replica: ${JSON.stringify(owners)}`)
  assert.equal(await metric(bad, 'wsps_fetcher_stream_symbols'), 0)
  assert.equal(await metric(bad, 'wsps_fetcher_stream_connected'), 0, 'the refused replica closed its socket')
  assert.equal(await metric(bad, 'wsps_fetcher_stream_session_state{state="refused"}'), 1)
  assert.equal(await metric(good, 'wsps_fetcher_stream_session_state{state="ready"}'), 1)
  assert.equal(await metric(good, 'wsps_fetcher_stream_auth_total{result="ok"}'), 1)
  assert.ok(await metric(good, 'wsps_fetcher_stream_last_record_age_seconds') < 5, 'the healthy replica streams')
  assert.deepEqual(c.problems, [])
})

test('a vendor that never answers the authentication: counted as timeout, the connection dropped and retried; ready once the vendor answers', async () => {
  const vendor = await vendorWith({ key: KEY, secret: SECRET })
  await vendor.configure({ authSilent: true })
  const f = await fetcherWith({ ...ALPACA, WSPS_STREAM_URL: vendor.streamUrl, WSPS_STREAM_AUTH_TIMEOUT_MS: 1000 })
  await waitFor(async () => (await metric(f, 'wsps_fetcher_stream_auth_total{result="timeout"}')) >= 1, { message: 'an auth timeout' })
  assert.deepEqual(await eventsOf(vendor, 'subscribe'), [])
  assert.ok(logLines(f).some((l) => l.code === 'WSPS_ERR_STREAM_AUTH_TIMEOUT'))
  await vendor.configure({ authSilent: false })
  await waitFor(async () => (await metric(f, 'wsps_fetcher_stream_session_state{state="ready"}')) === 1, { message: 'ready after the vendor answered' })
  const c = await clients.connect(gateway.wsUrl)
  await c.sub(['AAPL'])
  await c.waitQuotes('AAPL', 3)
})

test('problem 5: with WSPS_STREAM_MAX_CONNECTIONS=1 two replicas hold one vendor connection; the standby takes over after kill -9 within the lease and a tick', async (t) => {
  const vendor = await vendorWith({ key: KEY, secret: SECRET, maxConnections: 1 })
  const env = { ...ALPACA, WSPS_STREAM_URL: vendor.streamUrl, WSPS_STREAM_MAX_CONNECTIONS: 1 }
  const fetchers = [await fetcherWith(env), await fetcherWith(env)]
  const c = await clients.connect(gateway.wsUrl)
  await c.sub(['AAPL', 'MSFT'])
  await c.waitQuotes('AAPL', 3)
  await c.waitQuotes('MSFT', 3)
  // A few ticks: the standby must stay away all along.
  await sleep(2500)
  const s = await vendor.state()
  assert.equal(s.connections, 1, 'one vendor connection')
  assert.equal(s.events.filter((e) => e.action === 'connect').length, 1, 'the standby never tried')
  assert.equal(s.events.filter((e) => e.action === 'limited').length, 0)
  const standing = []
  for (const f of fetchers) if (await metric(f, 'wsps_fetcher_stream_session_state{state="standby"}') === 1) standing.push(f)
  assert.equal(standing.length, 1, 'one replica stands by')
  const holder = /** @type {import('../src/index.js').ServiceHandle} */ (fetchers.find((f) => !standing.includes(f)))
  const killedAt = Date.now()
  await holder.kill()
  await waitFor(async () => (await vendor.state()).authed === 1 && (await metric(standing[0], 'wsps_fetcher_stream_symbols')) === 2,
    { timeout: 3000 + 1000 + 6000, message: 'the standby connected and took the symbols (lease 3 s + tick 1 s, and slack for a busy machine)' })
  t.diagnostic(`standby connected and subscribed ${Date.now() - killedAt} ms after the kill (lease 3000 + tick 1000 by design)`)
  const seen = c.seqs.get('AAPL')?.length ?? 0
  await c.waitQuotes('AAPL', seen + 3)
  const after = await vendor.state()
  assert.equal(after.events.filter((e) => e.action === 'limited').length, 0, 'never two connections at once')
  assert.deepEqual(c.problems, [])
})

test('problem 5: a connection-limit refusal (406) is recognised, counted as limited, logged as such, and backed off long', async () => {
  const vendor = await vendorWith({ key: KEY, secret: SECRET, maxConnections: 1 })
  const first = await fetcherWith({ ...ALPACA, WSPS_STREAM_URL: vendor.streamUrl })
  await waitFor(async () => (await vendor.state()).authed === 1, { message: 'first replica authenticated' })
  const second = await fetcherWith({ ...ALPACA, WSPS_STREAM_URL: vendor.streamUrl })
  await waitFor(async () => (await eventsOf(vendor, 'limited')).length >= 1, { message: 'the vendor refused the second connection' })
  await sleep(2500)
  assert.equal((await eventsOf(vendor, 'limited')).length, 1, 'no retry before WSPS_STREAM_AUTH_BACKOFF_MS')
  assert.equal(await metric(second, 'wsps_fetcher_stream_auth_total{result="limited"}'), 1)
  assert.equal(await metric(second, 'wsps_fetcher_stream_session_state{state="limited"}'), 1)
  refusalLine(second, 'WSPS_ERR_STREAM_CONNECTION_LIMIT', { vendorCode: '406', vendorMessage: 'connection limit exceeded' })
  assert.equal(await metric(first, 'wsps_fetcher_stream_session_state{state="ready"}'), 1, 'the first replica is untouched')
})

test('problem 6: credentials from secret settings and upgrade headers (Alpaca APCA-API-*), the secret from a file; neither appears in any log line', async () => {
  const vendor = await vendorWith({ key: KEY, secret: SECRET, closeOnRefusal: true })
  const dir = mkdtempSync(join(tmpdir(), 'wsps-secret-'))
  writeFileSync(join(dir, 'secret'), `${SECRET}\n`)
  const env = {
    ...ALPACA,
    WSPS_STREAM_URL: vendor.streamUrl,
    WSPS_STREAM_AUTH: '',
    WSPS_STREAM_SECRET: '',
    WSPS_STREAM_SECRET_FILE: join(dir, 'secret'),
    WSPS_STREAM_HEADERS: '{"APCA-API-KEY-ID":"{key}","APCA-API-SECRET-KEY":"{secret}"}',
    WSPS_LOG_LEVEL: 'debug'
  }
  const f = await fetcherWith(env)
  const c = await clients.connect(gateway.wsUrl)
  await c.sub(['AAPL'])
  await c.waitQuotes('AAPL', 3)
  const s = await vendor.state()
  assert.deepEqual(s.conns.map((x) => x.via), ['headers'], 'authenticated by the upgrade headers alone')
  // A refusal and a reconnect put the error paths in the log too.
  await vendor.configure({ key: 'another-key' })
  await vendor.misbehave('drop')
  await waitFor(async () => (await metric(f, 'wsps_fetcher_stream_auth_total{result="refused"}')) === 1, { message: 'refused after the key changed' })
  await f.stop()
  const logs = f.logs.join('\n')
  assert.match(logs, /"msg":"starting"/, 'the start-up config log is in what was captured')
  assert.match(logs, /WSPS_ERR_STREAM_AUTH_REFUSED/)
  assert.ok(!logs.includes(KEY), 'the key id is never logged')
  assert.ok(!logs.includes(SECRET), 'the secret is never logged')
})

test('problem 6: the key id is substituted into the auth message from WSPS_STREAM_KEY and kept out of the start-up log; Polygon\'s dialect (auth params, auth_success)', async () => {
  const vendor = await vendorWith({ key: KEY, dialect: 'polygon' })
  const f = await fetcherWith({
    WSPS_PROVIDER: 'ws-stream',
    WSPS_STREAM_URL: vendor.streamUrl,
    WSPS_STREAM_KEY: KEY,
    WSPS_STREAM_AUTH: '{"action":"auth","params":{key}}',
    WSPS_STREAM_AUTH_REPLIES: '{"ok":{"ev":"status","status":"auth_success"},"refused":{"ev":"status","status":"auth_failed"},"limited":{"ev":"status","status":"max_connections"},"code":"status","message":"message"}',
    WSPS_LOG_LEVEL: 'info'
  })
  await waitFor(async () => (await eventsOf(vendor, 'auth')).length === 1, { message: 'authenticated' })
  await waitFor(async () => (await metric(f, 'wsps_fetcher_stream_session_state{state="ready"}')) === 1, { message: 'ready' })
  assert.equal(await metric(f, 'wsps_fetcher_stream_auth_total{result="ok"}'), 1)
  const starting = logLines(f).find((l) => l.msg === 'starting')
  assert.ok(starting, 'start-up log captured')
  assert.equal(starting.config.streamKey, '[redacted]')
  assert.ok(!f.logs.join('\n').includes(KEY), 'the key id is never logged')
})
