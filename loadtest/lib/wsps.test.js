import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CloseCode } from '../../services/protocol/index.js'
import { Delta, MAX_SYMBOLS_PER_REQUEST, QuoteTracker, classifyClose, errorExpected, parseQuotesFrame, requests } from './wsps.js'

test('a delta continues the held seq; a snapshot resets it', () => {
  const t = new QuoteTracker()
  t.subscribe(['AAPL', 'MSFT'])
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 5 }), Delta.NO_SNAPSHOT)
  assert.equal(t.onSnapQuote({ symbol: 'AAPL', seq: 10 }), 0)
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 11 }), Delta.OK)
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 12 }), Delta.OK)
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 14 }), Delta.GAP)
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 12 }), Delta.STALE)
  // a conflated delta applies on top of `base`
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 15, base: 12 }), Delta.OK)
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 20, base: 14 }), Delta.STALE)
  assert.equal(t.onSnapQuote({ symbol: 'AAPL', seq: 30 }), 14, 'held 15: 16-29 skipped')
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 31 }), Delta.OK)
  assert.equal(t.unsnapped(), 1)
})

test('quotes for symbols not subscribed are wrong-symbol deliveries', () => {
  const t = new QuoteTracker()
  t.subscribe(['AAPL'])
  assert.equal(t.onDelta({ symbol: 'TSLA', seq: 1 }), Delta.WRONG_SYMBOL)
  assert.equal(t.onSnapQuote({ symbol: 'TSLA', seq: 1 }), -1)
})

test('after unsub, quotes already on the wire are ignored until the ack', () => {
  const t = new QuoteTracker()
  t.subscribe(['AAPL', 'MSFT'])
  t.onSnapQuote({ symbol: 'AAPL', seq: 1 })
  t.unsubscribe(['AAPL'], 7)
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 2 }), Delta.IGNORED)
  assert.equal(t.onSnapQuote({ symbol: 'AAPL', seq: 2 }), 0)
  t.onAck(6)
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 3 }), Delta.IGNORED)
  t.onAck(7)
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 4 }), Delta.WRONG_SYMBOL)
})

test('resync drops deltas of the symbol until its fresh snapshot', () => {
  const t = new QuoteTracker()
  t.subscribe(['AAPL'])
  t.onSnapQuote({ symbol: 'AAPL', seq: 1 })
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 5 }), Delta.GAP)
  t.resync('AAPL')
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 6 }), Delta.IGNORED)
  t.onSnapQuote({ symbol: 'AAPL', seq: 8 })
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 9 }), Delta.OK)
})

test('parseQuotesFrame reads what the gateway writes, base included', () => {
  assert.deepEqual(parseQuotesFrame('{"op":"q","quotes":[{"symbol":"AAPL","seq":11,"ts":1763800000123,"bid":189.41}]}'),
    [{ symbol: 'AAPL', seq: 11, ts: 1763800000123 }])
  assert.deepEqual(parseQuotesFrame('{"op":"q","quotes":[{"symbol":"BRK.B","seq":9,"ts":1763800000100,"last":1,"base":6}]}'),
    [{ symbol: 'BRK.B', seq: 9, ts: 1763800000100, base: 6 }])
  assert.deepEqual(parseQuotesFrame('{"op":"q","quotes":[{"symbol":"^GSPC","seq":3,"ts":5,"base":1,"bid":2}]}'),
    [{ symbol: '^GSPC', seq: 3, ts: 5, base: 1 }])
  const several = '{"op":"q","quotes":[{"symbol":"AAPL","seq":11,"ts":7,"bid":1},{"symbol":"BRK.B","seq":9,"ts":8,"last":1,"base":6}]}'
  const parsed = parseQuotesFrame(several)
  assert.ok(parsed)
  assert.deepEqual(parsed.map((q) => [q.symbol, q.seq, q.ts, q.base]), [['AAPL', 11, 7, undefined], ['BRK.B', 9, 8, 6]])
})

