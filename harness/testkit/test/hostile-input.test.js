// Bad input and floods against real gateway processes: every malformed or
// hostile input gets a coded error or a coded close, never a crash, a stall
// or unbounded growth. (The long fuzz run is `make chaos-fuzz`.)
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { CloseCode, ErrorCode } from '@wsps/protocol'
import { TestClient, getJson, sleep, startFetcher, startGateway, startRedis, waitFor } from '../src/index.js'
import { runFuzz } from '../src/fuzz.js'
import { hostileCases, runHostileCases } from '../src/hostile-cases.js'
import { upgradeHead } from '../src/raw.js'
import { connect } from 'node:net'

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis
/** @type {import('../src/index.js').ServiceHandle} default limits (rate 20/s, burst 40), 50 subscriptions, 20 sockets per IP */
let gw
/** @type {import('../src/index.js').ServiceHandle} 2 sockets per IP (X-Forwarded-For trusted), 4 in all */
let gwLimits
/** @type {import('../src/index.js').ServiceHandle} high rate limits so fuzz frames reach the parser */
let gwFuzz
/** @type {import('../src/index.js').ServiceHandle} */
let fetcher
/** @type {TestClient[]} */
const clients = []
/** @type {{socket: import('node:net').Socket, started: number, closedAt: Promise<number>}} */
let trickle

const MAX_SUBS = 50

before(async () => {
  redis = await startRedis()
  ;[gw, gwLimits, gwFuzz, fetcher] = await Promise.all([
    startGateway(redis.url, { WSPS_MAX_SUBSCRIPTIONS: MAX_SUBS, WSPS_MAX_CONNECTIONS_PER_IP: 20 }),
    startGateway(redis.url, { WSPS_MAX_CONNECTIONS_PER_IP: 2, WSPS_MAX_CONNECTIONS: 4, WSPS_TRUST_PROXY: 'true' }),
    startGateway(redis.url, { WSPS_RATE_PER_SEC: 5000, WSPS_RATE_BURST: 500, WSPS_DEMAND_LEASE_MS: 3000 }),
    startFetcher(redis.url, { WSPS_FETCH_INTERVAL_MS: 500, WSPS_SCHEDULE_TICK_MS: 50 })
  ])
  // Slowloris: an upgrade whose headers trickle in one byte per 500 ms. It
  // runs beside the other tests and is checked at the end.
  const socket = connect({ port: gw.port, host: '127.0.0.1' })
  const head = upgradeHead({ headers: { 'X-Pad': 'a'.repeat(300) } })
  let i = 0
  const timer = setInterval(() => { if (!socket.destroyed && i < head.length) socket.write(head[i++]) }, 500)
  const started = Date.now()
  const closedAt = new Promise((resolve) => socket.on('close', () => { clearInterval(timer); resolve(Date.now()) }))
  socket.on('error', () => {})
  trickle = { socket, started, closedAt: /** @type {Promise<number>} */ (closedAt) }
})

after(async () => {
  trickle?.socket.destroy()
  for (const c of clients) c.ws.terminate()
  await Promise.all([gw, gwLimits, gwFuzz, fetcher].filter(Boolean).map((p) => p.stop('SIGKILL')))
  await redis?.close()
})

/**
 * @param {string} url
 * @param {import('ws').ClientOptions} [options]
 */
async function connectClient (url, options) {
  const c = await TestClient.connect(url, options)
  clients.push(c)
  return c
}

/**
 * Sends one raw frame and resolves with the answer to it (error, ack or pong).
 * @param {TestClient} c
 * @param {string | Buffer} data
 * @param {boolean} [binary]
 */
async function answerTo (c, data, binary = false) {
  const from = c.frames.length
  c.ws.send(data, { binary })
  return c.next((m) => m.op === 'error' || m.op === 'ack' || m.op === 'pong', { from, timeout: 10_000 })
}

/** @param {import('../src/index.js').ServiceHandle} g */
async function assertAlive (g) {
  assert.equal(g.proc.exitCode, null, `${g.name} is running`)
  assert.equal((await getJson(`${g.url}/healthz`)).status, 200)
}

