// Waiting for a replica before fanning a tick out (issue 25, item 5;
// WSPS_PUBLISH_WAIT_REPLICAS): real processes on loopback, a primary and two
// replicas watched by three Sentinels (two, so that the promoted one again
// has a replica to wait for), a fetcher that waits for 1 replica,
// one gateway and distinct subscribers on the real JS client.
//
// The failure this guards against needs the replicas to fall behind, which
// on loopback they almost never do by themselves: the primary is made to
// refuse them (a new password, the replication links killed), so every
// write after that exists on the primary only. Then the primary is
// SIGKILLed and Sentinel promotes a replica. Without waiting, the ticks of
// that window were fanned out (the live readers got them) and are not on the
// promoted replica: the fetcher's floor keeps seq rising under a new epoch,
// and a reader that left before the window and resumes with `since` is told
// `recovered:false` and gets a `snap` instead of a replay. With
// waiting none of them was fanned out (WAIT never got its ack; the
// connection broke with the primary and the calls failed), so the promoted
// replica holds every tick anyone saw: 0 lost, live or resumed, one epoch.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Redis } from 'ioredis'
import { RecordingSubscriber, sleep, startFetcher, startGateway, startRedisCluster, sumMetrics, TestClient, ticksLost, useSentinelStack, waitFor } from '../src/index.js'

const SYMBOLS = ['WR1', 'WR2', 'WR3', 'WR4']
const CLIENTS = 3
/** How long the primary runs without its replica before it is killed: ~10 ticks per symbol. */
const ALONE_MS = 500

// 20 ticks a second per symbol; WAIT longer than the primary runs alone,
// so no publish of that window gives up waiting and goes out anyway.
const { on, track } = useSentinelStack({ gateways: 1, fetcherEnv: { WSPS_PUBLISH_WAIT_REPLICAS: 1, WSPS_PUBLISH_WAIT_TIMEOUT_MS: 3000 } })

/** @param {string} url a distinct subscriber of SYMBOLS */
function subscriber (url) {
  return track(new RecordingSubscriber({ url: [url], symbols: SYMBOLS }))
}

/**
 * @param {import('../src/index.js').ServiceHandle} service
 * @param {string} prefix
 */
const metric = async (service, prefix) => sumMetrics(await service.metrics(), prefix)

