// The upstream session state machine (stream-session.js) against a fake
// socket and a fake connection slot: which state follows which event, when
// the feed may subscribe, what is counted, and what the socket is told.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import pino from 'pino'
import { compileAuth } from '../src/providers/stream-auth.js'
import { SESSION_STATES, STABLE_MS, StreamSession } from '../src/providers/stream-session.js'
import { createFetcherMetrics } from '../src/metrics.js'

const ALPACA_REPLIES = '{"ok":{"T":"success","msg":"authenticated"},"refused":{"T":"error"},"limited":{"T":"error","code":406},"code":"code","message":"msg"}'
const CREDENTIALS = { key: 'KEYID', secret: 'SECRET', token: '' }

/** A socket that records what it was told; the test plays the vendor. */
function fakeSocket () {
  return {
    /** @type {string[]} */
    calls: [],
    /** @type {string[]} */
    sent: [],
    resets: 0,
    connect () { this.calls.push('connect') },
    async stop (/** @type {number | undefined} */ code, /** @type {string | undefined} */ reason) { this.calls.push(`stop ${code ?? ''} ${reason ?? ''}`.trim()) },
    drop (/** @type {number} */ code, /** @type {string} */ reason) { this.calls.push(`drop ${code} ${reason}`) },
    send (/** @type {string} */ frame) { this.sent.push(frame) },
    resetBackoff () { this.resets++ }
  }
}

/** @param {boolean[]} answers what acquire() returns, in turn (then the last again) */
function fakeSlot (answers) {
  let i = 0
  return {
    releases: 0,
    acquire: async () => answers[Math.min(i++, answers.length - 1)],
    held: () => false,
    async release () { this.releases++ }
  }
}

/**
 * @param {{replies?: string, auth?: string, slot?: ReturnType<typeof fakeSlot> | null, now?: () => number}} [options]
 */
function session ({ replies = ALPACA_REPLIES, auth = '{"action":"auth","key":{key},"secret":{secret}}', slot = null, now } = {}) {
  const socket = fakeSocket()
  const metrics = createFetcherMetrics('test')
  const events = /** @type {string[]} */ ([])
  const s = new StreamSession({
    socket,
    slot,
    auth: compileAuth({ auth, headers: '', replies }, CREDENTIALS),
    authTimeoutMs: 1000,
    authBackoffMs: 60_000,
    tickMs: 1000,
    logger: pino({ level: 'silent' }),
    metrics,
    onReady: () => events.push('ready'),
    onLeave: () => events.push('leave'),
    onMessage: (text) => events.push(`data ${text}`),
    now
  })
  /** @param {string} series @param {Record<string, string>} labels */
  const value = async (series, labels) => {
    const m = (await metrics.registry.getSingleMetric(series)?.get())?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    return m?.value ?? 0
  }
  return { s, socket, events, value }
}

test('connecting -> authenticating -> ready only on the vendor\'s ok; messages reach the feed only when ready', async () => {
  const { s, socket, events, value } = session()
  s.start()
  assert.deepEqual(socket.calls, ['connect'])
  assert.equal(s.state, 'connecting')
  s.opened()
  assert.equal(s.state, 'authenticating')
  assert.deepEqual(socket.sent, ['{"action":"auth","key":"KEYID","secret":"SECRET"}'])
  s.message('[{"T":"success","msg":"connected"}]')
  s.send('{"action":"subscribe"}')
  assert.equal(s.state, 'authenticating', 'connected is not authenticated')
  assert.deepEqual(events, [])
  assert.equal(socket.sent.length, 1, 'nothing sent before ready')
  s.message('[{"T":"success","msg":"authenticated"}]')
  assert.equal(s.state, 'ready')
  assert.deepEqual(events, ['ready'])
  s.message('[{"T":"q","S":"AAPL"}]')
  assert.deepEqual(events, ['ready', 'data [{"T":"q","S":"AAPL"}]'])
  assert.equal(await value('wsps_fetcher_stream_auth_total', { result: 'ok' }), 1)
  assert.equal(await value('wsps_fetcher_stream_session_state', { state: 'ready' }), 1)
  assert.equal(await value('wsps_fetcher_stream_session_state', { state: 'authenticating' }), 0)
  await s.stop()
})

