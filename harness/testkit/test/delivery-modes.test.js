// Delivery modes on real processes (redis-server, a gateway, a publisher
// writing straight to Redis so the test controls every tick): distinct
// delivers every tick in order and never merges; merge may merge; maxRate
// caps what a reader gets; bad mode/rate input gets coded errors and the
// connection stays; a distinct reader that stops reading is cut with 4008.
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { after, before, test } from 'node:test'
import { Redis } from 'ioredis'
import { ErrorCode, Limits } from '@wsps/protocol'
import { redisKeys } from '@wsps/shared/keys'
import { ClientPool, sleep, startGateway, startRedis, waitFor } from '../src/index.js'
import { runIsolated } from '../src/isolate.js'
import { quoteStream } from './slow-distinct-scenario.js'

const keys = redisKeys('wsps')
/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis
/** @type {import('../src/index.js').ServiceHandle} */
let gw
/** @type {Redis} */
let r
const clients = new ClientPool()
const connect = () => clients.connect(gw.wsUrl)

before(async () => {
  redis = await startRedis()
  r = new Redis(redis.url)
  gw = await startGateway(redis.url)
})

after(async () => {
  clients.terminate()
  await gw.stop()
  r.disconnect()
  await redis.close()
})

/**
 * Publishes ticks of a symbol as the fetcher would (latest value, then the
 * channel), `n` of them in one pipeline: they reach the gateway together.
 *
 * @param {() => string} next
 * @param {string} symbol
 * @param {number} n
 */
async function publish (next, symbol, n) {
  const pipe = r.pipeline()
  for (let i = 0; i < n; i++) {
    const q = next()
    pipe.set(keys.latest(symbol), q)
    pipe.publish(keys.channel(symbol), q)
  }
  await pipe.exec()
}

/** @param {import('../src/index.js').TestClient} c @param {string} symbol */
const deltas = (c, symbol) => c.frames.filter((f) => f.op === 'q').flatMap((f) => f.quotes).filter((q) => q.symbol === symbol)

test('distinct: every tick of a burst arrives once, in seq order, never merged; merge readers of the same burst hold the same state', async () => {
  const next = quoteStream('DIST')
  await publish(next, 'DIST', 1)
  const d = await connect()
  const m = await connect()
  const ack = await d.sub(['DIST'], { mode: 'distinct' })
  assert.deepEqual(ack, { op: 'ack', id: 1, symbols: ['DIST'], mode: 'distinct' })
  await m.sub(['DIST'])
  await waitFor(() => d.quote('DIST') && m.quote('DIST'), { message: 'snapshots' })
  const from = /** @type {number} */ (d.quote('DIST')?.seq)
  for (let i = 0; i < 10; i++) await publish(next, 'DIST', 50)
  const last = 1 + 500
  await waitFor(() => d.quote('DIST')?.seq === last && m.quote('DIST')?.seq === last, { timeout: 30_000, message: `seq ${last} on both readers` })
  const seqs = deltas(d, 'DIST').map((q) => q.seq)
  assert.deepEqual(seqs, Array.from({ length: last - from }, (_, i) => from + 1 + i), 'every tick, once, in order')
  assert.equal(deltas(d, 'DIST').filter((q) => q.base !== undefined).length, 0, 'no merged delta (no base) in distinct mode')
  assert.deepEqual(d.problems, [])
  assert.deepEqual(m.problems, [])
  assert.deepEqual(m.quote('DIST'), d.quote('DIST'), 'both end on the same full quote')
})

