// The testkit's Toxiproxy (harness/testkit/src/toxiproxy.js) in front of a
// real redis-server, seen by real ioredis clients through it: PINGs are
// answered; silence() keeps the sockets open and lets nothing through either
// way (a SET does not reach Redis, a message Redis publishes does not reach
// the subscriber); heal() brings answers back for new commands; slow()
// delays each answer; resetPeer() closes the connection (and resets new
// ones); disable()/enable() refuse and take connections again.
// toxiproxy-server comes from `tools/tools.sh toxiproxy`.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Redis } from 'ioredis'
import { redisCommand, sleep, startRedis, startToxiproxy, waitFor } from '../src/index.js'

/** @type {import('../src/redis.js').RedisHandle} */
let redis
/** @type {import('../src/index.js').ToxiproxyHandle} */
let toxiproxy
/** @type {import('../src/toxiproxy.js').ToxiProxy} */
let proxy
/** @type {Redis} */
let client
/** @type {Redis} a subscriber to 'news' through the proxy */
let sub
/** @type {string[]} the messages it got */
const news = []
/** @type {{at: number}[]} the client's 'close' events */
const closes = []
/** @type {Error[]} the client's 'error' events */
const errors = []

before(async () => {
  redis = await startRedis()
  toxiproxy = await startToxiproxy()
  proxy = await toxiproxy.createProxy({ upstream: `127.0.0.1:${redis.port}` })
  assert.notEqual(proxy.port, 0, 'the server picked a port for listen 127.0.0.1:0')
  assert.notEqual(proxy.port, redis.port)
  client = new Redis({ host: proxy.host, port: proxy.port, maxRetriesPerRequest: null, retryStrategy: () => 50 })
  client.on('close', () => closes.push({ at: Date.now() }))
  client.on('error', (err) => errors.push(err))
  await waitFor(() => client.status === 'ready', { timeout: 5000, message: 'ioredis ready through the proxy' })
  sub = new Redis({ host: proxy.host, port: proxy.port, maxRetriesPerRequest: null, retryStrategy: () => 50 })
  sub.on('error', () => {})
  sub.on('message', (_channel, message) => news.push(message))
  await sub.subscribe('news')
})

after(async () => {
  client?.disconnect()
  sub?.disconnect()
  await toxiproxy?.stop()
  await redis?.close()
})

/**
 * PING through the proxy: 'PONG' and how long it took, or 'timeout' after `ms`.
 *
 * @param {number} ms
 * @returns {Promise<{reply: string, ms: number}>}
 */
async function ping (ms) {
  const t0 = performance.now()
  const pending = client.ping()
  // A PING left unanswered here may be failed or answered later: no unhandled rejection.
  pending.catch(() => {})
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  const reply = await Promise.race([pending, new Promise((resolve) => { timer = setTimeout(resolve, ms, 'timeout') })])
  clearTimeout(timer)
  return { reply: String(reply), ms: performance.now() - t0 }
}

test('PING is answered through the proxy, and the link is a proxied one', async () => {
  const { reply, ms } = await ping(1000)
  assert.equal(reply, 'PONG')
  assert.ok(ms < 300, `an unhindered PING is quick (${ms.toFixed(1)} ms): slow() below is measured against that`)
  // The connection Redis sees comes from toxiproxy, not from the client's own port.
  const clientPort = /** @type {import('node:net').Socket} */ (/** @type {any} */ (client).stream).localPort
  const list = await client.client('LIST')
  assert.ok(!String(list).includes(`:${clientPort} `), 'Redis does not see the client\'s own socket: the link goes through the proxy')
  // What Redis publishes reaches the subscriber through the proxy.
  assert.equal(await redisCommand(redis.port, 'PUBLISH news unhindered'), ':1\r\n')
  await waitFor(() => news.includes('unhindered'), { timeout: 2000, message: 'the message through the proxy' })
})