test('a refusal is counted, leaves the symbols, stops the socket and holds off for the auth backoff; then it connects again', async () => {
  let now = 1_000_000
  const { s, socket, events, value } = session({ now: () => now })
  s.start()
  s.opened()
  s.message('[{"T":"error","code":402,"msg":"auth failed"}]')
  assert.equal(s.state, 'refused')
  assert.deepEqual(socket.calls, ['connect', 'stop 1000 auth refused'])
  assert.equal(await value('wsps_fetcher_stream_auth_total', { result: 'refused' }), 1)
  s.closed(1008, 'auth failed')
  assert.equal(s.state, 'refused', 'the close of a refused session keeps it refused')
  assert.deepEqual(events, [], 'never ready, never subscribed')
  now += 59_000
  await s.tick()
  assert.equal(socket.calls.length, 2, 'still waiting')
  now += 60_000 * 0.2 + 2000
  await s.tick()
  assert.equal(s.state, 'connecting')
  assert.deepEqual(socket.calls.slice(2), ['connect'])
  await s.stop()
})

test('a connection-limit answer is told apart from a refusal (looked for first)', async () => {
  const { s, value } = session()
  s.start()
  s.opened()
  s.message('[{"T":"error","code":406,"msg":"connection limit exceeded"}]')
  assert.equal(s.state, 'limited')
  assert.equal(await value('wsps_fetcher_stream_auth_total', { result: 'limited' }), 1)
  assert.equal(await value('wsps_fetcher_stream_auth_total', { result: 'refused' }), 0)
  await s.stop()
})

test('a ready session that closes leaves (the feed releases its symbols) and is closed until the socket tries again', () => {
  const { s, events } = session()
  s.start()
  s.opened()
  s.message('[{"T":"success","msg":"authenticated"}]')
  s.closed(1006, '')
  assert.equal(s.state, 'closed')
  assert.deepEqual(events, ['ready', 'leave'])
  s.attempting()
  assert.equal(s.state, 'connecting')
})

test('no answer in time: counted as timeout, the connection is dropped and retried with the reconnect backoff', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] })
  const { s, socket, value } = session()
  s.start()
  s.opened()
  t.mock.timers.tick(1000)
  assert.equal(s.state, 'closed')
  assert.deepEqual(socket.calls, ['connect', 'drop 1000 auth timeout'])
  assert.equal(await value('wsps_fetcher_stream_auth_total', { result: 'timeout' }), 1)
})

test('the reconnect backoff is reset only once the session proved itself: a record, or ready for STABLE_MS', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] })
  const { s, socket } = session()
  s.start()
  s.opened()
  s.sawData()
  assert.equal(socket.resets, 0, 'not before ready')
  s.message('[{"T":"success","msg":"authenticated"}]')
  assert.equal(socket.resets, 0, 'not on ready alone')
  s.sawData()
  assert.equal(socket.resets, 1)
  t.mock.timers.tick(STABLE_MS)
  assert.equal(socket.resets, 2)
})

test('without WSPS_STREAM_AUTH_REPLIES the session is ready once the auth message is sent (the first version\'s behaviour)', async () => {
  const { s, socket, events } = session({ replies: '' })
  s.start()
  s.opened()
  assert.equal(s.state, 'ready')
  assert.equal(socket.sent.length, 1)
  assert.deepEqual(events, ['ready'])
  await s.stop()
  assert.deepEqual(events, ['ready', 'leave'])
})

test('with a connection limit: standby until a slot is held; a lost slot disconnects and stands by; a refusal gives the slot up', async () => {
  const slot = fakeSlot([false, true, true, false, true])
  const { s, socket, events } = session({ slot })
  s.start()
  assert.equal(s.state, 'standby')
  assert.deepEqual(socket.calls, [])
  await s.tick()
  assert.equal(s.state, 'standby', 'no slot, no connection')
  await s.tick()
  assert.equal(s.state, 'connecting')
  s.opened()
  s.message('[{"T":"success","msg":"authenticated"}]')
  await s.tick()
  assert.equal(s.state, 'ready', 'renewed')
  await s.tick()
  assert.equal(s.state, 'standby', 'slot lost')
  assert.deepEqual(events, ['ready', 'leave'])
  assert.deepEqual(socket.calls, ['connect', 'stop 1000 standby'])
  await s.tick()
  s.opened()
  s.message('[{"T":"error","code":402,"msg":"auth failed"}]')
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(slot.releases, 1, 'refused: the slot goes to another replica')
  await s.stop()
})

test('every state is in the state metric, exactly one at 1', async () => {
  const { s, value } = session()
  s.start()
  let ones = 0
  for (const state of SESSION_STATES) ones += await value('wsps_fetcher_stream_session_state', { state })
  assert.equal(ones, 1)
  await s.stop()
  assert.equal(await value('wsps_fetcher_stream_session_state', { state: 'stopped' }), 1)
})
