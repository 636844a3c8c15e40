// Silent faults (issue "Silent faults"): a Redis link that goes quiet with
// its socket open, made so by a real Toxiproxy between a gateway and a real
// redis-server. Clients of a silent gateway are told `stale` within 5 s and
// never shown a frozen price as live; a gateway cut off alone moves its
// clients (1012) and they resume elsewhere with every tick; when Redis is
// silent for every gateway, clients stay, told stale, and are gap filled.

import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { Disconnect, ServerOp } from '@wsps/protocol'
import { GATEWAY_MAIN, RecordingSubscriber, TestClient, httpOk, setUp, sleep, startToxiproxy, useStack, waitFor } from '../src/index.js'

const SYMBOLS = ['SF1', 'SF2', 'SF3']

/** @type {{close: () => void}[]} */
const clients = []
after(() => { for (const c of clients) c.close() })
after(() => on.toxi?.stop())
const stack = useStack()
const on = setUp(async () => {
  const toxi = await startToxiproxy()
  // 20 ticks a second per symbol; a history of 1000 covers the silences below.
  await stack.fetcher({ WSPS_FETCH_INTERVAL_MS: 50, WSPS_HISTORY_SIZE: 1000 })
  return { toxi }
})

/**
 * A gateway whose Redis link goes through its own proxy (defaults for
 * every liveness setting: what is tested is what ships).
 */
async function proxiedGateway () {
  const proxy = await on.toxi.createProxy({ upstream: `127.0.0.1:${stack.redis.port}` })
  const gw = await stack.service(GATEWAY_MAIN, { WSPS_REDIS_URL: `redis://127.0.0.1:${proxy.port}`, WSPS_DRAIN_MS: 300, WSPS_UNSUBSCRIBE_DELAY_MS: 200 }, { name: 'gateway' })
  return { gw, proxy }
}

/**
 * A distinct subscriber on the real JS client that records every tick, its
 * resumptions and the gateways it was served by.
 *
 * @param {string[]} urls
 */
function subscriber (urls) {
  const s = new RecordingSubscriber({ url: urls, symbols: SYMBOLS })
  clients.push(s)
  return s
}

/** @param {RecordingSubscriber} s @returns {number} the seq every symbol has passed */
const newest = (s) => Math.min(...SYMBOLS.map((sym) => s.lastSeq(sym)))

/** @typedef {{op: string, symbols: string[], since?: number, at: number}} Notice a `stale` or `fresh` frame, and when it came */

/**
 * A raw protocol client that notes when each `stale` and `fresh` frame came.
 *
 * @param {string} url
 */
async function watcher (url) {
  const c = await TestClient.connect(url)
  /** @type {Notice[]} */
  const notices = []
  c.ws.on('message', (data) => {
    const msg = JSON.parse(String(data))
    if (msg.op === ServerOp.STALE || msg.op === ServerOp.FRESH) notices.push({ ...msg, at: Date.now() })
  })
  clients.push({ close: () => c.ws.terminate() })
  await c.sub(SYMBOLS)
  return { c, notices }
}

/** @param {RecordingSubscriber[]} subs @param {number} [more] */
async function flowing (subs, more = 20) {
  const target = Math.max(...subs.map(newest)) + more
  await waitFor(() => subs.every((s) => newest(s) >= target), { timeout: 20_000, message: `every subscriber past seq ${target}` })
}

