// Shards are isolated (issue "Silent faults"): a Redis Cluster primary killed
// with Redis's default cluster-node-timeout (15 s), so its shard is away for
// ~16 s. The symbols of the shards that did not fail must never go quiet for
// more than a second at any client (no subscribe pass, resync or read waits
// on every shard); the failed shard's symbols are told `stale` and `fresh`
// again after the promotion, and no tick is lost untold (the killed
// primary's last writes, not yet replicated, go with it: their subscribers
// get a snap marked recovered:false; WSPS_PUBLISH_WAIT_REPLICAS keeps them).
// The cluster runs with `cluster-require-full-coverage no`
// (infra/redis-cluster/README.md): with `yes`,
// Redis itself refuses every shard while one's slots are uncovered.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ServerOp } from '@wsps/protocol'
import { RecordingSubscriber, TestClient, failoverVictim, killPrimary, redisCommand, slotOwner, ticksLost, useClusterStack, waitFor } from '../src/index.js'

/** Redis's default cluster-node-timeout. */
const NODE_TIMEOUT_MS = 15_000
const SYMBOLS = Array.from({ length: 24 }, (_, i) => `CS${i}`)

const { on, track } = useClusterStack({ nodeTimeoutMs: NODE_TIMEOUT_MS, fullCoverage: false, gatewayEnv: { WSPS_LOG_LEVEL: 'info' }, fetcherEnv: { WSPS_HISTORY_SIZE: 1000 } })

/** @param {string} url */
function subscriber (url) {
  return track(new RecordingSubscriber({ url, symbols: SYMBOLS }))
}

/**
 * Ticks lost on symbols the client was not told lost anything (a snap
 * marked recovered:false).
 *
 * @param {RecordingSubscriber} s
 */
function lostUntold (s) {
  const toldLost = new Set(s.recoveries().filter((r) => !r.recovered).map((r) => r.symbol))
  return ticksLost(new Map([...s.seqs()].filter(([symbol]) => !toldLost.has(symbol)))).lost
}

test('a Cluster primary killed (default node timeout, ~16 s away): the other shards\' symbols are never quiet over 1 s at any client; the failed shard\'s are told stale, then fresh, with 0 ticks lost untold', async (t) => {
  const { cluster, gws } = on
  const subs = [subscriber(gws[0].wsUrl), subscriber(gws[0].wsUrl), subscriber(gws[1].wsUrl), subscriber(gws[1].wsUrl)]
  await waitFor(() => subs.every((s) => s.quietSince(0).length === 0), { timeout: 20_000, message: 'every symbol quoted to every client' })
  const watcher = await TestClient.connect(gws[1].wsUrl)
  track({ close: () => watcher.ws.terminate() })
  await watcher.sub(SYMBOLS)
  const { victim, failed, others } = await failoverVictim(cluster, SYMBOLS)

  const { killedAt, promotedAt } = await killPrimary(cluster, victim, { timeout: 40_000, interval: 200 })
  await waitFor(() => subs.every((s) => s.quietSince(promotedAt).length === 0), { timeout: 10_000, interval: 100, message: 'every client quoted on every symbol after the promotion' })
  const back = Date.now()
  // What the fetcher published (each quote's ts, from its symbol's history):
  // a quiet stretch there is not the gateway's.
  const published = await Promise.all(others.map(async (sym) => {
    const port = await slotOwner(await cluster.primaries(), `wsps:{${sym}}:hist`)
    const ts = [...(await redisCommand(port, `XRANGE wsps:{${sym}}:hist - +`)).matchAll(/"ts":(\d+)/g)].map((m) => Number(m[1])).filter((x) => x > killedAt && x < back)
    let gap = 0
    let at = 0
    for (let i = 1; i < ts.length; i++) if (ts[i] - ts[i - 1] > gap) [gap, at] = [ts[i] - ts[i - 1], ts[i - 1] - killedAt]
    return { gap, at }
  }))
  const worstPublished = published.reduce((a, b) => (b.gap > a.gap ? b : a), { gap: 0, at: 0 })
  const silences = others.map((sym) => Math.max(...subs.map((s) => s.longestSilence(sym, killedAt, back))))
  const worst = Math.max(0, ...silences)
  const stale = watcher.frames.filter((f) => f.op === ServerOp.STALE).flatMap((f) => f.symbols)
  const fresh = watcher.frames.filter((f) => f.op === ServerOp.FRESH).flatMap((f) => f.symbols)
  const lost = subs.reduce((n, s) => n + s.ticksLost().lost, 0)
  const untold = subs.reduce((n, s) => n + lostUntold(s), 0)
  const disorder = subs.reduce((n, s) => n + s.ticksDisordered(), 0)
  t.diagnostic(`killed ${victim}: promoted after ${promotedAt - killedAt} ms, all back ${back - promotedAt} ms later; the other shards' ${others.length} symbols quiet at most ${worst} ms (published with gaps of at most ${worstPublished.gap} ms, ${worstPublished.at} ms after the kill); told stale ${stale.length} (of ${failed.length} on the failed shard), fresh ${fresh.length}; lost ${lost} (untold ${untold}: the rest the killed primary had not replicated, told recovered:false), disorder ${disorder}`)
  if (fresh.length === 0 || worst > 1000) t.diagnostic(gws[1].logs.filter((l) => !l.includes('"level":30,') || /stale|resync|shard|live/.test(l)).join('\n'))
  assert.ok(others.length > 0 && failed.length > 0, 'symbols on both kinds of shard')
  assert.ok(worst <= 1000, `a symbol of a shard that did not fail went ${worst} ms without a quote`)
  assert.deepEqual([...new Set(stale)].sort(), [...failed].sort(), 'the failed shard\'s symbols, and only those, were told stale')
  assert.deepEqual([...new Set(fresh)].sort(), [...failed].sort(), 'and fresh again')
  assert.equal(untold, 0, 'ticks lost without a recovered:false')
  assert.equal(disorder, 0, 'duplicates or reordering')
})
