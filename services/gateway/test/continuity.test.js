// Every tick through a broker reconnect (gap fill from history) and through a
// client's reconnect (`sub` with `since`), on the hub and sessions over an
// in-memory broker whose history is what the publish script would keep.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ReadyState } from '@wsps/protocol'
import { Recovery } from '../src/recovery.js'
import { Hub } from '../src/hub.js'
import { Sessions } from '../src/session.js'
import { DISTINCT } from '../src/delivery.js'
import { Timelines } from '../src/timelines.js'
import { gatewayParts, quote, silent, tick } from './helper.js'

const EPOCH = 'k3x9ab'

/**
 * Parts with AAPL published up to `seq` (history and latest), and a way to
 * publish more: into history and, unless `dark`, to the hub (pub/sub).
 * @param {number} seq
 */
function market (seq, { epoch = EPOCH } = {}) {
  const parts = gatewayParts()
  const history = /** @type {string[]} */ ([])
  parts.broker.histories.set('AAPL', history)
  let n = 0
  /** @param {{dark?: boolean, epoch?: string}} [o] */
  const publish = ({ dark = false, epoch: e = epoch } = {}) => {
    const raw = quote(++n, { epoch: e, last: 100 + n })
    history.push(raw)
    parts.broker.latestValues.set('AAPL', raw)
    if (!dark) parts.hub.onQuote('AAPL', raw)
    return raw
  }
  for (let i = 0; i < seq; i++) publish({ dark: true })
  return { ...parts, history, publish }
}

/**
 * market(seq) with two readers of AAPL live on it: `d` distinct, `g` merge.
 * @param {number} seq
 */
async function readers (seq) {
  const m = market(seq)
  const d = m.client()
  const g = m.client()
  m.hub.add('AAPL', d.c, DISTINCT)
  m.hub.add('AAPL', g.c)
  await tick(); await tick()
  return { ...m, d, g }
}

/**
 * Every AAPL tick a fake socket got, in order: snap quotes and q entries.
 * @param {{sent: any[]}} ws
 */
const ticks = (ws) => ws.sent.filter((f) => f.op === 'snap' || f.op === 'q').flatMap((f) => f.quotes.map((/** @type {any} */ q) => ({ op: f.op, seq: q.seq, base: q.base, recovered: f.recovered })))

test('gap fill: ticks published while the pub/sub connection was down reach distinct and merge subscribers from history, in order, no snapshot', async () => {
  const { d, g, ...m } = await readers(3)
  m.publish(); m.pass()
  // The connection drops: 4 ticks are published that no pub/sub delivers.
  for (let i = 0; i < 4; i++) m.publish({ dark: true })
  m.hub.resync()
  // One more arrives on the new subscription before history is read: it overlaps.
  await tick()
  m.publish()
  await tick(); await tick()
  m.pass()
  assert.equal(m.hub.synced(), true)
  assert.deepEqual(ticks(d.ws).map((t) => [t.op, t.seq]), [['snap', 3], ['q', 4], ['q', 5], ['q', 6], ['q', 7], ['q', 8], ['q', 9]])
  assert.deepEqual(ticks(g.ws).map((t) => [t.op, t.seq, t.base]), [['snap', 3, undefined], ['q', 4, undefined], ['q', 9, 4]], 'merge: one delta on top of what it held')
  assert.equal(await metric(m, 'wsps_gateway_gap_fills_total', { result: 'filled' }), 1)
  // 5-8 from history; 9 too when it came before the read, else live.
  assert.ok(await metric(m, 'wsps_gateway_gap_ticks_total') >= 4)
})

test('gap fill: a hole history does not cover (trimmed) gets a snapshot marked recovered:false', async () => {
  const m = market(3)
  const d = m.client()
  m.hub.add('AAPL', d.c, DISTINCT)
  await tick(); await tick()
  for (let i = 0; i < 4; i++) m.publish({ dark: true })
  m.history.splice(0, 5) // seq 1-5 trimmed: 4 and 5 are gone
  m.hub.resync()
  await tick(); await tick()
  m.pass()
  assert.deepEqual(ticks(d.ws).map((t) => [t.op, t.seq, t.recovered]), [['snap', 3, undefined], ['snap', 7, false]])
  m.publish(); m.pass()
  assert.deepEqual(ticks(d.ws).at(-1), { op: 'q', seq: 8, base: undefined, recovered: undefined })
  assert.equal(await metric(m, 'wsps_gateway_gap_fills_total', { result: 'snapshot' }), 1)
})

