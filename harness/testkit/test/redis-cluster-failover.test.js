// A Redis Cluster primary killed under load, five times in a row (it was a
// race: one gateway in three starved its clients forever): a real 6-node
// cluster (3 primaries, 3 replicas, cluster-node-timeout 2 s to keep it
// short) on loopback, two gateways (ioredis auto-pipelining on one, off on
// the other) and a fetcher in cluster mode, distinct subscribers on the real
// JS client. After each
// promotion every client must get every symbol again within 10 s; the
// shards that did not fail must not stall beyond the cluster's own down
// window; nobody is left without quotes and without a close. Order books
// of symbols on every shard, held at two depths on the two gateways, are
// the books in Redis after each failover (the fetcher paused to compare).

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { connectRedis } from '@wsps/shared/redis'
import { RecordingSubscriber, booksAsInRedis, failoverVictim, holdBooks, killPrimary, useClusterStack, waitFor } from '../src/index.js'

const NODE_TIMEOUT_MS = 2000
const FAILOVERS = 5
const SYMBOLS = Array.from({ length: 30 }, (_, i) => `CF${i}`)
const BOOKS = SYMBOLS.slice(0, 6)

const { on, track } = useClusterStack({ nodeTimeoutMs: NODE_TIMEOUT_MS })

/** @param {string} url */
function subscriber (url) {
  return track(new RecordingSubscriber({ url, symbols: SYMBOLS }))
}

test(`a Cluster primary killed ${FAILOVERS} times in a row: every client gets every symbol again within 10 s of the promotion, the other shards keep flowing, nobody starves`, async (t) => {
  const { cluster, gws } = on
  const subs = [subscriber(gws[0].wsUrl), subscriber(gws[0].wsUrl), subscriber(gws[1].wsUrl), subscriber(gws[1].wsUrl)]
  const books = [await holdBooks(gws[0].wsUrl, BOOKS, 10), await holdBooks(gws[1].wsUrl, BOOKS, 25)]
  for (const b of books) track(b.client)
  const redis = connectRedis({ redisUrl: cluster.url, redisMode: 'cluster', redisPassword: '', redisUsername: '', redisTlsCaFile: '' }, { name: 'wsps-test' })
  t.after(() => redis.disconnect())
  await waitFor(() => subs.every((s) => s.quietSince(0).length === 0), { timeout: 20_000, message: 'every symbol quoted to every client' })
  await booksAsInRedis(books, redis, on.fetcher.pid)
  for (let round = 1; round <= FAILOVERS; round++) {
    // Not the seed, not the owner of the scheduling keys: the failure the issue saw.
    const { victim, others } = await failoverVictim(cluster, SYMBOLS)
    const { killedAt, promotedAt } = await killPrimary(cluster, victim, { timeout: 30_000, interval: 100 })
    // The symbols of the shards that did not fail never stopped for longer than the cluster's down window.
    await waitFor(() => subs.every((s) => s.quietSince(promotedAt).length === 0), { timeout: 10_000, interval: 100, message: `round ${round}: every client quoted on every symbol after the promotion` }).catch((err) => {
      const tail = (/** @type {{logs: string[]}} */ p) => p.logs.slice(-12).join('\n')
      throw new Error(`${err.message}; stale symbols per client ${subs.map((s) => s.quietSince(promotedAt).length).join(',')}\n--- gateway 1:\n${tail(gws[0])}\n--- gateway 2:\n${tail(gws[1])}\n--- fetcher:\n${tail(on.fetcher)}`)
    })
    const back = Date.now()
    // The other shards' symbols: no silence longer than the cluster's own
    // down window (kill to promotion: with full coverage required, the whole
    // cluster refuses writes until then) plus the fetcher's cycle and slack.
    const window = promotedAt - killedAt
    const silences = others.map((sym) => Math.max(...subs.map((s) => s.longestSilence(sym, killedAt, back))))
    const worst = Math.max(0, ...silences)
    t.diagnostic(`round ${round}: killed ${victim}, promoted after ${window} ms, every client had every symbol ${back - promotedAt} ms after the promotion; the other shards' ${others.length} symbols silent at most ${worst} ms; ticks lost so far ${subs.map((s) => s.ticksLost().lost).join(',')}`)
    assert.ok(others.length > 0, 'some symbols live on the shards that did not fail')
    assert.ok(worst <= window + 3000, `round ${round}: a symbol of a shard that did not fail went ${worst} ms without a quote, past the down window (${window} ms) + 3 s`)
    await booksAsInRedis(books, redis, on.fetcher.pid, { timeout: 10_000 })
    await cluster.start(victim)
    await cluster.ok()
  }
  t.diagnostic(`books: client resyncs ${books.map((b) => b.client.bookResyncs).join(', ')}`)
  assert.deepEqual(books.map((b) => b.client.bookResyncs), [0, 0], 'no book gap or checksum mismatch seen by a client')
  for (const s of subs) assert.deepEqual(s.closeCodes().filter((c) => c !== 1012), [], 'no client was closed')
  for (const g of gws) assert.equal(g.proc.exitCode, null, 'gateway still running')
})