test('malformed frames each get their coded error, and the connection keeps working', async () => {
  /** Malformed frames, by the error code each earns. */
  const byCode = {
    [ErrorCode.BAD_JSON]: ['{"op":"sub",', 'not json at all', ''],
    [ErrorCode.BAD_REQUEST]: ['[1,2,3]', '"sub"', 'null', '{"op":"sub","symbols":"AAPL"}', '{"op":"sub","symbols":[]}', '{"op":"sub","symbols":{"0":"AAPL"}}',
      JSON.stringify({ op: 'sub', symbols: Array.from({ length: 101 }, (_, i) => `S${i}`) }), '{"op":"ping","id":{"x":1}}', `{"op":"ping","id":"${'i'.repeat(65)}"}`],
    [ErrorCode.BAD_OP]: ['{"symbols":["AAPL"]}', '{"op":"subscribe","symbols":["AAPL"]}', '{"op":42}'],
    [ErrorCode.BAD_SYMBOL]: ['{"op":"sub","symbols":["aapl"]}', '{"op":"sub","symbols":["ABCDEFGHIJKLMNOPQ"]}', '{"op":"sub","symbols":["AAPL",null]}']
  }
  const cases = Object.entries(byCode).flatMap(([code, frames]) => frames.map((frame) => [frame, code]))
  // 20 errors in a row earn a 4009 close (next test): stay under that.
  let c = await connectClient(gw.wsUrl)
  for (const [i, [frame, code]] of cases.entries()) {
    if (i === 10) {
      c.ws.terminate()
      c = await connectClient(gw.wsUrl)
    }
    const reply = await answerTo(c, frame)
    assert.equal(reply.op, 'error', `${frame.slice(0, 40)} -> ${JSON.stringify(reply)}`)
    assert.equal(reply.code, code, `${frame.slice(0, 40)} -> ${reply.code}`)
    assert.equal(typeof reply.message, 'string')
  }
  const bin = await answerTo(c, Buffer.from([0x7b, 0x7d, 0x00, 0xff]), true)
  assert.equal(bin.code, ErrorCode.BAD_FRAME)
  const bad = await answerTo(c, '{"op":"sub","symbols":["AAPL","no good","X"],"id":7}')
  assert.equal(bad.code, ErrorCode.BAD_SYMBOL)
  assert.equal(bad.id, 7, 'a valid id is echoed in the error')
  assert.deepEqual(bad.symbols, ['no good'], 'the bad symbols are listed')
  const proto = await answerTo(c, '{"__proto__":{"op":"ping"},"constructor":{"prototype":{}}}')
  assert.equal(proto.code, ErrorCode.BAD_OP, 'a __proto__ key is data, not a prototype')
  assert.deepEqual((await answerTo(c, '{"op":"ping","id":"ok"}')), { op: 'pong', id: 'ok' })
  assert.equal(c.closed, null, 'fewer errors than the strike limit: still open')
  c.ws.terminate()
})

test('a stream of invalid frames is closed with 4009 after the error replies', async () => {
  const c = await connectClient(gw.wsUrl)
  for (let i = 0; i < 40 && c.ws.readyState === 1; i++) c.ws.send(`garbage ${i}`)
  const { code } = await c.closedPromise
  assert.equal(code, CloseCode.POLICY_VIOLATION)
  const errors = c.frames.filter((f) => f.op === 'error')
  assert.ok(errors.length >= 10 && errors.every((e) => e.code === ErrorCode.BAD_JSON), `${errors.length} BAD_JSON errors before the close`)
})

/** The gateway `gw` as a target of the shared hostile cases (src/hostile-cases.js). */
const target = () => ({ port: gw.port, host: '127.0.0.1', maxPayload: 4096, maxSubscriptions: MAX_SUBS })

test('frames over maxPayload close with 1009 (lying length headers and fragments too); RFC 6455 violations with 1002 and 1007', async () => {
  const c = await connectClient(gw.wsUrl)
  assert.equal(c.hello.limits.maxPayload, target().maxPayload)
  c.ws.terminate()
  for (const r of await runHostileCases(target(), hostileCases.filter((x) => x.kind === 'frames'))) {
    assert.equal(r.got, r.expect, r.name)
  }
})

