// The delayed timeline's logic on an in-memory broker: finding the quote
// as it was at a moment (history-timeline.js), releasing entries only once
// they are the delay old (delayed-broker.js), and the two claims of a token
// (auth.js). The real-process paths are in harness/testkit/test/delayed.test.js.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ErrorCode } from '@wsps/protocol'
import { entitlementsFrom } from '../src/auth.js'
import { DelayedBroker } from '../src/delayed/delayed-broker.js'
import { diffQuotes } from '../src/delta.js'
import { HistoryTimeline } from '../src/history-timeline.js'
import { FULL_RATE } from '../src/delivery.js'
import { Outbox, Verdict } from '../src/outbox.js'
import { parseClientFrame, parseStreamSub } from '../src/protocol.js'
import { Subscriptions } from '../src/subscriptions.js'
import { metrics, memoryBroker, passStats, silent } from './helper.js'

/**
 * A symbol's history of n ticks, one per `stepMs` from `t0`, the last one
 * also its latest quote.
 *
 * @param {{histories: Map<string, string[]>, latestValues: Map<string, string>}} broker
 * @param {string} symbol
 * @param {number} n
 * @param {{t0?: number, stepMs?: number, first?: number}} [options]
 */
function publish (broker, symbol, n, { t0 = 1_000_000, stepMs = 100, first = 1 } = {}) {
  const list = broker.histories.get(symbol) ?? []
  for (let i = 0; i < n; i++) {
    const seq = first + i
    const raw = JSON.stringify({ seq, epoch: 'e1', symbol, ts: t0 + (seq - 1) * stepMs, last: seq })
    list.push(raw)
    broker.latestValues.set(symbol, raw)
  }
  broker.histories.set(symbol, list)
}

test('at(): the newest entry at or before the moment, by binary search, whatever the history length', async () => {
  for (const n of [1, 2, 3, 10, 1000, 1001]) {
    const broker = memoryBroker()
    publish(broker, 'AAPL', n)
    const timeline = new HistoryTimeline(broker)
    for (const k of new Set([1, 2, Math.ceil(n / 2), n - 1, n].filter((k) => k >= 1 && k <= n))) {
      // Exactly at tick k's ts, and just before tick k+1's.
      for (const cutoff of [1_000_000 + (k - 1) * 100, 1_000_000 + k * 100 - 1]) {
        const { entry, after } = await timeline.at('AAPL', cutoff)
        assert.equal(entry?.seq, k, `n=${n} cutoff=${cutoff}`)
        assert.equal(after, k)
      }
    }
    const before = await timeline.at('AAPL', 999_999)
    assert.equal(before.entry, null, 'nothing so old: no snapshot')
    assert.equal(before.after, 0, 'the pump starts before the oldest entry')
  }
})

test('at(): reads about log2(history) entries, and the stream forward when the latest quote is gone', async () => {
  const broker = memoryBroker()
  publish(broker, 'AAPL', 1000)
  const timeline = new HistoryTimeline(broker)
  await timeline.at('AAPL', 1_000_000 + 300 * 100)
  assert.ok(broker.calls.filter(([c]) => c === 'history').length <= 12, `${broker.calls.length} reads`)
  broker.latestValues.delete('AAPL')
  const { entry } = await timeline.at('AAPL', 1_000_000 + 300 * 100)
  assert.equal(entry?.seq, 301)
})

test('DelayedBroker: a snapshot and releases only of quotes the delay old, in seq order, each marked delayed', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 1_000_000 })
  const broker = memoryBroker()
  publish(broker, 'AAPL', 50)
  // The clock stands at tick 50's ts; the delay is 2 s (20 ticks).
  t.mock.timers.setTime(1_000_000 + 49 * 100)
  const delayed = new DelayedBroker({ broker, delayMs: 2000, logger: silent })
  /** @type {string[]} */
  const got = []
  delayed.start({ onQuote: (_s, raw) => got.push(raw) })
  await delayed.subscribe(['AAPL'])
  const [snap] = await delayed.latest(['AAPL'])
  assert.equal(JSON.parse(/** @type {string} */ (snap)).seq, 30)
  assert.equal(JSON.parse(/** @type {string} */ (snap)).delayed, true)
  // History read for a recovery: cut at the delayed head.
  assert.deepEqual((await delayed.history('AAPL', 28, null, 100)).map((r) => JSON.parse(r).seq), [28, 29, 30])

  t.mock.timers.tick(100)
  await new Promise((resolve) => setImmediate(resolve))
  t.mock.timers.tick(1000)
  await new Promise((resolve) => setImmediate(resolve))
  const seqs = got.map((r) => JSON.parse(r).seq)
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => 31 + i), 'in order from after the snapshot')
  const now = Date.now()
  for (const r of got) {
    const q = JSON.parse(r)
    assert.equal(q.delayed, true)
    assert.ok(q.ts <= now - 2000, `seq ${q.seq} released early`)
  }
  assert.equal(seqs.at(-1), 41, 'everything due is released (at most a tick late)')
  await delayed.close()
})

