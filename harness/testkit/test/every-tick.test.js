// Every tick through every fault (issue "Every tick"): distinct subscribers
// on the real JS client, real gateways, a real fetcher and a real
// redis-server, counting ticks (not subscriptions). Each fault must lose 0
// ticks where the history covers the hole, and say so (`recovered: false`, a
// new epoch) where it cannot. One lost tick fails the test.

import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { redisKeys } from '@wsps/shared/keys'
import { publishArgs, registerScripts } from '@wsps/shared/scripts'
import { RecordingSubscriber, setUp, useStack, waitFor } from '../src/index.js'

const SYMBOLS = ['ET1', 'ET2', 'ET3', 'ET4']
const CLIENTS = 6

/** @type {RecordingSubscriber[]} */
const clients = []
after(() => { for (const c of clients) c.close() })
// Its Redis keeps an append-only file: a restart may come back with everything.
const stack = useStack({ persist: true })
const on = setUp(async () => {
  // 20 ticks a second per symbol; history (default 100) covers 5 s of each.
  const fetcher = await stack.fetcher({ WSPS_FETCH_INTERVAL_MS: 50 })
  const gws = [await stack.gateway({ WSPS_DRAIN_MS: 300 }), await stack.gateway({ WSPS_DRAIN_MS: 300 })]
  return { fetcher, gws }
})

/**
 * A distinct subscriber that records every tick it is given, and what the
 * gateway said about each resumption.
 *
 * @param {string[]} urls
 * @param {{transport?: 'auto' | 'sse'}} [options]
 */
function subscriber (urls, { transport = /** @type {'auto' | 'sse'} */ ('auto') } = {}) {
  const s = new RecordingSubscriber({ url: urls, symbols: SYMBOLS, transport })
  clients.push(s)
  return s
}

/**
 * Waits until every subscriber is past the newest seq any had when called
 * plus `more`: the stream has gone on after the fault.
 *
 * @param {RecordingSubscriber[]} subs
 * @param {number} [more]
 */
async function flowing (subs, more = 20) {
  const target = Math.max(...subs.map((s) => Math.max(0, ...SYMBOLS.map((sym) => s.lastSeq(sym))))) + more
  await waitFor(() => subs.every((s) => SYMBOLS.every((sym) => s.lastSeq(sym) >= target)), { timeout: 15_000, message: `every subscriber past seq ${target}` })
}

/** @param {RecordingSubscriber[]} subs */
function tally (subs) {
  const totals = subs.map((s) => s.ticksLost())
  return { lost: totals.reduce((a, t) => a + t.lost, 0), got: totals.reduce((a, t) => a + t.got, 0), disorder: subs.reduce((a, s) => a + s.ticksDisordered(), 0) }
}

/**
 * Drains the first gateway under `subs` and checks every tick reached them
 * through it; the drained gateway is replaced for the next test.
 *
 * @param {import('node:test').TestContext} t
 * @param {RecordingSubscriber[]} subs
 * @param {number} resumptions symbol resumptions the drain must cause at least
 */
async function throughDrain (t, subs, resumptions) {
  await flowing(subs)
  await on.gws[0].stop('SIGTERM')
  await flowing(subs, 40)
  const { lost, got, disorder } = tally(subs)
  const resumed = subs.flatMap((s) => s.recoveries())
  t.diagnostic(`ticks lost ${lost} of ${got}; ${resumed.filter((r) => r.recovered).length} symbol resumptions recovered, ${resumed.filter((r) => !r.recovered).length} not`)
  assert.ok(resumed.length >= resumptions, 'the drained clients resumed every symbol')
  assert.deepEqual(resumed.filter((r) => !r.recovered), [])
  assert.equal(lost, 0, 'ticks lost')
  assert.equal(disorder, 0, 'duplicates or reordering')
  for (const s of subs) s.close()
  on.gws[0] = await stack.gateway({ WSPS_DRAIN_MS: 300 })
}

test('a gateway drained (1012, rolling upgrade): its distinct subscribers resume on the other with every tick', async (t) => {
  const [a, b] = on.gws
  const subs = Array.from({ length: CLIENTS }, (_, i) => subscriber(i % 2 === 0 ? [a.wsUrl, b.wsUrl] : [b.wsUrl, a.wsUrl]))
  await throughDrain(t, subs, SYMBOLS.length * (CLIENTS / 2))
})

test('over SSE too: a drained gateway\'s distinct streams resume on the other (since in the URL) with every tick', async (t) => {
  const [a, b] = on.gws
  const subs = Array.from({ length: 4 }, () => subscriber([a.wsUrl, b.wsUrl], { transport: 'sse' }))
  await flowing(subs)
  assert.ok(subs.every((s) => s.client.status.transport === 'sse'))
  await throughDrain(t, subs, SYMBOLS.length * subs.length)
})

test('the gateways\' Redis pub/sub connections killed: the gap is filled from history, no snapshot, no lost tick', async (t) => {
  const subs = on.gws.map((g) => subscriber([g.wsUrl]))
  await flowing(subs)
  const redis = await stack.redisClient()
  const killed = Number(await redis.client('KILL', 'TYPE', 'pubsub'))
  assert.ok(killed >= 2, `killed ${killed} pub/sub connections`)
  await flowing(subs, 40)
  const { lost, got, disorder } = tally(subs)
  const filled = await Promise.all(on.gws.map((g) => metric(g.url, 'wsps_gateway_gap_fills_total{result="filled"')))
  t.diagnostic(`ticks lost ${lost} of ${got}; gap fills ${filled.join(', ')}`)
  assert.equal(lost, 0, 'ticks lost')
  assert.equal(disorder, 0)
  assert.ok(filled.every((n) => n >= SYMBOLS.length), 'each gateway filled every symbol from history')
  for (const s of subs) s.close()
})