test('silence(): the socket stays open and no answer comes within 1 s; heal() answers new commands', async () => {
  const closesBefore = closes.length
  await proxy.silence()
  const names = (await proxy.toxics()).map((t) => `${t.type}/${t.stream}/${t.attributes.timeout}`).sort()
  assert.deepEqual(names, ['timeout/downstream/0', 'timeout/upstream/0'])

  // Client to server: a SET sent through the proxy does not reach Redis.
  client.set('toxi:silenced', 'reached').catch(() => {})
  // Server to client: Redis publishes to the subscriber's connection (it
  // counts one receiver), but nothing comes out of the proxy.
  assert.equal(await redisCommand(redis.port, 'PUBLISH news while-silenced'), ':1\r\n')
  const silent = await ping(1000)
  assert.equal(silent.reply, 'timeout', 'no PONG while silenced')
  assert.equal(await redisCommand(redis.port, 'GET toxi:silenced'), '$-1\r\n', 'the SET did not reach Redis')
  assert.ok(!news.includes('while-silenced'), 'the published message did not reach the subscriber')
  assert.equal(closes.length, closesBefore, 'no close event: the socket stays open')
  assert.equal(client.status, 'ready')
  assert.equal(sub.status, 'ready')

  await proxy.heal()
  assert.deepEqual(await proxy.toxics(), [])
  // toxiproxy closes the connections a timeout toxic held when it goes (the
  // bytes it held are dropped; ioredis sends its unanswered PING again on the
  // next connection); ioredis reconnects, and a new PING is answered.
  const healed = await ping(3000)
  assert.equal(healed.reply, 'PONG', 'a new PING is answered after heal()')
  await waitFor(() => client.status === 'ready', { timeout: 3000, message: 'ioredis ready again' })
})

test('slow(300): a PING takes at least 300 ms; heal() makes it quick again', async () => {
  await proxy.slow(300)
  const slow = await ping(3000)
  assert.equal(slow.reply, 'PONG')
  assert.ok(slow.ms >= 300, `PING took ${slow.ms.toFixed(1)} ms with 300 ms of latency`)
  await proxy.heal()
  const quick = await ping(3000)
  assert.equal(quick.reply, 'PONG')
  assert.ok(quick.ms < 300, `PING took ${quick.ms.toFixed(1)} ms after heal()`)
})

test('resetPeer(): the connection is closed when the client next sends; new ones are reset', async () => {
  await waitFor(() => client.status === 'ready', { timeout: 3000, message: 'ioredis ready' })
  const closesBefore = closes.length
  const errorsBefore = errors.length
  await proxy.resetPeer()
  let answered = false
  const pending = client.ping().then((r) => { answered = r === 'PONG' })
  await waitFor(() => closes.length > closesBefore, { timeout: 2000, message: 'the client\'s close event' })
  assert.equal(answered, false, 'no PONG through a reset link')
  // ioredis reconnects at once: each new connection through the toxic gets an RST.
  await waitFor(() => errors.slice(errorsBefore).some((e) => /ECONNRESET/.test(e.message)), { timeout: 2000, message: 'ECONNRESET on a reconnect' })
  assert.equal(answered, false)
  await proxy.heal()
  // The PING ioredis held is sent again on the next connection, and answered.
  await pending
  assert.equal(answered, true, 'PONG after heal()')
})

test('disable() closes the connection and refuses new ones; enable() takes them again', async () => {
  const closesBefore = closes.length
  await proxy.disable()
  await waitFor(() => closes.length > closesBefore, { timeout: 2000, message: 'the client\'s close event' })
  await sleep(200)
  assert.notEqual(client.status, 'ready', 'no connection while disabled')
  assert.ok(errors.some((e) => /ECONNREFUSED/.test(e.message)), `reconnects are refused: ${errors.map((e) => e.message).join('; ')}`)
  await proxy.enable()
  await waitFor(() => client.status === 'ready', { timeout: 3000, message: 'ioredis reconnected after enable()' })
  assert.equal((await ping(2000)).reply, 'PONG')
})
