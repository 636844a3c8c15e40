// The publish API (POST /v1/quotes) on real processes: redis-server, a
// push-only fetcher and a polling (sim) fetcher, each with its own gateway
// (separate key prefixes), WebSocket clients.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { WspsClient } from '@wsps/client'
import { latestQuotes } from '@wsps/shared/latest'
import { redisKeys } from '@wsps/shared/keys'
import { registerScripts } from '@wsps/shared/scripts'
import WebSocket from 'ws'
import { setUp, useStack, waitFor } from '../src/index.js'

const TOKEN = 'test-publish-token-0123456789'
const RATE = 10
const MAX_BYTES = 4096
const PUSH_LEASE_MS = 1500
const stack = useStack()
const pushKeys = redisKeys('pp')
const on = setUp(async () => {
  const gw = { WSPS_DEMAND_LEASE_MS: 1500, WSPS_UNSUBSCRIBE_DELAY_MS: 100 }
  // One after the other: a busy machine starts four at once too slowly.
  const pushGateway = await stack.gateway({ ...gw, WSPS_REDIS_KEY_PREFIX: 'pp' })
  const pushFetcher = await stack.fetcher({
    WSPS_REDIS_KEY_PREFIX: 'pp', WSPS_PROVIDER: 'push', WSPS_PUBLISH_TOKEN: TOKEN, WSPS_PUBLISH_RATE: RATE, WSPS_PUBLISH_MAX_BYTES: MAX_BYTES
  })
  const simGateway = await stack.gateway(gw)
  const simFetcher = await stack.fetcher({ WSPS_PUBLISH_TOKEN: TOKEN, WSPS_PUSH_LEASE_MS: PUSH_LEASE_MS })
  return { redis: registerScripts(await stack.redisClient()), pushGateway, pushFetcher, simGateway, simFetcher }
})

/**
 * The symbol's latest quote in Redis, parsed, as the gateway reads it.
 * @param {import('@wsps/shared/keys').RedisKeys} keys
 * @param {string} symbol
 */
async function latestOf (keys, symbol) {
  const [raw] = await latestQuotes(on.redis, keys, [symbol])
  if (raw instanceof Error) throw raw
  return raw === null ? null : JSON.parse(raw)
}

/**
 * @param {import('../src/index.js').ServiceHandle} fetcher
 * @param {string | object} body
 * @param {{token?: string | null, type?: string, key?: string}} [options] key: the Idempotency-Key
 */
async function publish (fetcher, body, { token = TOKEN, type = 'application/json', key } = {}) {
  /** @type {Record<string, string>} */
  const headers = { 'content-type': type }
  if (token !== null) headers.authorization = `Bearer ${token}`
  if (key !== undefined) headers['idempotency-key'] = key
  const res = await fetch(`${fetcher.url}/v1/quotes`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) })
  return { status: res.status, body: await res.json(), headers: res.headers }
}

test('a published quote reaches a subscribed client with its fields and a seq, and becomes the snapshot', async () => {
  const c = await stack.client(on.pushGateway.wsUrl)
  await c.sub(['PUB1'])
  const res = await publish(on.pushFetcher, { quotes: [{ symbol: 'PUB1', bid: 10.5, ask: 10.6, last: 10.55, volume: 1200 }, { symbol: 'PUB1', bid: 10.7 }] })
  assert.deepEqual([res.status, res.body], [200, { accepted: 2 }])
  // Published right after the ack, the two may arrive as one snapshot.
  await waitFor(() => c.quote('PUB1')?.bid === 10.7, { message: 'PUB1 at the client' })
  const q = c.quote('PUB1') ?? {}
  assert.equal(q.bid, 10.7)
  assert.equal(typeof q.ts, 'number')
  const latest = await latestOf(pushKeys, 'PUB1')
  assert.deepEqual({ bid: latest.bid, seq: latest.seq }, { bid: 10.7, seq: 2 })
  // A new client gets it as its snapshot.
  const late = await stack.client(on.pushGateway.wsUrl)
  await late.sub(['PUB1'])
  await waitFor(() => late.quote('PUB1')?.bid === 10.7, { message: 'snapshot of PUB1' })
  assert.deepEqual(c.problems, [])
})

