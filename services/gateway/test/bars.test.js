// Bar series on an in-memory broker (bars/bar-hub.js, bars/bar-series.js): the backfill
// read from history joins the live ticks with no gap and no duplicate
// whenever ticks arrive, and a delayed series never holds a tick newer
// than the delay. The real-process paths are in harness/testkit/test/bars.test.js.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BarHub } from '../src/bars/bar-hub.js'
import { barsOf } from '../src/bars/bar-builder.js'
import { DelayedBroker } from '../src/delayed/delayed-broker.js'
import { Fanout } from '../src/fanout.js'
import { Hub } from '../src/hub.js'
import { gatewayParts, memoryBroker, metrics, silent, tick } from './helper.js'

const gauges = () => ({ series: { set () {} }, subscriptions: { set () {} } })

/**
 * Appends a tick to the symbol's history and its latest quote, as the
 * publish script does; returns the quote as published.
 *
 * @param {ReturnType<typeof memoryBroker>} broker
 * @param {number} seq
 * @param {number} ts
 */
function publish (broker, seq, ts) {
  const raw = JSON.stringify({ seq, epoch: 'e1', symbol: 'AAPL', ts, last: seq, volume: seq * 10 })
  const list = broker.histories.get('AAPL') ?? []
  list.push(raw)
  broker.histories.set('AAPL', list)
  broker.latestValues.set('AAPL', raw)
  return raw
}

/** @param {any[]} sent frames a fake socket got */
const barFrames = (sent) => sent.filter((f) => f.op === 'bars' || f.op === 'bar')

/**
 * What a subscriber holds after its frames: the closed bars in order and the open one.
 *
 * @param {any[]} frames
 */
function replay (frames) {
  /** @type {any[]} */
  let closed = []
  /** @type {any} */
  let open = null
  for (const f of frames) {
    if (f.op === 'bars') {
      closed = [...f.bars]
      open = f.current ?? null
    } else if (f.closed) {
      assert.ok(closed.length === 0 || f.bar.t > closed.at(-1).t, `closed bar ${f.bar.t} after ${closed.at(-1)?.t}: a duplicate`)
      closed.push(f.bar)
      open = null
    } else {
      open = f.bar
    }
  }
  return { closed, open }
}

test('backfill from history, then live: no gap, no duplicate, whenever the live ticks arrive', async () => {
  const { broker, hub, client } = gatewayParts()
  // Reads that take a turn: ticks published meanwhile are both in what
  // they return and on the channel.
  /** @type {typeof broker} */
  const slow = { ...broker, history: async (...args) => { await tick(); return broker.history(...args) } }
  const bars = new BarHub({ hub, reader: slow, broker: slow, batchMs: 0, gauges: gauges(), logger: silent })
  const t0 = Math.floor(Date.now() / 1000) * 1000 - 20_000
  let seq = 0
  /** @type {{ts: number, last: number, volume: number}[]} */
  const ticks = []
  const next = () => {
    seq++
    const ts = t0 + seq * 300
    ticks.push({ ts, last: seq, volume: seq * 10 })
    return publish(broker, seq, ts)
  }
  for (let i = 0; i < 40; i++) next()
  const { ws, c } = client()
  bars.add(c, 'AAPL', '1s', 50)
  // Published while the series loads: before its feed is live, and between
  // the tap and the history read (each in history and maybe on the channel).
  next()
  hub.onQuote('AAPL', next())
  await tick()
  hub.onQuote('AAPL', next())
  await tick()
  hub.onQuote('AAPL', next())
  for (let i = 0; i < 10; i++) {
    await tick()
    hub.onQuote('AAPL', next())
  }
  await tick()
  await tick()
  const frames = barFrames(ws.sent)
  assert.equal(frames[0].op, 'bars', 'the backfill comes first')
  assert.ok(frames[0].bars.length > 5 && frames[0].bars.length < 50)
  assert.equal(frames[0].complete, false, 'history does not reach back 50 bars')
  const want = barsOf(1000, ticks)
  const got = replay(frames)
  assert.deepEqual(got.closed, want.closed.slice(-got.closed.length))
  assert.deepEqual(got.open, want.open)
  bars.stop()
})