test('a gateway whose Redis link goes silent: its clients are told stale within 5 s, it turns unready, moves them (1012), and they resume on the other gateway with every tick', async (t) => {
  const { gw: a, proxy } = await proxiedGateway()
  const b = await stack.gateway({ WSPS_DRAIN_MS: 300 })
  const subs = Array.from({ length: 4 }, () => subscriber([a.wsUrl, b.wsUrl]))
  const w = await watcher(a.wsUrl)
  await flowing(subs)
  // The proxied gateway learns of its peer at its next announcement (every second).
  await sleep(1500)
  assert.ok(subs.every((s) => s.nodes().has(a.name) && !s.nodes().has(b.name)), 'every subscriber starts on the proxied gateway')

  const silentAt = Date.now()
  await proxy.silence()
  const stale = /** @type {Notice} */ (await waitFor(() => w.notices.find((n) => n.op === ServerOp.STALE), { timeout: 8000, message: 'a stale frame' }))
  const closed = await Promise.race([w.c.closedPromise, new Promise((resolve) => setTimeout(resolve, 15_000, null))])
  const unready = !(await httpOk(`${a.url}/readyz`))
  t.diagnostic(`stale told ${stale.at - silentAt} ms after the silence began (since ${silentAt - (stale.since ?? 0)} ms before it); closed ${closed ? `${Date.now() - silentAt} ms after` : 'never'}`)
  assert.deepEqual([...stale.symbols].sort(), SYMBOLS)
  assert.ok(stale.at - silentAt <= 5000, `told stale within 5 s (took ${stale.at - silentAt} ms)`)
  assert.ok((stale.since ?? Infinity) <= silentAt, 'since names a moment before the silence: nothing after it was shown')
  assert.deepEqual(closed, { code: Disconnect.ISOLATED.code, reason: Disconnect.ISOLATED.reason })
  assert.ok(Date.now() - silentAt <= 10_000, 'moved within 10 s')
  assert.ok(unready, 'the silent gateway is not ready')

  await flowing(subs, 40)
  assert.ok(subs.every((s) => s.nodes().has(b.name)), 'every subscriber moved to the other gateway')
  assert.deepEqual(subs.flatMap((s) => s.recoveries()).filter((r) => !r.recovered), [], 'every resumption recovered')
  assert.equal(subs.reduce((n, s) => n + s.ticksLost().lost, 0), 0, 'ticks lost')
  assert.equal(subs.reduce((n, s) => n + s.ticksDisordered(), 0), 0, 'duplicates or reordering')

  const m = await a.metrics()
  assert.ok((m['wsps_gateway_redis_silent_total{conn="sub"}'] ?? 0) >= 1, 'the silent link is counted')
  assert.equal(m.wsps_gateway_isolations_total, 1)
  await proxy.heal()
  await waitFor(() => httpOk(`${a.url}/readyz`), { timeout: 15_000, message: 'ready again once healed' })
  for (const s of subs) s.close()
  // The next test wants no gateway that reaches Redis.
  await Promise.all([a.stop(), b.stop()])
})

test('Redis silent for every gateway: clients stay, are told stale, then fresh, with the gap filled from history', async (t) => {
  const [x, y] = [await proxiedGateway(), await proxiedGateway()]
  const subs = [subscriber([x.gw.wsUrl]), subscriber([y.gw.wsUrl])]
  const w = await watcher(x.gw.wsUrl)
  await flowing(subs)
  const silentAt = Date.now()
  await Promise.all([x.proxy.silence(), y.proxy.silence()])
  await waitFor(() => w.notices.some((n) => n.op === ServerOp.STALE), { timeout: 8000, message: 'a stale frame' })
  // Past the point where a gateway cut off alone would have moved its clients.
  await sleep(6000)
  assert.equal(w.c.closed, null, 'the watcher was not closed: no gateway reaches Redis, moving helps nobody')
  await Promise.all([x.proxy.heal(), y.proxy.heal()])
  const fresh = /** @type {Notice} */ (await waitFor(() => w.notices.find((n) => n.op === ServerOp.FRESH), { timeout: 15_000, message: 'a fresh frame' }))
  t.diagnostic(`fresh ${fresh.at - silentAt} ms after the silence began`)
  assert.deepEqual([...fresh.symbols].sort(), SYMBOLS)
  await flowing(subs, 40)
  assert.ok(subs.every((s) => s.nodes().size === 1), 'no subscriber was moved')
  assert.equal(subs.reduce((n, s) => n + s.ticksLost().lost, 0), 0, 'ticks lost')
  assert.equal(subs.reduce((n, s) => n + s.ticksDisordered(), 0), 0, 'duplicates or reordering')
  assert.equal(w.c.closed, null)
  for (const s of subs) s.close()
})