test('entitlementsFrom: real-time wins; a delayed claim without a symbols claim grants nothing real-time; a bad shape is refused', () => {
  const both = /** @type {{grants: (s: string) => boolean, delayed: (s: string) => boolean}} */ (entitlementsFrom(['MSFT', 'AA*'], ['AAPL', 'NV*']))
  assert.equal(both.grants('AAPL'), true)
  assert.equal(both.delayed('AAPL'), false, 'in both claims: real-time')
  assert.equal(both.delayed('NVDA'), true)
  assert.equal(both.grants('TSLA'), false)
  const only = /** @type {{grants: (s: string) => boolean, delayed: (s: string) => boolean}} */ (entitlementsFrom(undefined, ['*']))
  assert.equal(only.grants('TSLA'), true)
  assert.equal(only.delayed('TSLA'), true)
  assert.deepEqual(entitlementsFrom(undefined, undefined), { grants: null, delayed: null })
  assert.deepEqual(entitlementsFrom(['*'], ['AAPL']), { grants: null, delayed: null }, 'everything real-time')
  for (const bad of ['AAPL', {}, ['AAPL', 1], null]) {
    assert.equal(entitlementsFrom(undefined, bad), null)
    assert.equal(entitlementsFrom(bad, undefined), null)
    assert.equal(entitlementsFrom(bad, ['MSFT']), null)
  }
})

test('DelayedBroker: entries trimmed before they were due are counted as a hole of history, never served early', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 1_000_000 + 49 * 100 })
  const broker = memoryBroker()
  publish(broker, 'AAPL', 50)
  /** @type {string[]} */
  const holes = []
  const delayed = new DelayedBroker({ broker, delayMs: 2000, logger: silent, onHole: (s) => holes.push(s) })
  /** @type {number[]} */
  const got = []
  delayed.start({ onQuote: (_s, raw) => got.push(JSON.parse(raw).seq) })
  await delayed.subscribe(['AAPL'])
  await delayed.latest(['AAPL'])
  // History loses 31-35 (trimmed: WSPS_HISTORY_SIZE too small for the delay).
  broker.histories.set('AAPL', /** @type {string[]} */ (broker.histories.get('AAPL')).filter((r) => !/"seq":3[1-5],/.test(r)))
  t.mock.timers.tick(100)
  await new Promise((resolve) => setImmediate(resolve))
  t.mock.timers.tick(500)
  await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(holes, ['AAPL'])
  assert.deepEqual(got, [36], 'what is left, once due')
  await delayed.close()
})

test('a delayed feed\'s deltas say delayed; a slow reader catching up asks for the delayed timeline\'s quote of its delayed symbols', () => {
  const prev = { symbol: 'AAPL', seq: 1, ts: 1, last: 1, delayed: true }
  const u = diffQuotes(prev, { ...prev, seq: 2, ts: 2, last: 2 })
  assert.equal(u.fields.delayed, true)
  assert.equal(diffQuotes({ symbol: 'MSFT', seq: 1, ts: 1, last: 1 }, { symbol: 'MSFT', seq: 2, ts: 2, last: 2 }).fields.delayed, undefined)

  /** @type {[string, number, boolean][]} */
  const asked = []
  const subs = new Subscriptions()
  subs.add(['AAPL', 'MSFT'], FULL_RATE)
  subs.setDelayed('AAPL', true)
  const outbox = new Outbox({ metrics: metrics(), sendHighWater: 100, slowCloseMs: 60_000, latest: (s, d, delayed) => { asked.push([s, d, delayed]); return null }, bookSnapshot: () => null }, subs)
  const stats = passStats()
  outbox.push(u, stats)
  outbox.push(diffQuotes({ symbol: 'MSFT', seq: 1, ts: 1, last: 1 }, { symbol: 'MSFT', seq: 2, ts: 2, last: 2 }), stats)
  assert.equal(outbox.verdict(1000, 1, stats), Verdict.SKIP, 'slow: conflated')
  assert.equal(outbox.verdict(0, 2, stats), Verdict.WRITE)
  outbox.catchUp(stats)
  assert.deepEqual(asked.sort(), [['AAPL', FULL_RATE, true], ['MSFT', FULL_RATE, false]])
})