test('a second subscriber of a series gets its backfill at once, with what was pending first to the others', async () => {
  const { broker, hub, client } = gatewayParts()
  const bars = new BarHub({ hub, reader: broker, broker, batchMs: 1000, gauges: gauges(), logger: silent })
  const t0 = Math.floor(Date.now() / 1000) * 1000 - 5000
  for (let s = 1; s <= 10; s++) publish(broker, s, t0 + s * 400)
  const a = client()
  bars.add(a.c, 'AAPL', '1s', 2)
  for (let i = 0; i < 5 && !a.ws.sent.some((f) => f.op === 'bars'); i++) await tick()
  hub.onQuote('AAPL', publish(broker, 11, t0 + 11 * 400))
  const b = client()
  bars.add(b.c, 'AAPL', '1s', 50)
  const fa = replay(barFrames(a.ws.sent))
  const fb = replay(barFrames(b.ws.sent))
  assert.deepEqual(fa.open, fb.open, 'the pending update reached the first before the second got its backfill')
  assert.deepEqual(fa.closed, fb.closed.slice(-fa.closed.length))
  bars.stop()
})

test('delayed: no bar ever holds a tick newer than the delay, in the backfill or live', async () => {
  const DELAY = 1000
  const broker = memoryBroker()
  const m = metrics()
  const delayedBroker = new DelayedBroker({ broker, delayMs: DELAY, logger: silent })
  const hub = new Hub({ broker: delayedBroker, fanout: new Fanout({ batchMs: 1000, metrics: m }), metrics: m, logger: silent, unsubscribeDelayMs: 0, demandLeaseMs: 60000 })
  delayedBroker.start({ onQuote: (s, raw) => hub.onQuote(s, raw) })
  const bars = new BarHub({ hub, reader: delayedBroker, broker, delayMs: DELAY, batchMs: 0, gauges: gauges(), logger: silent })
  const start = Date.now()
  /** @type {Map<number, number>} seq -> ts */
  const tsOf = new Map()
  let seq = 0
  const next = () => {
    seq++
    tsOf.set(seq, Date.now())
    publish(broker, seq, Date.now())
  }
  for (let s = 1; s <= 30; s++) {
    seq = s
    const ts = start - 3000 + s * 100
    tsOf.set(s, ts)
    publish(broker, s, ts)
  }
  const { ws, c } = (gatewayParts().client)()
  /** @type {string[]} */
  const leaks = []
  const write = ws.write.bind(ws)
  ws.write = (frame, op) => {
    const bytes = write(frame, op)
    const f = ws.sent.at(-1)
    const at = Date.now()
    const all = f.op === 'bars' ? [...f.bars, ...(f.current ? [f.current] : [])] : f.op === 'bar' ? [f.bar] : []
    // `last` is the seq: a bar's high is its newest tick.
    for (const b of all) if (!(/** @type {number} */ (tsOf.get(b.h)) <= at - DELAY)) leaks.push(`seq ${b.h} is ${at - /** @type {number} */ (tsOf.get(b.h))} ms old`)
    if (f.op === 'bars' || f.op === 'bar') assert.equal(f.delayed, true, 'delayed frames say so')
    return bytes
  }
  bars.add(c, 'AAPL', '1s', 10)
  while (Date.now() - start < 2500) {
    next()
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const frames = barFrames(ws.sent)
  assert.equal(frames[0]?.op, 'bars')
  assert.ok(frames.filter((f) => f.op === 'bar').length > 5, 'live delayed bars came')
  assert.deepEqual(leaks, [])
  bars.stop()
  await delayedBroker.close()
})

test('a series keeps its symbol subscribed and demanded like a subscriber, and lets it go with its last subscriber', async () => {
  const { broker, hub, client } = gatewayParts({ unsubscribeDelayMs: 10 })
  hub.start()
  const bars = new BarHub({ hub, reader: broker, broker, batchMs: 0, gauges: gauges(), logger: silent })
  publish(broker, 1, Date.now())
  const { c } = client()
  bars.add(c, 'AAPL', '1m', 0)
  await new Promise((resolve) => setTimeout(resolve, 60))
  assert.ok(broker.channels.has('AAPL'), 'subscribed, and not swept as idle')
  assert.ok(broker.calls.some(([op, s]) => op === 'demand' && s === 'AAPL'), 'demanded from the fetchers')
  assert.deepEqual(broker.calls.filter(([op]) => op === 'subscribe'), [['subscribe', 'AAPL']], 'one subscription')
  bars.remove(c, 'AAPL', '1m')
  await new Promise((resolve) => setTimeout(resolve, 60))
  assert.ok(!broker.channels.has('AAPL'), 'dropped once no series reads it')
  bars.stop()
  hub.stop()
})
