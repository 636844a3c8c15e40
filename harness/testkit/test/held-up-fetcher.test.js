// Issue 46, "No old quote is ever news", on real processes: a fake streaming
// vendor, redis-server, two ws-stream fetchers, a gateway and a client. The
// fetcher that owns a symbol is held up past its stream lease: paused
// (SIGSTOP, as a long GC or a frozen VM would), or its Redis link silent (a
// proxy that lets nothing through, the socket open). The other takes the
// symbol over and publishes. When the first comes back, the quotes it held
// (the vendor's, waiting in its socket; or its publishes, waiting in the
// silent link) reach Redis with the token of the ownership it lost: the
// publish script refuses every one, and no subscriber (of the Redis channel,
// of the history, of the gateway) ever sees a quote older than one it saw
// before.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { ALPACA_STREAM_ENV, ClientPool, sleep, startFakeVendor, startFetcher, startGateway, startRedis, startSilentProxy, waitFor } from '../src/index.js'

// Short leases: another fetcher takes a symbol over within 1 s + a 200 ms
// tick of its owner's silence; the owner is held up three times that
// (HELD_UP_HOLD_MS=40000: the 40 s, by hand).
const LEASE_MS = 1000
const HOLD_MS = Number(process.env.HELD_UP_HOLD_MS ?? 3000)
const STREAM = {
  ...ALPACA_STREAM_ENV,
  WSPS_STREAM_OWNER_LEASE_MS: LEASE_MS,
  WSPS_STREAM_TICK_MS: 200
}
const DATA = 'wsps_fetcher_stream_messages_total{result="data"}'
const DROPPED = 'wsps_fetcher_stream_records_dropped_total{reason="unknown_symbol"}'
const keys = redisKeys('wsps')
const clients = new ClientPool()
/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis
/** @type {Awaited<ReturnType<typeof startSilentProxy>>} */
let proxy
/** @type {Redis} */
let r
/** @type {Awaited<ReturnType<typeof startFakeVendor>>} */
let vendor
/** @type {import('../src/index.js').ServiceHandle} */
let gateway

before(async () => {
  redis = await startRedis()
  proxy = await startSilentProxy(redis.port)
  r = new Redis(redis.url)
  // A quote every 50 ms: some 60 wait for the held-up owner.
  vendor = await startFakeVendor({ key: 'vendor-key', tickMs: 50 })
  gateway = await startGateway(redis.url, { WSPS_DEMAND_LEASE_MS: 1500, WSPS_UNSUBSCRIBE_DELAY_MS: 100 })
})

after(async () => {
  clients.terminate()
  await Promise.all([vendor, gateway].filter(Boolean).map((p) => p.stop()))
  r?.disconnect()
  await proxy?.close()
  await redis?.close()
})

/**
 * Fails unless ts never goes back along the seqs.
 * @param {{seq: number, ts: number}[]} quotes in seq order
 * @param {string} who
 */
function assertTsNeverBack (quotes, who) {
  const back = quotes.filter((q, i) => i > 0 && q.ts < quotes[i - 1].ts)
  assert.deepEqual(back.map((q) => `seq ${q.seq} ts ${q.ts}`), [], `${who}: a quote older than the one before it`)
}

/**
 * The scenario: `owner` (connected to Redis at ownerRedisUrl) holds the
 * symbol, a second fetcher stands by; the owner is held up for HOLD_MS,
 * then let go; everything published of the symbol is checked.
 *
 * @param {import('node:test').TestContext} t
 * @param {string} symbol
 * @param {{ownerRedisUrl: string, hold: (owner: import('../src/index.js').ServiceHandle) => void, release: (owner: import('../src/index.js').ServiceHandle) => void}} how
 */