test('gap fill: a new epoch (Redis restarted empty) is never taken for continuity, even with a seq that fits', async () => {
  const m = market(3)
  const d = m.client()
  m.hub.add('AAPL', d.c, DISTINCT)
  await tick(); await tick()
  m.history.length = 0
  m.broker.latestValues.delete('AAPL')
  m.hub.resync()
  await tick(); await tick()
  m.pass()
  // Nothing published yet: nothing to say. The first quote of the new history:
  m.publish({ epoch: 'n3w' })
  m.pass()
  assert.deepEqual(ticks(d.ws).map((t) => [t.op, t.seq, t.recovered]), [['snap', 3, undefined], ['snap', 4, false]])
})

/**
 * Sessions over the parts, and a connection on a fake socket that sends frames.
 * @param {ReturnType<typeof market>} m
 */
function sessionsOf (m, { max = 1000 } = {}) {
  const sessions = new Sessions({ timelines: new Timelines({ realtime: { hub: m.hub, recovery: new Recovery({ hub: m.hub, broker: m.broker, max, logger: silent }), bars: null } }), metrics: m.metrics, maxSubscriptions: 100, draining: () => false, authenticate: null, hello: { node: 'n', heartbeatMs: 30_000, limits: {} }, logger: silent })
  const connect = () => {
    const cl = m.client()
    /** @param {object} frame */
    const send = (frame) => sessions.onMessage(cl.conn, Buffer.from(JSON.stringify(frame)), false)
    return { ...cl, send }
  }
  return { sessions, connect }
}

/** @param {{sent: any[]}} ws @param {string} op */
const frames = (ws, op) => ws.sent.filter((f) => f.op === op)

test('recovery: a distinct sub with since gets exactly the ticks after its cursor, then live ones, recovered:true', async () => {
  const m = market(10)
  m.hub.start()
  const { connect } = sessionsOf(m)
  // Another subscriber keeps the symbol live and moving on this gateway.
  const other = m.client()
  m.hub.add('AAPL', other.c, DISTINCT)
  await tick(); await tick()
  m.publish(); m.publish(); m.pass()
  const c = connect()
  c.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: { seq: 6, epoch: EPOCH } }, id: 1 })
  m.publish() // arrives while the history is read
  for (let i = 0; i < 5; i++) await tick()
  m.publish(); m.pass()
  m.hub.stop()
  const ack = frames(c.ws, 'ack')[0]
  assert.deepEqual(ack.recovered, { AAPL: true })
  assert.deepEqual(ticks(c.ws).map((t) => t.seq), [7, 8, 9, 10, 11, 12, 13, 14], 'every tick after 6, once, in order')
  assert.equal(frames(c.ws, 'snap').length, 0)
})

test('recovery: out of window, another epoch, ahead of the newest, or longer than WSPS_RECOVERY_MAX: a snap and recovered:false; the connection stays', async () => {
  const m = market(30)
  m.history.splice(0, 10) // seq 1-10 trimmed
  m.hub.start()
  const { connect } = sessionsOf(m, { max: 15 })
  const cases = [
    { since: { seq: 5, epoch: EPOCH }, why: 'trimmed' },
    { since: { seq: 20, epoch: 'other' }, why: 'another epoch' },
    { since: { seq: 31, epoch: EPOCH }, why: 'ahead of the newest' },
    { since: { seq: 12, epoch: EPOCH }, why: 'more than max' }
  ]
  for (const { since, why } of cases) {
    const c = connect()
    c.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: since } })
    for (let i = 0; i < 5; i++) await tick()
    assert.deepEqual(frames(c.ws, 'ack')[0]?.recovered, { AAPL: false }, why)
    const snap = frames(c.ws, 'snap')
    assert.equal(snap.length, 1, why)
    assert.equal(snap[0].quotes[0].seq, 30, why)
    assert.equal(snap[0].recovered, false, why)
    assert.equal(c.ws.readyState, ReadyState.OPEN, why)
  }
  // In window: 16..30 is 15 ticks, within max.
  const c = connect()
  c.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: { seq: 15, epoch: EPOCH } } })
  for (let i = 0; i < 5; i++) await tick()
  m.hub.stop()
  assert.deepEqual(frames(c.ws, 'ack')[0].recovered, { AAPL: true })
  assert.deepEqual(ticks(c.ws).map((t) => t.seq), Array.from({ length: 15 }, (_, i) => 16 + i))
})