test(`subscription flood: over ${MAX_SUBS} symbols is TOO_MANY_SUBSCRIPTIONS and changes nothing`, async () => {
  const c = await connectClient(gw.wsUrl)
  const symbols = Array.from({ length: MAX_SUBS }, (_, i) => `HSF${i}`)
  const ack = await c.sub(symbols)
  assert.equal(ack.op, 'ack')
  assert.equal(ack.symbols.length, MAX_SUBS)
  const over = await c.sub(['HSF-ONE-MORE'])
  assert.equal(over.op, 'error')
  assert.equal(over.code, ErrorCode.TOO_MANY_SUBSCRIPTIONS)
  const again = await c.sub(symbols.slice(0, 10))
  assert.equal(again.op, 'ack', 'subscribing to held symbols is not over the limit')
  const held = await c.unsub(['NOT-HELD'])
  assert.equal(held.symbols.length, MAX_SUBS, 'the rejected request changed nothing')
  // Keep asking: every refusal is a strike; the flood ends with 4009.
  for (let i = 0; i < 40 && c.ws.readyState === 1; i++) c.send({ op: 'sub', symbols: [`HSX${i}`] })
  assert.equal((await c.closedPromise).code, CloseCode.POLICY_VIOLATION)
  await waitFor(async () => (await gw.metrics()).wsps_gateway_subscriptions === 0, { timeout: 10_000, message: 'subscriptions released' })
})

test('message-rate flood: RATE_LIMITED once, the excess dropped, then closed with 4029', async () => {
  const c = await connectClient(gw.wsUrl)
  const { rateBurst } = c.hello.limits
  for (let i = 0; i < 4 * rateBurst && c.ws.readyState === 1; i++) c.send({ op: 'ping', id: i })
  const { code } = await c.closedPromise
  assert.equal(code, CloseCode.RATE_LIMIT_EXCEEDED)
  const pongs = c.frames.filter((f) => f.op === 'pong').length
  const limited = c.frames.filter((f) => f.op === 'error' && f.code === ErrorCode.RATE_LIMITED)
  assert.equal(limited.length, 1, 'RATE_LIMITED is answered once, not per dropped message')
  assert.ok(pongs >= rateBurst - 1 && pongs < 2 * rateBurst, `${pongs} pongs: about one burst got through`)
})

test('a ping-frame flood from a peer that does not read is cut off', async () => {
  const c = await connectClient(gw.wsUrl)
  const socket = /** @type {any} */ (c.ws)._socket
  socket.pause()
  const payload = Buffer.alloc(125, 'p')
  for (let i = 0; i < 20_000 && c.ws.readyState === 1; i++) {
    c.ws.ping(payload)
    if (i % 1000 === 999) await sleep(5)
  }
  socket.resume()
  const { code } = await c.closedPromise
  // Cut off by the message rate (4029) or the send cap on pongs (4008); 1006
  // when the close frame did not get through the paused socket in time.
  assert.ok([1006, CloseCode.SLOW_CONSUMER, CloseCode.RATE_LIMIT_EXCEEDED].includes(code), `closed (${code})`)
  await assertAlive(gw)
})

test('WebSocket ping frames are answered and count against the message rate limit', async () => {
  const c = await connectClient(gw.wsUrl)
  let pongs = 0
  c.ws.on('pong', () => { pongs++ })
  c.ws.ping(Buffer.from('hi'))
  await waitFor(() => pongs === 1, { message: 'the pong' })
  const { rateBurst } = c.hello.limits
  for (let i = 0; i < 4 * rateBurst && c.ws.readyState === 1; i++) c.ws.ping()
  const { code } = await c.closedPromise
  assert.equal(code, CloseCode.RATE_LIMIT_EXCEEDED)
  assert.ok(pongs >= rateBurst - 1 && pongs < 2 * rateBurst, `${pongs} pongs: about one burst got through`)
  await assertAlive(gw)
})