async function heldUp (t, symbol, { ownerRedisUrl, hold, release }) {
  // Every message of the symbol, straight from its Redis channel.
  const sub = new Redis(redis.url)
  /** @type {{seq: number, ts: number}[]} */
  const published = []
  sub.on('message', (_ch, msg) => published.push(JSON.parse(msg)))
  t.after(() => sub.disconnect())
  await sub.subscribe(keys.channel(symbol))
  // The owner first, alone: it claims the symbol once a client wants it.
  const owner = await startFetcher(ownerRedisUrl, { ...STREAM, WSPS_STREAM_URL: vendor.streamUrl })
  t.after(async () => {
    // A stopped process would not even take its SIGTERM.
    try { process.kill(owner.pid, 'SIGCONT') } catch {}
    await owner.stop()
  })
  const c = await clients.connect(gateway.wsUrl)
  t.after(() => c.close())
  await c.sub([symbol])
  await c.waitQuotes(symbol, 5)
  assert.equal(await r.hget(keys.streamOwner, symbol), owner.name)
  const other = await startFetcher(redis.url, { ...STREAM, WSPS_STREAM_URL: vendor.streamUrl })
  t.after(() => other.stop())
  const fenceBefore = String(await r.get(keys.fence(symbol)))
  const dataBefore = (await owner.metrics())[DATA] ?? 0
  const droppedBefore = (await owner.metrics())[DROPPED] ?? 0

  hold(owner)
  const heldAt = Date.now()
  try {
    // The other takes the symbol over and publishes the vendor's newer
    // quotes. Its token reaches the fence one round trip after the claim
    // (StreamOwnership.claim: the fence is in the symbol's slot, the claim's
    // keys are not, so no one script does both on a Cluster).
    await waitFor(async () => (await r.hget(keys.streamOwner, symbol)) === other.name, { timeout: HOLD_MS, message: 'the symbol taken over' })
    const takenOverAt = Date.now()
    await waitFor(async () => Number(String(await r.get(keys.fence(symbol))).split(' ')[0]) > Number(fenceBefore.split(' ')[0]),
      { timeout: 1000, interval: 10, message: `the new owner's token in the fence within a second of the takeover (was ${fenceBefore})` })
    const seen = published.length
    await waitFor(() => published.length >= seen + 5, { timeout: HOLD_MS, message: 'the new owner publishing' })
    await sleep(Math.max(0, HOLD_MS - (Date.now() - heldAt)))
    t.diagnostic(`taken over ${takenOverAt - heldAt} ms into the hold; held ${Date.now() - heldAt} ms`)
  } finally {
    release(owner)
  }
  // What the vendor sent meanwhile reaches the owner's publisher (and what
  // it published meanwhile reaches Redis), now or before.
  await waitFor(async () => ((await owner.metrics())[DATA] ?? 0) >= dataBefore + 30, { timeout: 5000, message: 'the owner reading what the vendor sent meanwhile' })
  // Quotes keep coming, from the new owner alone.
  const seen = published.length
  await waitFor(() => published.length >= seen + 10, { message: 'quotes after the hold' })
  assert.equal(await r.hget(keys.streamOwner, symbol), other.name)
  await sleep(300)

  assert.deepEqual(published.map((q) => q.seq), Array.from({ length: published.length }, (_, i) => published[0].seq + i), 'every seq once, in order: a refused quote takes none')
  assertTsNeverBack(published, 'the Redis channel')
  const history = (await r.xrange(keys.history(symbol), '-', '+')).map(([, f]) => JSON.parse(f[1]))
  assertTsNeverBack(history, 'the history')
  const delivered = c.frames.filter((f) => f.op === 'q' || f.op === 'snap').flatMap((f) => f.quotes ?? [])
  assertTsNeverBack(delivered.filter((q) => q.symbol === symbol && q.ts !== undefined), 'the gateway client')
  assert.deepEqual(c.problems, [])
  // Because the publish script refused each of the held-up owner's quotes,
  // or, when its stream tick ran first on waking (which of the two comes
  // first after SIGCONT is the scheduler's choice), it had let the symbol
  // go and dropped the records as no longer its own.
  const m = await owner.metrics()
  const [fenced, old, late] = ['fenced', 'old', 'late'].map((reason) => m[`wsps_fetcher_quotes_refused_total{reason="${reason}"}`] ?? 0)
  const dropped = (m[DROPPED] ?? 0) - droppedBefore
  t.diagnostic(`at the held-up owner: refused fenced ${fenced}, old ${old}, late ${late}; dropped as no longer its own ${dropped}`)
  assert.ok(fenced + old + late + dropped >= 30, `the held-up owner's quotes refused or dropped (fenced ${fenced}, old ${old}, late ${late}, dropped ${dropped})`)
  if (fenced + old + late > 0) assert.ok(owner.logs.some((l) => l.includes('quotes refused')), 'and the refusal logged')
}

test('an owner paused (SIGSTOP) past its stream lease: the quotes it held are refused and counted; no subscriber sees ts go back', async (t) => {
  await heldUp(t, 'PAUSED', {
    ownerRedisUrl: redis.url,
    hold: (owner) => process.kill(owner.pid, 'SIGSTOP'),
    release: (owner) => process.kill(owner.pid, 'SIGCONT')
  })
})

test('an owner whose Redis link goes silent past its stream lease: its writes that waited in the link are refused at the heal; no subscriber sees ts go back', async (t) => {
  await heldUp(t, 'SILENT', {
    ownerRedisUrl: proxy.url,
    hold: () => proxy.silence(),
    release: () => proxy.heal()
  })
})