test('a pub/sub message Redis never delivered (published, in history): the gap is filled from history, no lost tick', async (t) => {
  const subs = on.gws.map((g) => subscriber([g.wsUrl]))
  await flowing(subs)
  const redis = registerScripts(await stack.redisClient())
  const keys = redisKeys('wsps')
  const before = await Promise.all(on.gws.map((g) => metric(g.url, 'wsps_gateway_gap_fills_total{result="filled"')))
  for (const symbol of ['ET1', 'ET2']) {
    for (let i = 0; i < 3; i++) {
      // The publish script as the fetcher calls it, but PUBLISHing to a
      // channel nobody listens on: the quote is in seq and history only.
      // With the token in the symbol's fence (the claim the fetcher's last
      // job had); refused when a newer job's quote came first: again.
      await waitFor(async () => {
        const token = Number((await redis.get(keys.fence(symbol)) ?? '0').split(' ')[0])
        const ts = Date.now()
        const body = JSON.stringify({ symbol, ts, bid: 1, ask: 2, last: 1.5 })
        const args = publishArgs(keys, [{ symbol, body, floor: 0, ts, token }], { ttlMs: 60000, sharded: false, pushLeaseMs: 0, historySize: 100 })
        args[args.indexOf(keys.channel(symbol))] = `${keys.channel(symbol)}:void`
        const [seq] = await redis.wspsPublish(...args)
        return Number(seq) > 0
      }, { message: `a quote of ${symbol} in seq and history only` })
    }
  }
  await flowing(subs, 20)
  const { lost, got, disorder } = tally(subs)
  const after = await Promise.all(on.gws.map((g) => metric(g.url, 'wsps_gateway_gap_fills_total{result="filled"')))
  t.diagnostic(`ticks lost ${lost} of ${got}; gap fills ${after.map((n, i) => n - before[i]).join(', ')}`)
  assert.equal(lost, 0, 'ticks lost')
  assert.equal(disorder, 0)
  assert.ok(after.every((n, i) => n - before[i] >= 2), 'each gateway filled both symbols\' holes from history')
  for (const s of subs) s.close()
})

test('Redis restarted with persistence: history and epoch survive, no lost tick; restarted empty: a new epoch and recovered:false', async (t) => {
  const subs = on.gws.map((g) => subscriber([g.wsUrl]))
  await flowing(subs)
  // kill -9: the append-only file (fsynced per write) is loaded again on start.
  await stack.redis.kill()
  await stack.redis.start()
  await flowing(subs, 40)
  const saved = tally(subs)
  const fills = await Promise.all(on.gws.map(async (g) => `${await metric(g.url, 'wsps_gateway_gap_fills_total{result="filled"')} filled/${await metric(g.url, 'wsps_gateway_gap_fills_total{result="snapshot"')} snapshot`))
  t.diagnostic(`with persistence: ticks lost ${saved.lost} of ${saved.got}; gap fills ${fills.join(', ')}; epochs ${subs.map((s) => [...s.epochs().values()].map((e) => [...e].join('|')).join(' ')).join(' ')}`)
  assert.equal(saved.lost, 0, 'ticks lost across a restart with persistence')
  assert.equal(saved.disorder, 0)
  assert.ok(subs.every((s) => [...s.epochs().values()].every((e) => e.size === 1)), 'one epoch throughout')

  // kill -9 and its files gone: Redis comes back empty. The fetcher's seq
  // floor keeps seq rising, but the history is new: nobody may take it for
  // the old one, and every subscriber is told.
  const before = subs.map((s) => s.recoveries().length)
  await stack.redis.kill()
  stack.redis.forget()
  await stack.redis.start()
  await flowing(subs, 40)
  const marked = await Promise.all(on.gws.map((g) => metric(g.url, 'wsps_gateway_gap_fills_total{result="snapshot"')))
  const emptied = tally(subs)
  t.diagnostic(`restarted empty: ticks lost ${emptied.lost - saved.lost}; gap-fill snapshots ${marked.join(', ')}`)
  assert.ok(subs.every((s) => [...s.epochs().values()].every((e) => e.size >= 2)), 'every symbol moved to a new epoch')
  assert.ok(marked.every((n) => n >= SYMBOLS.length), 'each gateway counted every symbol as not filled')
  subs.forEach((s, i) => {
    const told = s.recoveries().slice(before[i])
    assert.deepEqual([...new Set(told.filter((r) => !r.recovered).map((r) => r.symbol))].sort(), SYMBOLS, 'recovered:false for every symbol')
    assert.deepEqual(told.filter((r) => r.recovered), [], 'never recovered:true across a lost history')
  })
  for (const s of subs) s.close()
})

/**
 * One counter of a gateway's /metrics, summed over the series that start with `prefix`.
 * @param {string} url
 * @param {string} prefix e.g. `name{label="x"`
 */
async function metric (url, prefix) {
  const text = await (await fetch(`${url}/metrics`)).text()
  return text.split('\n').filter((l) => l.startsWith(prefix)).reduce((a, l) => a + Number(l.split(' ').at(-1)), 0)
}