test('with WSPS_PUBLISH_WAIT_REPLICAS=1, no tick anyone saw is lost when the primary dies while its replicas lag: live readers and a reader resuming from the promoted replica\'s history lose 0', { timeout: 120_000 }, async (t) => {
  const { fetcher, gws: [gateway] } = on
  const subs = Array.from({ length: CLIENTS }, () => subscriber(gateway.wsUrl))
  const flowing = async (/** @type {number} */ more) => {
    const target = Math.max(...subs.map((s) => s.newest())) + more
    await waitFor(() => subs.every((s) => s.passed(target)), { timeout: 30_000, message: `every subscriber past seq ${target}` })
  }
  // A reader that leaves before the primary runs alone and resumes from
  // history (`since`) after the failover: it gets only what the promoted
  // replica holds. Live readers see the window's ticks (if any are fanned
  // out) either way.
  const late = await TestClient.connect(gateway.wsUrl)
  await late.sub(SYMBOLS, { mode: 'distinct' })
  await flowing(20)
  await waitFor(() => SYMBOLS.every((s) => late.quote(s)), { message: 'the late reader holds every symbol' })
  /** @type {Record<string, {seq: number, epoch: string}>} */
  const since = Object.fromEntries(SYMBOLS.map((s) => [s, { seq: late.quote(s)?.seq, epoch: late.quote(s)?.epoch }]))
  const held = SYMBOLS.map((s) => ({ ...late.quote(s) }))
  await late.close()

  const old = await on.redis.primary()
  assert.ok(old !== null)
  const primary = new Redis({ host: '127.0.0.1', port: old, password: on.redis.password, maxRetriesPerRequest: 0, retryStrategy: () => null })
  primary.on('error', () => {})
  // The replicas can no longer sync: they reconnect with the old password.
  await primary.config('SET', 'requirepass', `${on.redis.password}-changed`)
  await primary.call('CLIENT', 'KILL', 'TYPE', 'replica')
  const before = Math.max(...subs.map((s) => s.newest()))
  await sleep(ALONE_MS)
  const during = Math.max(...subs.map((s) => s.newest()))
  primary.disconnect()
  await on.redis.killPrimary()
  const promoted = await on.redis.newPrimary(old)
  const np = new Redis({ host: '127.0.0.1', port: promoted, password: on.redis.password })
  const kept = Number(await np.get(`wsps:{${SYMBOLS[0]}}:seq`))
  np.disconnect()
  t.diagnostic(`primary ${old} alone for ${ALONE_MS} ms (newest seq a subscriber held ${before} -> ${during}), killed; ${promoted} promoted, holding ${SYMBOLS[0]} up to seq ${kept} (a subscriber had ${Math.max(0, ...subs.map((x) => x.lastSeq(SYMBOLS[0])))})`)
  await flowing(40).catch((err) => {
    throw new Error(`${err.message}\n${on.services.map((s) => `--- ${s.name}\n${s.logs.slice(-20).join('\n')}`).join('\n')}`)
  })

  const back = await TestClient.connect(gateway.wsUrl)
  // It holds what it held when it left: the replay continues that.
  for (const q of held) back.receiver.snap(/** @type {any} */ (q))
  const ack = await back.sub(SYMBOLS, /** @type {{mode: string}} */ ({ mode: 'distinct', since }))
  const target = Math.max(...subs.map((x) => x.newest()))
  await waitFor(() => SYMBOLS.every((s) => (back.seqs.get(s)?.at(-1) ?? 0) >= target), { timeout: 20_000, message: `the late reader past seq ${target}` })
    .catch((err) => {
      throw new Error(`${err.message}: ack ${JSON.stringify(ack)}, seqs ${JSON.stringify([...back.seqs])}, problems ${back.problems.join('; ')}\n${on.services.map((x) => `--- ${x.name}\n${x.logs.slice(-20).join('\n')}`).join('\n')}`)
    })
  back.close()
  const lateLost = ticksLost(new Map(SYMBOLS.map((s) => [s, [since[s].seq, ...(back.seqs.get(s) ?? [])]])))
  t.diagnostic(`late reader resumed from seq ${since[SYMBOLS[0]].seq}: recovered ${JSON.stringify(ack.recovered)}, ticks lost ${lateLost.lost} of ${lateLost.got}`)

  const lost = subs.reduce((a, s) => a + s.ticksLost().lost, 0)
  const got = subs.reduce((a, s) => a + s.ticksLost().got, 0)
  const notRecovered = subs.flatMap((s) => s.recoveries()).filter((r) => !r.recovered)
  const epochs = Math.max(...subs.flatMap((s) => [...s.epochs().values()].map((e) => e.size)))
  /** @type {Record<string, number>} */
  const waits = {}
  for (const r of ['acked', 'short', 'failed']) waits[r] = await metric(fetcher, `wsps_fetcher_replica_waits_total{result="${r}"`)
  t.diagnostic(`ticks lost ${lost} of ${got}; recovered:false ${notRecovered.length}; most epochs one symbol went through ${epochs}; fetcher waits ${JSON.stringify(waits)}`)
  assert.equal(lost, 0, 'ticks lost by the live readers')
  assert.deepEqual(ack.recovered, Object.fromEntries(SYMBOLS.map((s) => [s, true])), 'the late reader recovered every symbol from the promoted replica\'s history')
  assert.equal(lateLost.lost, 0, 'ticks lost by the late reader')
  assert.deepEqual(back.problems, [])
  assert.equal(subs.reduce((a, s) => a + s.ticksDisordered(), 0), 0, 'no quote twice or out of order')
  assert.equal(epochs, 1, 'one epoch throughout: the promoted replica continues the history every subscriber saw')
  assert.deepEqual(notRecovered, [], 'no symbol told recovered:false')
  assert.ok(waits.acked > 0, 'the fetcher waited for the replica')
})

test('on a Redis Cluster (3 primaries, each with a replica) WAIT goes to the primary holding each quote\'s slot: every quote is acknowledged, none waits out the timeout, and distinct readers get every tick in order', { timeout: 120_000 }, async (t) => {
  const cluster = await startRedisCluster({ masters: 3, replicas: 1 })
  const env = { WSPS_REDIS_MODE: 'cluster' }
  /** @type {import('../src/index.js').ServiceHandle[]} */
  const procs = []
  try {
    procs.push(await startFetcher(cluster.url, { ...env, WSPS_FETCH_INTERVAL_MS: 100, WSPS_PUBLISH_WAIT_REPLICAS: 1, WSPS_PUBLISH_WAIT_TIMEOUT_MS: 2000 }))
    procs.push(await startGateway(cluster.url, env))
    // Enough symbols that every shard owns some.
    const symbols = Array.from({ length: 12 }, (_, i) => `WC${i}`)
    const c = await TestClient.connect(procs[1].wsUrl)
    await c.sub(symbols, { mode: 'distinct' })
    for (const s of symbols) await c.waitQuotes(s, 10, 20_000)
    c.close()
    /** @type {Record<string, number>} */
    const waits = {}
    for (const r of ['acked', 'short', 'failed']) waits[r] = await metric(procs[0], `wsps_fetcher_replica_waits_total{result="${r}"`)
    t.diagnostic(`fetcher waits ${JSON.stringify(waits)}; ticks lost ${ticksLost(c.seqs).lost} of ${ticksLost(c.seqs).got}`)
    assert.deepEqual(c.problems, [])
    assert.equal(ticksLost(c.seqs).lost, 0)
    assert.ok(waits.acked >= symbols.length * 10, 'one wait per quote, acknowledged')
    assert.equal(waits.short, 0, 'no wait timed out: each went where its quote was written')
  } finally {
    await Promise.all(procs.map((p) => p.stop()))
    await cluster.close()
  }
})