test('a sub\'s delayed (WebSocket and SSE): true or false, anything else BAD_REQUEST', () => {
  for (const [delayed, want] of /** @type {const} */ ([[true, true], [false, false], [undefined, undefined]])) {
    const r = parseClientFrame(Buffer.from(JSON.stringify({ op: 'sub', symbols: ['AAPL'], delayed })), false)
    assert.ok(r.ok && r.request.op === 'sub' && r.request.delayed === want)
  }
  for (const delayed of ['true', 1, null, {}]) {
    const r = parseClientFrame(Buffer.from(JSON.stringify({ op: 'sub', symbols: ['AAPL'], delayed, id: 3 })), false)
    assert.deepEqual(!r.ok && [r.error.code, r.error.id], [ErrorCode.BAD_REQUEST, 3], JSON.stringify(delayed))
  }
  const sse = parseStreamSub({ delayed: 'false' }, ['AAPL'])
  assert.equal(sse.ok && sse.request.delayed, false)
  for (const delayed of ['yes', ['true', 'true']]) {
    const r = parseStreamSub({ delayed }, ['AAPL'])
    assert.equal(!r.ok && r.error.code, ErrorCode.BAD_REQUEST)
  }
})

/**
 * Moves the mocked clock on in 100 ms steps, letting the pumps run `turns`
 * event-loop turns after each.
 *
 * @param {import('node:test').TestContext} t
 * @param {number} ms
 * @param {number} turns
 */
async function advance (t, ms, turns) {
  for (let i = 0; i < ms / 100; i++) {
    t.mock.timers.tick(100)
    for (let j = 0; j < turns; j++) await new Promise((resolve) => setImmediate(resolve))
  }
}

test('DelayedBroker: history that started over below the pump (Redis lost it) is read again from its beginning', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 1_000_000 + 49 * 100 })
  const broker = memoryBroker()
  publish(broker, 'AAPL', 50)
  const delayed = new DelayedBroker({ broker, delayMs: 2000, logger: silent })
  /** @type {{seq: number, epoch: string}[]} */
  const got = []
  delayed.start({ onQuote: (_s, raw) => got.push(JSON.parse(raw)) })
  await delayed.subscribe(['AAPL'])
  await delayed.latest(['AAPL'])
  const flush = (/** @type {number} */ ms) => advance(t, ms, 2)
  await flush(3000)
  assert.equal(got.at(-1)?.seq, 50, 'caught up with the old history')
  // A new epoch from seq 1, published from now on.
  /** @type {string[]} */
  const fresh = []
  broker.histories.set('AAPL', fresh)
  const t0 = Date.now()
  for (let seq = 1; seq <= 5; seq++) {
    const raw = JSON.stringify({ seq, epoch: 'e2', symbol: 'AAPL', ts: t0 + seq * 100, last: seq })
    fresh.push(raw)
    broker.latestValues.set('AAPL', raw)
  }
  await flush(15_000)
  assert.deepEqual(got.filter((q) => q.epoch === 'e2').map((q) => q.seq), [1, 2, 3, 4, 5])
  await delayed.close()
})

test('DelayedBroker: a pump that released all it read and cannot read on (a read fails, or hangs 2 s) interrupts its feed, and resumes it where it stopped', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 1_000_000 + 49 * 100 })
  const broker = memoryBroker()
  publish(broker, 'AAPL', 50)
  const history = broker.history.bind(broker)
  /** @type {'ok' | 'fail' | 'hang'} */
  let redis = 'ok'
  broker.history = (...args) => redis === 'ok' ? history(...args) : redis === 'fail' ? Promise.reject(new Error('Connection is closed.')) : new Promise(() => {})
  const delayed = new DelayedBroker({ broker, delayMs: 2000, logger: silent })
  /** @type {string[]} */
  const events = []
  /** @type {number[]} */
  const got = []
  delayed.start({
    onQuote: (_s, raw) => got.push(JSON.parse(raw).seq),
    onInterrupted: (symbols, since) => events.push(`interrupted ${symbols} since ${since}`),
    onResumed: (symbols) => events.push(`resumed ${symbols}`)
  })
  await delayed.subscribe(['AAPL'])
  await delayed.latest(['AAPL'])
  const step = (/** @type {number} */ ms) => advance(t, ms, 1)
  await step(100)
  // Redis fails while what was read ahead (31-50) is still being released: nothing to tell yet.
  redis = 'fail'
  await step(900)
  assert.deepEqual(events, [])
  await step(1500)
  assert.equal(got.at(-1), 50, 'everything read ahead released')
  assert.equal(events.length, 1, events.join('; '))
  assert.match(events[0], /^interrupted AAPL since \d+$/)
  // Back: the pump goes on from seq 50, nothing skipped.
  publish(broker, 'AAPL', 10, { first: 51 })
  redis = 'ok'
  await step(1500)
  assert.deepEqual(events.slice(1), ['resumed AAPL'])
  // A read that hangs (a silent link) interrupts it after 2 s.
  await step(3000)
  redis = 'hang'
  await step(1900)
  assert.equal(events.length, 2)
  await step(2200)
  assert.equal(events.length, 3, events.join('; '))
  assert.match(events[2], /^interrupted AAPL/)
  assert.deepEqual(got.slice(got.indexOf(50)), [50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60], 'nothing lost or repeated')
  await delayed.close()
})