test('NDJSON bodies: one quote a line', async () => {
  const c = await stack.client(on.pushGateway.wsUrl)
  await c.sub(['NDJ'])
  // A ts of its own: not before the first line's (now), or it would be refused as old.
  const res = await publish(on.pushFetcher, `{"symbol":"NDJ","last":1}\n\n{"symbol":"NDJ","last":2,"ts":${Date.now() + 500}}\n`, { type: 'application/x-ndjson' })
  assert.deepEqual([res.status, res.body], [200, { accepted: 2 }])
  await waitFor(() => c.quote('NDJ')?.last === 2, { message: 'NDJ last 2' })
})

test('bad requests get coded errors and publish nothing of the request', async () => {
  const cases = [
    { token: null, body: { quotes: [{ symbol: 'BAD1', bid: 1 }] }, status: 401, code: 'UNAUTHORIZED' },
    { token: 'wrong-token-wrong-token', body: { quotes: [{ symbol: 'BAD1', bid: 1 }] }, status: 401, code: 'UNAUTHORIZED' },
    { body: { quotes: [{ symbol: 'BAD1', bid: 1 }, { symbol: 'bad one', bid: 1 }] }, status: 400, code: 'BAD_QUOTE', index: 1 },
    { body: { quotes: [{ symbol: 'BAD1', bid: 1 }, { symbol: 'BAD1', ask: '2' }] }, status: 400, code: 'BAD_QUOTE', index: 1 },
    { body: { quotes: [{ symbol: 'BAD1', bid: 1 }, { symbol: 'BAD1', seq: 7 }] }, status: 400, code: 'BAD_QUOTE', index: 1 },
    { body: '{"quotes":[{"symbol":"BAD1"', status: 400, code: 'BAD_BODY' },
    { body: { symbol: 'BAD1' }, status: 400, code: 'BAD_BODY' },
    { body: '{"symbol":"BAD1"}\nnope', type: 'application/x-ndjson', status: 400, code: 'BAD_BODY' },
    { body: 'symbol=BAD1', type: 'text/plain', status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
    { body: { quotes: Array.from({ length: 200 }, () => ({ symbol: 'BAD1', bid: 1.25 })) }, status: 413, code: 'BODY_TOO_LARGE' }
  ]
  for (const k of cases) {
    const res = await publish(on.pushFetcher, k.body, { token: k.token, type: k.type })
    assert.equal(res.status, k.status, JSON.stringify(res.body))
    assert.equal(res.body.code, k.code)
    assert.equal(typeof res.body.message, 'string')
    if ('index' in k) assert.equal(res.body.index, k.index)
  }
  assert.equal(await on.redis.exists(pushKeys.seq('BAD1'), pushKeys.latest('BAD1'), pushKeys.history('BAD1')), 0, 'nothing of a refused request was published')
  const m = await on.pushFetcher.metrics()
  assert.equal(m['wsps_fetcher_publish_requests_total{outcome="UNAUTHORIZED"}'], 2)
  assert.equal(m['wsps_fetcher_publish_requests_total{outcome="BAD_QUOTE"}'], 3)
  assert.equal(m['wsps_fetcher_publish_requests_total{outcome="BAD_BODY"}'], 3)
  assert.equal(m['wsps_fetcher_publish_requests_total{outcome="BODY_TOO_LARGE"}'], 1)
  assert.ok(m['wsps_fetcher_publish_requests_total{outcome="accepted"}'] >= 2)
})

test('WSPS_PROVIDER=push never polls: a demanded symbol gets no job and no quote until one is published', async () => {
  const c = await stack.client(on.pushGateway.wsUrl)
  await c.sub(['NOPOLL'])
  await waitFor(async () => (await on.redis.zscore(pushKeys.demand, 'NOPOLL')) !== null, { message: 'demand for NOPOLL' })
  assert.equal(await on.redis.llen(pushKeys.jobs), 0)
  const m = await on.pushFetcher.metrics()
  assert.equal(m.wsps_fetcher_jobs_pushed_total ?? 0, 0)
  assert.equal(c.quote('NOPOLL'), undefined)
  await publish(on.pushFetcher, { quotes: [{ symbol: 'NOPOLL', last: 3 }] })
  await waitFor(() => c.quote('NOPOLL')?.last === 3, { message: 'the pushed NOPOLL quote' })
})

test('push wins over polling: while quotes are pushed the provider neither fetches nor publishes the symbol; after the lease it does again', async () => {
  const c = await stack.client(on.simGateway.wsUrl)
  await c.sub(['PUSHWIN'])
  await c.waitQuotes('PUSHWIN', 3) // the sim market feeds it
  // Every publish of the symbol, in order, straight from its Redis channel.
  const sub = await stack.redisClient()
  /** @type {{seq: number, bid: number}[]} */
  const published = []
  sub.on('message', (_ch, msg) => published.push(JSON.parse(msg)))
  await sub.subscribe(redisKeys('wsps').channel('PUSHWIN'))
  const marker = 777_777
  let pushed = 0
  // Push for several lease renewals; every quote after the first pushed one
  // must be ours.
  for (let i = 0; i < 8; i++) {
    const res = await publish(on.simFetcher, { quotes: [{ symbol: 'PUSHWIN', bid: marker + i, ask: marker + i, last: marker + i }] })
    assert.equal(res.status, 200)
    pushed++
    await new Promise((resolve) => setTimeout(resolve, PUSH_LEASE_MS / 5))
  }
  await waitFor(() => c.quote('PUSHWIN')?.bid === marker + pushed - 1, { message: 'the last pushed quote at the client' })
  const firstPushed = published.findIndex((q) => q.bid === marker)
  assert.ok(firstPushed >= 0, 'the first pushed quote was published')
  const lastPushed = published.findIndex((q) => q.bid === marker + pushed - 1)
  assert.deepEqual(published.slice(firstPushed, lastPushed + 1).map((q) => q.bid), Array.from({ length: pushed }, (_, i) => marker + i),
    'no polled quote between pushed ones')
  const m = await on.simFetcher.metrics()
  assert.ok((m.wsps_fetcher_pushed_symbols_skipped_total ?? 0) > 0, 'the scheduler skipped the pushed symbol')
  // Pushing stops: polling resumes after the lease.
  await waitFor(() => {
    const bid = c.quote('PUSHWIN')?.bid
    return bid !== undefined && bid < marker
  }, { timeout: 15_000, message: 'sim quotes again after the push lease' })
  assert.deepEqual(c.problems, [])
  sub.disconnect()
})

test('the API is off without a token; a token over its rate gets 429 with Retry-After', async () => {
  const off = await stack.fetcher({ WSPS_REDIS_KEY_PREFIX: 'off' })
  const res = await publish(off, { quotes: [{ symbol: 'OFF', bid: 1 }] })
  assert.deepEqual([res.status, res.body.code], [404, 'PUBLISH_DISABLED'])

  // RATE quotes/s: a batch of 12 s worth is admitted whole, the next request is not.
  const big = await publish(on.pushFetcher, { quotes: Array.from({ length: RATE * 12 }, (_, i) => ({ symbol: `R${i % 10}`, bid: 1 })) })
  assert.equal(big.status, 200)
  const over = await publish(on.pushFetcher, { quotes: [{ symbol: 'R0', bid: 2 }] })
  assert.deepEqual([over.status, over.body.code], [429, 'RATE_LIMITED'])
  assert.ok(Number(over.headers.get('retry-after')) >= 1)
  assert.equal((await latestOf(pushKeys, 'R0')).bid, 1, 'the refused quote was not published')
  const m = await on.pushFetcher.metrics()
  assert.equal(m['wsps_fetcher_publish_requests_total{outcome="RATE_LIMITED"}'], 1)
})

test('a symbol quiet for longer than WSPS_HISTORY_TTL_MS keeps its latest quote as the snapshot; only its history was cut', async () => {
  // History on (the default): the latest quote is the history stream's
  // newest entry, so the stream outlives the history window.
  const keys = redisKeys('pq')
  const gateway = await stack.gateway({ WSPS_REDIS_KEY_PREFIX: 'pq' })
  const fetcher = await stack.fetcher({ WSPS_REDIS_KEY_PREFIX: 'pq', WSPS_PROVIDER: 'push', WSPS_PUBLISH_TOKEN: TOKEN, WSPS_HISTORY_TTL_MS: 1000 })
  for (let i = 1; i <= 5; i++) assert.equal((await publish(fetcher, { quotes: [{ symbol: 'QUIET', bid: i }] })).status, 200)
  assert.equal(await on.redis.xlen(keys.history('QUIET')), 5)
  const quietSince = Date.now()
  await waitFor(async () => await on.redis.xlen(keys.history('QUIET')) === 1, { timeout: 10_000, message: 'the quiet symbol\'s history cut to its latest quote' })
  assert.ok(Date.now() - quietSince >= 900, 'not before the history window passed')
  assert.equal(await on.redis.exists(keys.latest('QUIET')), 0, 'no `last` key: the stream holds the latest quote')
  assert.ok(await on.redis.pttl(keys.history('QUIET')) > 86_000_000, 'which lives as long as the latest quote would (WSPS_QUOTE_TTL_MS, 1 day)')
  const late = await stack.client(gateway.wsUrl)
  await late.sub(['QUIET'])
  await waitFor(() => late.quote('QUIET')?.bid === 5, { message: 'the snapshot of the quiet symbol' })
  assert.equal(late.quote('QUIET')?.seq, 5)
  assert.deepEqual(late.problems, [])
})

/**
 * A push-only fetcher on the push prefix without a rate limit (the one of
 * setUp has WSPS_PUBLISH_RATE, which a test above spends), started once.
 * @type {Promise<import('../src/index.js').ServiceHandle> | undefined}
 */
let unlimitedFetcher
const unlimited = () => (unlimitedFetcher ??= stack.fetcher({ WSPS_REDIS_KEY_PREFIX: 'pp', WSPS_PROVIDER: 'push', WSPS_PUBLISH_TOKEN: TOKEN }))

test('a quote older by ts than its symbol\'s newest is not published: the answer counts it refused as old', async () => {
  const f = await unlimited()
  const now = Date.now()
  assert.deepEqual((await publish(f, { quotes: [{ symbol: 'OLDTS', bid: 1, ts: now }] })).body, { accepted: 1 })
  // Another fetcher took a newer push meanwhile; this request was held up.
  const res = await publish(f, { quotes: [{ symbol: 'OLDTS', bid: 2, ts: now - 1000 }, { symbol: 'OLDTS', bid: 3, ts: now }] })
  assert.deepEqual([res.status, res.body], [200, { accepted: 1, refused: { old: 1 } }])
  const latest = await latestOf(pushKeys, 'OLDTS')
  assert.deepEqual([latest.seq, latest.bid], [2, 3], 'the old quote got no seq and never became the latest')
  const m = await f.metrics()
  assert.ok(m['wsps_fetcher_quotes_refused_total{reason="old"}'] >= 1)
})

test('Idempotency-Key: a retry within the window publishes nothing and gets the first answer again; another body under the key is refused; a bad key is a 400', async () => {
  const f = await unlimited()
  const body = { quotes: [{ symbol: 'IDEM1', bid: 1 }, { symbol: 'IDEM1', bid: 2 }] }
  const first = await publish(f, body, { key: 'order-4711' })
  assert.deepEqual([first.status, first.body], [200, { accepted: 2 }])
  const retry = await publish(f, body, { key: 'order-4711' })
  assert.deepEqual([retry.status, retry.body], [200, { accepted: 2 }], 'the first answer')
  assert.equal(retry.headers.get('idempotent-replayed'), 'true')
  assert.equal(first.headers.get('idempotent-replayed'), null)
  assert.equal(await on.redis.get(pushKeys.seq('IDEM1')), '2', 'published once')
  assert.equal(await on.redis.xlen(pushKeys.history('IDEM1')), 2)
  const reused = await publish(f, { quotes: [{ symbol: 'IDEM1', bid: 3 }] }, { key: 'order-4711' })
  assert.deepEqual([reused.status, reused.body.code], [422, 'IDEMPOTENCY_KEY_REUSED'])
  for (const key of ['x'.repeat(129), 'tab\there']) {
    const bad = await publish(f, { quotes: [{ symbol: 'IDEM1', bid: 4 }] }, { key })
    assert.deepEqual([bad.status, bad.body.code], [400, 'BAD_IDEMPOTENCY_KEY'], JSON.stringify(key))
  }
  assert.equal(await on.redis.get(pushKeys.seq('IDEM1')), '2', 'nothing else published')
  // Without a key every request publishes, as before.
  await publish(f, body)
  assert.equal(await on.redis.get(pushKeys.seq('IDEM1')), '4')
  const m = await f.metrics()
  assert.equal(m['wsps_fetcher_publish_requests_total{outcome="replayed"}'], 1)
  assert.equal(m['wsps_fetcher_publish_requests_total{outcome="IDEMPOTENCY_KEY_REUSED"}'], 1)
  assert.equal(m['wsps_fetcher_publish_requests_total{outcome="BAD_IDEMPOTENCY_KEY"}'], 2)
})

test('Idempotency-Key: the same request sent to two fetcher replicas at once is published once', async (t) => {
  const other = await stack.fetcher({ WSPS_REDIS_KEY_PREFIX: 'pp', WSPS_PROVIDER: 'push', WSPS_PUBLISH_TOKEN: TOKEN })
  const replicas = [await unlimited(), other]
  /** @type {Record<number, number>} */
  const seen = {}
  for (let round = 0; round < 10; round++) {
    const symbol = `IDEMC${round}`
    const body = { quotes: Array.from({ length: 50 }, (_, i) => ({ symbol, bid: i })) }
    // Both at once, several times each: a client retrying through a load balancer.
    const answers = await Promise.all([0, 1, 0, 1].map((i) => publish(replicas[i], body, { key: `retry-${symbol}` })))
    const statuses = answers.map((a) => a.status)
    for (const st of statuses) seen[st] = (seen[st] ?? 0) + 1
    assert.ok(answers.every((a) => (a.status === 200 && a.body.accepted === 50) || (a.status === 409 && a.body.code === 'IDEMPOTENCY_IN_PROGRESS')), JSON.stringify(statuses))
    assert.ok(statuses.includes(200))
    assert.equal(await on.redis.get(pushKeys.seq(symbol)), '50', `round ${round}: published once (${statuses})`)
    // Once it is done, every retry is answered from the record.
    const late = await publish(replicas[round % 2], body, { key: `retry-${symbol}` })
    assert.deepEqual([late.status, late.body, late.headers.get('idempotent-replayed')], [200, { accepted: 50 }, 'true'])
  }
  t.diagnostic(`answers to the concurrent copies by status: ${JSON.stringify(seen)}`)
})

/**
 * @param {import('../src/index.js').ServiceHandle} fetcher
 * @param {string | object} body
 */
async function publishBooks (fetcher, body) {
  const res = await fetch(`${fetcher.url}/v1/books`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: typeof body === 'string' ? body : JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

test('POST /v1/books: a snapshot and its deltas reach a client holding the book; bad input is refused whole with BAD_BOOK and its index; a delta without a book is refused by name', async () => {
  // Its own push-only fetcher: the other's rate (WSPS_PUBLISH_RATE) is spent by the tests before.
  const fetcher = await stack.fetcher({ WSPS_REDIS_KEY_PREFIX: 'pp', WSPS_PROVIDER: 'push', WSPS_PUBLISH_TOKEN: TOKEN })
  const res = await publishBooks(fetcher, { books: [
    { symbol: 'PBK', snapshot: true, bids: [['10.40', '3'], ['10.5', '2.50']], asks: [['10.6', '1']] },
    { symbol: 'PBK', bids: [['10.5', '0'], ['10.45', '7']], asks: [] }
  ] })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  const epoch = res.body.books[0].epoch
  assert.deepEqual(res.body, { accepted: 2, books: [{ symbol: 'PBK', seq: 1, epoch }, { symbol: 'PBK', seq: 2, epoch }] })

  const client = new WspsClient({ url: on.pushGateway.wsUrl, WebSocket, symbols: [] })
  client.connect()
  try {
    await client.subscribeBook(['PBK'], 10)
    await waitFor(() => client.book('PBK')?.seq === 2, { message: 'the book at the client' })
    assert.deepEqual([client.book('PBK')?.bids, client.book('PBK')?.asks], [[['10.45', '7'], ['10.4', '3']], [['10.6', '1']]], 'canonical decimals, best first')

    const bad = await publishBooks(fetcher, { books: [{ symbol: 'PBK', bids: [['10.3', '1']] }, { symbol: 'PBK', bids: [['ten', '1']] }] })
    assert.equal(bad.status, 400)
    assert.equal(bad.body.code, 'BAD_BOOK')
    assert.equal(bad.body.index, 1)
    for (const [book, why] of /** @type {[object, RegExp][]} */ ([
      [{ symbol: 'PBK', snapshot: true, bids: [['11', '1']], asks: [['10.9', '1']] }, /crossed/],
      [{ symbol: 'PBK', bids: [['10.3', '-1']] }, /size/],
      [{ symbol: 'PBK', sync: false, bids: [] }, /no levels/],
      [{ symbol: 'PBK', depth: 3 }, /unknown field/]
    ])) {
      const r = await publishBooks(fetcher, { books: [book] })
      assert.deepEqual([r.status, r.body.code], [400, 'BAD_BOOK'])
      assert.match(r.body.message, why)
    }
    assert.equal((await publishBooks(fetcher, '{"book":[]}')).body.code, 'BAD_BODY')

    const none = await publishBooks(fetcher, { books: [{ symbol: 'NOBK', asks: [['1', '1']] }] })
    assert.deepEqual(none.body, { accepted: 0, books: [{ symbol: 'NOBK', refused: 'nobook' }] })

    const lost = await publishBooks(fetcher, { books: [{ symbol: 'PBK', sync: false }] })
    assert.deepEqual(lost.body.books, [{ symbol: 'PBK', seq: 3, epoch }], 'nothing of the refused requests was written')
    await waitFor(() => client.book('PBK')?.sync === false, { message: 'the client told the book is out of sync' })
    assert.deepEqual([client.book('PBK')?.bids, client.book('PBK')?.asks], [[], []])

    // The source's own sequence: continued, old, then a gap, which the client is told as out of sync.
    for (const [book, why] of /** @type {[object, RegExp][]} */ ([
      [{ symbol: 'PBK', bids: [], sourceSeq: -1 }, /sourceSeq/],
      [{ symbol: 'PBK', bids: [], sourceSeq: 5, sourcePrev: 5 }, /sourcePrev/],
      [{ symbol: 'PBK', snapshot: true, bids: [], asks: [], sourceSeq: 5, sourcePrev: 4 }, /sourcePrev/]
    ])) {
      const r = await publishBooks(fetcher, { books: [book] })
      assert.deepEqual([r.status, r.body.code], [400, 'BAD_BOOK'])
      assert.match(r.body.message, why)
    }
    const seqd = await publishBooks(fetcher, { books: [
      { symbol: 'PBK', snapshot: true, bids: [['10', '1']], asks: [['11', '1']], sourceSeq: 100 },
      { symbol: 'PBK', bids: [['10', '2']], sourceSeq: 101 },
      { symbol: 'PBK', bids: [['10', '9']], sourceSeq: 101 }
    ] })
    assert.deepEqual(seqd.body.books.map((/** @type {any} */ b) => b.refused ?? b.seq), [4, 5, 'old'])
    await waitFor(() => client.book('PBK')?.seq === 5 && client.book('PBK')?.sync === true, { message: 'in sync at the continued delta' })
    assert.deepEqual(client.book('PBK')?.bids, [['10', '2']])
    const gap = await publishBooks(fetcher, { books: [{ symbol: 'PBK', bids: [['10', '3']], sourceSeq: 104, sourcePrev: 103 }] })
    assert.deepEqual(gap.body, { accepted: 0, books: [{ symbol: 'PBK', seq: 6, epoch, refused: 'gap' }] })
    await waitFor(() => client.book('PBK')?.sync === false, { message: 'the client told the book is out of sync after the source\'s gap' })
    assert.equal(client.book('PBK')?.seq, 6)
  } finally {
    client.close()
  }
})