test('recovery: a merge sub with since recovers to the latest state in one snapshot', async () => {
  const m = market(8)
  m.hub.start()
  const { connect } = sessionsOf(m)
  const c = connect()
  c.send({ op: 'sub', symbols: ['AAPL'], since: { AAPL: { seq: 3, epoch: EPOCH } } })
  for (let i = 0; i < 6; i++) await tick()
  m.hub.stop()
  assert.deepEqual(frames(c.ws, 'ack')[0].recovered, { AAPL: true })
  assert.deepEqual(ticks(c.ws).map((t) => [t.op, t.seq, t.recovered]), [['snap', 8, undefined]])
})

test('recovery: a cursor held without its quote (held:false) gets the quote at seq as a snap, then every tick after it', async () => {
  const m = market(10)
  m.hub.start()
  const { connect } = sessionsOf(m)
  const c = connect()
  c.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: { seq: 7, epoch: EPOCH, held: false } }, id: 1 })
  for (let i = 0; i < 6; i++) await tick()
  m.publish(); m.pass()
  assert.deepEqual(frames(c.ws, 'ack')[0].recovered, { AAPL: true })
  assert.deepEqual(ticks(c.ws).map((t) => [t.op, t.seq, t.recovered]), [['snap', 7, undefined], ['q', 8, undefined], ['q', 9, undefined], ['q', 10, undefined], ['q', 11, undefined]])
  assert.equal(frames(c.ws, 'snap')[0].quotes[0].last, 107, 'the full quote of tick 7, from history')

  // At the newest: the snap alone, then live. Past it, or trimmed: not recovered, a marked snap of the latest.
  const latest = connect()
  latest.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: { seq: 11, epoch: EPOCH, held: false } } })
  const ahead = connect()
  ahead.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: { seq: 12, epoch: EPOCH, held: false } } })
  m.history.splice(0, 3)
  const trimmed = connect()
  trimmed.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: { seq: 3, epoch: EPOCH, held: false } } })
  for (let i = 0; i < 6; i++) await tick()
  m.publish(); m.pass()
  m.hub.stop()
  assert.deepEqual(frames(latest.ws, 'ack')[0].recovered, { AAPL: true })
  assert.deepEqual(ticks(latest.ws).map((t) => [t.op, t.seq]), [['snap', 11], ['q', 12]])
  for (const [name, cl] of Object.entries({ ahead, trimmed })) {
    assert.deepEqual(frames(cl.ws, 'ack')[0].recovered, { AAPL: false }, name)
    assert.deepEqual(ticks(cl.ws).map((t) => [t.op, t.seq, t.recovered]), [['snap', 11, false], ['q', 12, undefined]], name)
  }
})

test('recovery: frames sent while a resuming sub is read for are handled after it, in order', async () => {
  const m = market(5)
  m.hub.start()
  const { connect } = sessionsOf(m)
  const c = connect()
  c.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: { seq: 2, epoch: EPOCH } }, id: 1 })
  c.send({ op: 'unsub', symbols: ['AAPL'], id: 2 })
  c.send({ op: 'ping', id: 3 })
  for (let i = 0; i < 6; i++) await tick()
  m.hub.stop()
  assert.deepEqual(c.ws.sent.map((f) => [f.op, f.id]), [['ack', 1], ['q', undefined], ['ack', 2], ['pong', 3]])
  assert.deepEqual(frames(c.ws, 'ack')[1].symbols, [])
})

test('recovery: bad since is BAD_SINCE, nothing subscribed, the connection stays', async () => {
  const m = market(5)
  const { connect } = sessionsOf(m)
  const c = connect()
  const bad = [
    { AAPL: { seq: -1, epoch: EPOCH } },
    { AAPL: { seq: 1.5, epoch: EPOCH } },
    { AAPL: { seq: 1, epoch: 'not an epoch!' } },
    { AAPL: { seq: 1 } },
    { AAPL: { seq: 1, epoch: EPOCH, held: 'no' } },
    { MSFT: { seq: 1, epoch: EPOCH } },
    [1, 2],
    'AAPL'
  ]
  for (const since of bad) c.send({ op: 'sub', symbols: ['AAPL'], since })
  c.send({ op: 'unsub', symbols: ['AAPL'], since: {} })
  await tick()
  const errors = frames(c.ws, 'error')
  assert.deepEqual(errors.map((e) => e.code), Array(bad.length + 1).fill('BAD_SINCE'))
  assert.deepEqual(errors[5].symbols, ['MSFT'])
  assert.equal(frames(c.ws, 'ack').length, 0)
  assert.equal(c.ws.readyState, ReadyState.OPEN)
})