test('connection floods: per-IP limit answers 429, a full gateway 503, slots are released', async () => {
  const ip = (/** @type {number} */ n) => ({ headers: { 'x-forwarded-for': `198.51.100.${n}` } })
  // 30 parallel attempts from one address: exactly the limit gets in.
  const attempts = await Promise.allSettled(Array.from({ length: 30 }, () => TestClient.connect(gwLimits.wsUrl, ip(1))))
  const ok = attempts.filter((a) => a.status === 'fulfilled').map((a) => /** @type {PromiseFulfilledResult<TestClient>} */ (a).value)
  clients.push(...ok)
  const statuses = attempts.filter((a) => a.status === 'rejected').map((a) => /** @type {any} */ (a).reason.status)
  assert.equal(ok.length, 2)
  assert.deepEqual([...new Set(statuses)], [429])
  clients.push(await TestClient.connect(gwLimits.wsUrl, ip(2)), await TestClient.connect(gwLimits.wsUrl, ip(2)))
  await assert.rejects(TestClient.connect(gwLimits.wsUrl, ip(3)), (/** @type {any} */ err) => err.status === 503)
  await ok[0].close()
  await waitFor(async () => (await gwLimits.metrics()).wsps_gateway_connections === 3, { message: 'the closed socket released' })
  clients.push(await TestClient.connect(gwLimits.wsUrl, ip(1)))
  const m = await gwLimits.metrics()
  assert.ok(m['wsps_gateway_upgrades_total{result="ip_limit"}'] >= 28)
  assert.ok(m['wsps_gateway_upgrades_total{result="full"}'] >= 1)
})

test('X-Forwarded-For does not get around the per-IP limit unless WSPS_TRUST_PROXY is set', async () => {
  await waitFor(async () => (await gw.metrics()).wsps_gateway_connections === 0, { message: 'earlier sockets gone' })
  const mine = await Promise.all(Array.from({ length: 20 }, (_, i) => connectClient(gw.wsUrl, { headers: { 'x-forwarded-for': `203.0.113.${i}` } })))
  await assert.rejects(TestClient.connect(gw.wsUrl, { headers: { 'x-forwarded-for': '203.0.113.99' } }), (/** @type {any} */ err) => err.status === 429)
  await Promise.all(mine.map((c) => c.close()))
})

test('oversized or numerous headers are refused with 431; garbage and wrong paths get 400/404; an SSE request over the limit 400', async () => {
  for (const r of await runHostileCases(target(), hostileCases.filter((x) => x.kind === 'http'))) {
    assert.equal(r.got, r.expect, r.name)
  }
  await assertAlive(gw)
})

test(`fuzz: 20k random and mutated frames over live connections`, async (t) => {
  const rss = async () => (await gwFuzz.metrics()).process_resident_memory_bytes
  const before = await rss()
  const stats = await runFuzz({ url: gwFuzz.wsUrl, frames: 20_000, connections: 128, seed: Number(process.env.WSPS_FUZZ_SEED ?? 20250101), deadlineMs: 90_000 })
  const afterRss = await rss()
  t.diagnostic(`fuzz: ${stats.answered} frames answered of ${stats.sent} sent over ${stats.connections} connections in ${stats.ms} ms; ` +
    `closes ${JSON.stringify(stats.closes)}; RSS ${(before / 1e6).toFixed(0)} -> ${(afterRss / 1e6).toFixed(0)} MB`)
  assert.deepEqual(stats.violations, [])
  assert.ok(stats.answered >= 20_000, `${stats.answered} frames answered`)
  await assertAlive(gwFuzz)
  assert.ok(afterRss < before + 256e6, `RSS grew from ${before} to ${afterRss}`)
  await waitFor(async () => (await gwFuzz.metrics()).wsps_gateway_connections === 0, { timeout: 10_000, message: 'every fuzz socket released' })
  const c = await connectClient(gwFuzz.wsUrl)
  assert.equal((await c.sub(['FZ1'])).op, 'ack')
  await c.waitQuotes('FZ1', 2, 10_000)
  assert.deepEqual(c.problems, [])
})

test('slow handshake: headers trickled in are cut off by the 10 s headersTimeout', async () => {
  const limitMs = 15_000
  const closedAt = await Promise.race([trickle.closedAt, sleep(Math.max(0, trickle.started + limitMs - Date.now())).then(() => null)])
  assert.ok(closedAt !== null, `trickling socket still open after ${limitMs} ms`)
  assert.ok(closedAt - trickle.started >= 9_000, 'not before the timeout')
})

test('after all of it every gateway is alive and holds no stray socket', async () => {
  for (const c of clients) c.ws.terminate()
  for (const g of [gw, gwLimits, gwFuzz]) {
    await assertAlive(g)
    await waitFor(async () => (await g.metrics()).wsps_gateway_connections === 0, { timeout: 10_000, message: `${g.name} sockets released` })
  }
})