test(`maxRate: a merge reader capped at 2/s gets at most 2 per second (+2 for pass timing) of a 40/s stream, ending on the latest quote`, async (t) => {
  const next = quoteStream('RATE')
  await publish(next, 'RATE', 1)
  const c = await connect()
  const ack = await c.sub(['RATE'], { maxRate: 2 })
  assert.deepEqual(ack, { op: 'ack', id: 1, symbols: ['RATE'], mode: 'merge', maxRate: 2 })
  await waitFor(() => c.quote('RATE'), { message: 'snapshot' })
  const started = Date.now()
  let published = 1
  while (Date.now() - started < 3000) {
    await publish(next, 'RATE', 1)
    published++
    await sleep(25)
  }
  const seconds = (Date.now() - started) / 1000
  await waitFor(() => c.quote('RATE')?.seq === published, { timeout: 10_000, message: `the latest quote (${published})` })
  const got = deltas(c, 'RATE').length
  t.diagnostic(`${published - 1} ticks in ${seconds.toFixed(1)} s -> ${got} updates`)
  // The lane hands out at most one update per 500 ms; a pass may write it
  // up to a pass later, so the count over the whole run may exceed the
  // nominal rate by the last update only: +2 covers both ends.
  assert.ok(got <= Math.ceil(2 * seconds) + 2, `${got} updates in ${seconds.toFixed(1)} s`)
  assert.ok(got >= 2, 'updates keep coming, conflated')
  assert.deepEqual(c.problems, [])
})

test('a sub naming a held symbol with another delivery moves it: a fresh snapshot, then that delivery', async () => {
  const next = quoteStream('MOVE')
  await publish(next, 'MOVE', 1)
  const c = await connect()
  await c.sub(['MOVE'])
  await waitFor(() => c.quote('MOVE'), { message: 'snapshot' })
  const snaps = () => c.frames.filter((f) => f.op === 'snap').length
  const before = snaps()
  const ack = await c.sub(['MOVE'], { mode: 'distinct' })
  assert.deepEqual(ack.symbols, ['MOVE'])
  await waitFor(() => snaps() > before, { message: 'a fresh snapshot' })
  const from = c.frames.length
  await publish(next, 'MOVE', 30)
  await waitFor(() => c.quote('MOVE')?.seq === 31, { timeout: 10_000, message: 'seq 31' })
  const after = c.frames.slice(from).filter((f) => f.op === 'q').flatMap((f) => f.quotes)
  assert.ok(after.every((q) => q.base === undefined), 'distinct from then on')
  assert.deepEqual(c.problems, [])
})

test('bad mode and rate input get coded errors; nothing changes and the connection keeps working', async () => {
  const c = await connect()
  const cases = [
    [{ mode: 'every' }, ErrorCode.BAD_MODE],
    [{ mode: 7 }, ErrorCode.BAD_MODE],
    [{ maxRate: Limits.MIN_RATE / 2 }, ErrorCode.BAD_RATE],
    [{ maxRate: Limits.MAX_RATE + 1 }, ErrorCode.BAD_RATE],
    [{ maxRate: '5' }, ErrorCode.BAD_RATE],
    [{ mode: 'distinct', maxRate: 5 }, ErrorCode.BAD_RATE]
  ]
  for (const [delivery, code] of cases) {
    const reply = await c.sub(['BADIN'], /** @type {any} */ (delivery))
    assert.equal(reply.op, 'error', JSON.stringify(delivery))
    assert.equal(reply.code, code, JSON.stringify(delivery))
  }
  c.subscribed.clear()
  const ack = await c.sub(['OKIN'])
  assert.deepEqual(ack.symbols, ['OKIN'], 'the rejected subs changed nothing')
  assert.equal(c.closed, null)
})

test('a distinct reader that stops reading is cut with 4008 at the send cap, never merged; a stopped merge reader is conflated and catches up', async (t) => {
  const scenario = fileURLToPath(new URL('./slow-distinct-scenario.js', import.meta.url))
  const { result: x, netns } = await runIsolated(scenario, 'runSlowDistinct', { highWater: 4096, sendMax: 65536, maxQuotes: 200_000 }, { netns: true, timeoutMs: 240_000 })
  t.diagnostic(`${netns ? 'private netns, small TCP buffers' : 'host loopback'}: cut after ${x.published} quotes of each symbol`)
  assert.equal(x.dAck.mode, 'distinct')
  assert.equal(x.closes4008, 1, 'the distinct reader was closed with 4008')
  assert.equal(x.connectionsAfterCut, 1, 'the merge reader was not')
  assert.equal(x.distinctBases, 0, 'the distinct reader never got a merged delta')
  assert.ok(x.conflated > 0, 'the merge reader was conflated')
  assert.ok(x.merge.caughtUp && x.merge.open, `merge reader held ${x.merge.heldSeq}, latest ${x.merge.last}`)
  assert.deepEqual(x.merge.problems, [])
})