/**
 * @param {ReturnType<typeof gatewayParts>} m
 * @param {string} name
 * @param {Record<string, string>} [labels]
 */
async function metric (m, name, labels = {}) {
  const json = await m.metrics.registry.getMetricsAsJSON()
  const values = json.find((x) => x.name === name)?.values ?? []
  return values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((a, v) => a + v.value, 0)
}

test('recovery: a symbol this gateway did not hold stays subscribed while its history is read, however long that takes', async () => {
  const parts = gatewayParts({ unsubscribeDelayMs: 10 })
  const history = [1, 2, 3, 4].map((i) => quote(i, { epoch: EPOCH }))
  parts.broker.histories.set('AAPL', history)
  parts.broker.latestValues.set('AAPL', history[3])
  const read = parts.broker.history.bind(parts.broker)
  // Slower than the unsubscribe delay and a sweep or two.
  parts.broker.history = async (...args) => { await new Promise((resolve) => setTimeout(resolve, 1200)); return read(...args) }
  parts.hub.start()
  const { connect } = sessionsOf(/** @type {any} */ ({ ...parts, history }))
  const c = connect()
  c.send({ op: 'sub', symbols: ['AAPL'], mode: 'distinct', since: { AAPL: { seq: 1, epoch: EPOCH } } })
  await waitUntil(() => frames(c.ws, 'ack').length === 1, 5000)
  parts.hub.stop()
  assert.deepEqual(frames(c.ws, 'ack')[0].recovered, { AAPL: true })
  assert.deepEqual(ticks(c.ws).map((t) => t.seq), [2, 3, 4])
  assert.deepEqual(parts.broker.calls.filter((x) => x[0] === 'unsubscribe'), [], 'never dropped as idle')
})

/** @param {() => boolean} ok @param {number} ms */
async function waitUntil (ok, ms) {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('a symbol whose channel is not restored in time while Redis answers: its subscribers are closed with 1012 to go elsewhere', async () => {
  const parts = gatewayParts({ unsubscribeDelayMs: 50 })
  const hub = new Hub({ broker: parts.broker, fanout: parts.fanout, metrics: parts.metrics, logger: silent, unsubscribeDelayMs: 50, demandLeaseMs: 60000, restoreDeadlineMs: 300 })
  hub.start()
  const a = parts.client()
  const b = parts.client()
  hub.add('AAPL', a.c)
  hub.add('MSFT', b.c)
  // AAPL's subscribe keeps failing (a shard this gateway cannot reach), yet the broker says it is connected.
  parts.broker.subscribe = async (symbols) => symbols.filter((s) => s === 'AAPL')
  await waitUntil(() => a.ws.closedWith !== null, 3000)
  hub.stop()
  assert.deepEqual(a.ws.closedWith, { code: 1012, reason: 'subscriptions not restored' })
  assert.equal(b.ws.closedWith, null, 'a symbol that came back keeps its subscribers')
  assert.equal(await metric(parts, 'wsps_gateway_restore_timeouts_total'), 1)
})

test('a live gap (Redis dropped a pub/sub message): the held-back quote waits for the missing ticks from history; distinct readers get every one, in order', async () => {
  const { d, g, ...m } = await readers(3)
  m.publish({ dark: true }) // seq 4: in history, never delivered
  m.publish({ dark: true }) // seq 5 too
  m.publish() // seq 6 arrives: a gap
  m.publish() // seq 7 arrives while the hole is read
  for (let i = 0; i < 4; i++) await tick()
  m.pass()
  assert.deepEqual(ticks(d.ws).map((t) => [t.op, t.seq]), [['snap', 3], ['q', 4], ['q', 5], ['q', 6], ['q', 7]])
  assert.deepEqual(ticks(g.ws).map((t) => [t.op, t.seq, t.base]), [['snap', 3, undefined], ['q', 7, 3]], 'merge: one delta on what it held')
  assert.equal(await metric(m, 'wsps_gateway_gap_fills_total', { result: 'filled' }), 1)
  // The hole is gone from history (trimmed): a snapshot, marked lost.
  m.publish({ dark: true })
  m.history.length = 0
  m.publish()
  for (let i = 0; i < 4; i++) await tick()
  m.pass()
  assert.deepEqual(ticks(d.ws).slice(-1).map((t) => [t.op, t.seq, t.recovered]), [['snap', 9, false]])
})