test('parseQuotesFrame falls back to JSON.parse for another key order, and skips other ops', () => {
  const odd = JSON.stringify({ op: 'q', quotes: [{ seq: 2, symbol: 'AAPL', ts: 1 }, { symbol: 'MSFT', seq: 3, ts: 2 }] })
  assert.deepEqual(parseQuotesFrame(odd), [{ seq: 2, symbol: 'AAPL', ts: 1 }, { symbol: 'MSFT', seq: 3, ts: 2 }])
  assert.equal(parseQuotesFrame('{"op":"snap","quotes":[]}'), null)
  assert.equal(parseQuotesFrame('{"op":"hello","v":1}'), null)
})

test('requests split at the per-request limit and carry ids', () => {
  let id = 0
  const symbols = Array.from({ length: 250 }, (_, i) => `S${i}`)
  const frames = requests('sub', symbols, () => ++id).map((f) => JSON.parse(f))
  assert.equal(frames.length, 3)
  assert.deepEqual(frames.map((f) => f.symbols.length), [MAX_SYMBOLS_PER_REQUEST, MAX_SYMBOLS_PER_REQUEST, 50])
  assert.deepEqual(frames.map((f) => f.id), [1, 2, 3])
  assert.equal(frames[0].op, 'sub')
  assert.equal(JSON.parse(requests('unsub', ['A'], () => 9)[0]).op, 'unsub')
})

test('classifyClose: drain closes are expected only in reconnect mode', () => {
  const rand = () => 0.5
  assert.deepEqual({ ...classifyClose(CloseCode.SERVICE_RESTART, { reconnect: false, byClient: false }), delayMs: null }, { code: 1012, expected: false, reconnect: false, delayMs: null })
  const drain = classifyClose(CloseCode.SERVICE_RESTART, { reconnect: true, byClient: false })
  assert.equal(drain.expected, true)
  assert.equal(drain.reconnect, true)
  assert.ok(drain.delayMs(1, rand) < 250)
  const lost = classifyClose(undefined, { reconnect: true, byClient: false })
  assert.equal(lost.code, 1006)
  assert.equal(lost.expected, false)
  assert.equal(lost.reconnect, true)
  assert.ok(lost.delayMs(1, rand) >= 250 && lost.delayMs(10, rand) <= 10000)
  assert.equal(classifyClose(CloseCode.UNAUTHORIZED, { reconnect: true, byClient: false }).reconnect, false)
  assert.equal(classifyClose(1000, { reconnect: true, byClient: true }).expected, true)
  assert.equal(errorExpected('DRAINING', true), true)
  assert.equal(errorExpected('DRAINING', false), false)
  assert.equal(errorExpected('RATE_LIMITED', true), false)
})

test('a reconnect resumes what is held: since per symbol with an epoch; the rest waits for a snapshot; a snapshot over a hole counts the ticks lost', () => {
  const t = new QuoteTracker()
  t.subscribe(['AAPL', 'MSFT', 'IBM'])
  t.onSnapQuote({ symbol: 'AAPL', seq: 10, epoch: 'e1' })
  t.onSnapQuote({ symbol: 'MSFT', seq: 3 })
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 11 }), Delta.OK)
  const since = t.reconnected(['AAPL', 'MSFT', 'IBM'])
  assert.deepEqual([...since], [['AAPL', { seq: 11, epoch: 'e1' }]], 'only a quote with an epoch resumes')
  const frames = requests('sub', ['AAPL', 'MSFT', 'IBM'], () => 1, { mode: 'distinct', since }).map((f) => JSON.parse(f))
  assert.deepEqual(frames, [{ op: 'sub', symbols: ['AAPL', 'MSFT', 'IBM'], id: 1, mode: 'distinct', since: { AAPL: { seq: 11, epoch: 'e1' } } }])
  t.subscribe(['AAPL', 'MSFT', 'IBM'])
  // The replay continues what is held: it applies at once.
  assert.equal(t.onDelta({ symbol: 'AAPL', seq: 12 }), Delta.OK)
  assert.equal(t.onDelta({ symbol: 'MSFT', seq: 9 }), Delta.IGNORED, 'MSFT waits for its snapshot')
  assert.equal(t.onSnapQuote({ symbol: 'MSFT', seq: 9 }), 5, '4-8 lost')
  assert.equal(t.onSnapQuote({ symbol: 'AAPL', seq: 20, epoch: 'e2' }), 0, 'another epoch: not countable')
})
