// WSPS_STREAM_MAPPING, with the vendor configurations docs/feeding.md shows
// and message samples from the vendors' public docs (Alpaca market data v2
// stream; Polygon/Massive stocks WebSocket).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { compileMapping, DEFAULT_MAPPING, matcher } from '../src/providers/stream-mapping.js'
import { loadFetcherConfig } from '../src/config.js'
import { documented } from './feeding-doc.js'

const NOW = 1_700_000_000_000

// The exact mappings docs/feeding.md shows.
const ALPACA = '{"rules":[' +
  '{"match":{"T":"q"},"fields":{"symbol":"S","bid":"bp","ask":"ap","bidSize":"bs","askSize":"as","ts":"t"}},' +
  '{"match":{"T":"t"},"fields":{"symbol":"S","last":"p","ts":"t"}},' +
  '{"match":{"T":["success","subscription","error","x","c","s"]},"ignore":true}]}'
const POLYGON = '{"rules":[' +
  '{"match":{"ev":"Q"},"fields":{"symbol":"sym","bid":"bp","ask":"ap","bidSize":"bs","askSize":"as","ts":"t"}},' +
  '{"match":{"ev":"T"},"fields":{"symbol":"sym","last":"p","ts":"t"}},' +
  '{"match":{"ev":"status"},"ignore":true}]}'
const FINNHUB = '{"match":{"type":"trade"},"records":"data","fields":{"symbol":"s","last":"p","ts":"t"}}'

// Alpaca market data v2 stock stream (docs.alpaca.markets, Real-time Stock Data).
const A = {
  connected: { T: 'success', msg: 'connected' },
  authenticated: { T: 'success', msg: 'authenticated' },
  authFailed: { T: 'error', code: 402, msg: 'auth failed' },
  subscription: { T: 'subscription', trades: ['AAPL'], quotes: ['AMD', 'CLDR'], bars: ['*'], updatedBars: [], dailyBars: ['VOO'], statuses: ['*'], lulds: [], corrections: ['AAPL'], cancelErrors: ['AAPL'] },
  quote: { T: 'q', S: 'AMD', bx: 'U', bp: 87.66, bs: 1, ax: 'Q', ap: 87.68, as: 4, t: '2021-02-22T15:51:45.335689322Z', c: ['R'], z: 'C' },
  trade: { T: 't', i: 96921, S: 'AAPL', x: 'D', p: 126.55, s: 1, t: '2021-02-22T15:51:44.208Z', c: ['@', 'I'], z: 'C' },
  cancel: { T: 'x', S: 'AAPL', i: 96921, x: 'D', p: 126.55, s: 1, a: 'C', t: '2021-02-22T15:51:44.208Z', z: 'C' },
  correction: { T: 'c', S: 'AAPL', x: 'D', oi: 96921, op: 126.55, os: 1, oc: ['@', 'I'], ci: 96922, cp: 126.5, cs: 1, cc: ['@', 'I'], t: '2021-02-22T15:51:44.208Z', z: 'C' },
  halt: { T: 's', S: 'AAPL', sc: 'H', sm: 'Trading Halt', rc: 'T12', rm: 'Trading Halted; For information requested by NASDAQ', t: '2021-02-22T15:51:44.208Z', z: 'C' },
  bar: { T: 'b', S: 'SPY', o: 388.985, h: 389.13, l: 388.975, c: 389.12, v: 49378, t: '2021-02-22T19:15:00Z' }
}
// Polygon/Massive stocks WebSocket (polygon.io docs, Stocks WebSocket).
const P = {
  connected: { ev: 'status', status: 'connected', message: 'Connected Successfully' },
  authenticated: { ev: 'status', status: 'auth_success', message: 'authenticated' },
  subscribed: { ev: 'status', status: 'success', message: 'subscribed to: Q.MSFT' },
  quote: { ev: 'Q', sym: 'MSFT', bx: 4, bp: 114.125, bs: 100, ax: 7, ap: 114.128, as: 160, c: 0, i: [604], t: 1536036818784, q: 50385480, z: 3 },
  trade: { ev: 'T', sym: 'MSFT', x: 4, i: '12345', z: 3, p: 114.125, s: 100, c: [0, 12], t: 1536036818784, q: 3681328 },
  aggregate: { ev: 'A', sym: 'MSFT', v: 5400, av: 1862400, op: 114, vw: 114.1, o: 114.1, c: 114.12, h: 114.13, l: 114.09, s: 1536036818000, e: 1536036819000 }
}

test('Alpaca: quotes set bid/ask and sizes, trades set last (not volume: a trade\'s s is its own size)', () => {
  const map = compileMapping(ALPACA)
  const out = map([A.quote, A.trade], NOW)
  assert.deepEqual(out.quotes, [
    { symbol: 'AMD', ts: Date.parse('2021-02-22T15:51:45.335Z'), bid: 87.66, ask: 87.68, bidSize: 1, askSize: 4 },
    { symbol: 'AAPL', ts: Date.parse('2021-02-22T15:51:44.208Z'), last: 126.55 }
  ])
  assert.deepEqual(out.dropped, { ignored: 0, unmatched: 0, malformed: 0, empty: 0 })
})

test('Alpaca: control, cancel, correction and status records are ignored, not malformed; a cancel leaves last alone', () => {
  const map = compileMapping(ALPACA)
  for (const rec of [A.connected, A.authenticated, A.authFailed, A.subscription, A.cancel, A.correction, A.halt]) {
    const out = map([rec], NOW)
    assert.deepEqual(out.quotes, [], `${rec.T} publishes nothing`)
    assert.deepEqual(out.dropped, { ignored: 1, unmatched: 0, malformed: 0, empty: 0 }, `${rec.T} is ignored`)
  }
  // A kind no rule names (a bar) is unmatched: counted apart, so a mapping
  // that misses a kind the vendor sends shows in the metric.
  assert.deepEqual(map([A.bar], NOW).dropped, { ignored: 0, unmatched: 1, malformed: 0, empty: 0 })
})

test('Polygon: Q and T records in one message; status messages are ignored', () => {
  const map = compileMapping(POLYGON)
  const out = map([P.quote, P.trade, P.aggregate], NOW)
  assert.deepEqual(out.quotes, [
    { symbol: 'MSFT', ts: 1536036818784, bid: 114.125, ask: 114.128, bidSize: 100, askSize: 160 },
    { symbol: 'MSFT', ts: 1536036818784, last: 114.125 }
  ])
  assert.deepEqual(out.dropped, { ignored: 0, unmatched: 1, malformed: 0, empty: 0 }, 'the aggregate (no rule) is unmatched')
  for (const rec of [P.connected, P.authenticated, P.subscribed]) {
    assert.deepEqual(map([rec], NOW), { quotes: [], dropped: { ignored: 1, unmatched: 0, malformed: 0, empty: 0 } })
  }
})

test('a record that maps to no quote field publishes nothing (an empty update would bump seq for nothing)', () => {
  // One catch-all rule, as a mapping without recordMatch is: a halt or a
  // correction has no `p`, `bp` or `ap`.
  const map = compileMapping('{"fields":{"symbol":"S","bid":"bp","ask":"ap","last":"p","ts":"t"}}')
  const out = map([A.halt, A.correction, A.trade], NOW)
  assert.deepEqual(out.quotes, [{ symbol: 'AAPL', ts: Date.parse(A.trade.t), last: 126.55 }])
  assert.equal(out.dropped.empty, 2)
})

test('the older keys still make one rule: recordMatch picks the records, the others are unmatched', () => {
  const map = compileMapping('{"recordMatch":{"T":"q"},"fields":{"symbol":"S","bid":"bp","ask":"ap","bidSize":"bs","askSize":"as","ts":"t"}}')
  const out = map([A.authenticated, A.quote, A.trade], NOW)
  assert.deepEqual(out.quotes.map((q) => q.symbol), ['AMD'])
  assert.deepEqual(out.dropped, { ignored: 0, unmatched: 2, malformed: 0, empty: 0 })
})

test('Finnhub style: trades under data, picked by the message type; ms timestamps', () => {
  const map = compileMapping(FINNHUB)
  const out = map({ type: 'trade', data: [{ s: 'MSFT', p: 410.5, v: 100, t: 1_700_000_000_123 }, { s: 'BINANCE:BTCUSDT', p: 1, v: 1, t: 1 }] }, NOW)
  assert.deepEqual(out.quotes, [{ symbol: 'MSFT', ts: 1_700_000_000_123, last: 410.5 }])
  assert.equal(out.dropped.malformed, 1, 'a symbol outside the protocol rule is malformed')
  assert.equal(map({ type: 'ping' }, NOW).dropped.ignored, 1, 'a message `match` refuses counts as one ignored record')
  assert.equal(map({ type: 'trade' }, NOW).dropped.malformed, 1, 'a matched message without records is malformed')
})

test('the default mapping reads wsps-named records; bad values make a record malformed, not the message', () => {
  const map = compileMapping(DEFAULT_MAPPING)
  const out = map([{ symbol: 'ibm', bid: '12.5', ask: 13 }, { symbol: 'X', bid: 'abc' }, 7, { symbol: 'Y', ts: 1_700_000_000, last: 1 }], NOW)
  assert.deepEqual(out.quotes, [{ symbol: 'IBM', ts: NOW, bid: 12.5, ask: 13 }, { symbol: 'Y', ts: 1_700_000_000_000, last: 1 }])
  assert.equal(out.dropped.malformed, 2)
  assert.equal(compileMapping(DEFAULT_MAPPING)(42, NOW).dropped.malformed, 1)
})

test('match values: a list means one of; the first matching rule wins', () => {
  const is = matcher({ T: ['x', 'c'], 'a.b': 1 })
  assert.equal(is({ T: 'c', a: { b: 1 } }), true)
  assert.equal(is({ T: 'q', a: { b: 1 } }), false)
  assert.equal(is({ T: 'x', a: { b: 2 } }), false)
  const map = compileMapping('{"rules":[{"match":{"T":"t","c":"I"},"ignore":true},{"match":{"T":"t"},"fields":{"symbol":"S","last":"p"}}]}')
  assert.deepEqual(map([{ T: 't', S: 'A', p: 1, c: 'I' }, { T: 't', S: 'A', p: 2 }], NOW).quotes, [{ symbol: 'A', ts: NOW, last: 2 }])
})

test('Polygon: the day\'s volume comes from the per-second aggregate (av), not from trades', () => {
  const map = compileMapping('{"rules":[{"match":{"ev":"A"},"fields":{"symbol":"sym","volume":"av"}}]}')
  assert.deepEqual(map([P.aggregate], NOW).quotes, [{ symbol: 'MSFT', ts: NOW, volume: 1862400 }])
})

test('a bad mapping is refused at start-up with the reason', () => {
  assert.throws(() => compileMapping('nope'), /not JSON/)
  assert.throws(() => compileMapping('{"fields":{"bid":"b"}}'), /must map "symbol"/)
  assert.throws(() => compileMapping('{"fields":{"symbol":"s","price":"p"}}'), /unknown quote field "price"/)
  assert.throws(() => compileMapping('{"where":{}}'), /unknown key "where"/)
  assert.throws(() => compileMapping('{"rules":[]}'), /non-empty list/)
  assert.throws(() => compileMapping('{"rules":[{"match":{"T":"q"}}]}'), /rules\[0\]" needs either "fields" or "ignore": true/)
  assert.throws(() => compileMapping('{"rules":[{"match":{"T":"q"},"ignore":true,"fields":{"symbol":"S"}}]}'), /needs either/)
  assert.throws(() => compileMapping('{"rules":[{"match":{"T":"q"},"ignore":false}]}'), /ignore" can only be true/)
  assert.throws(() => compileMapping('{"rules":[{"fields":{"symbol":"S"}},{"match":{"T":"q"},"ignore":true}]}'), /rules\[0\]" has no "match" but is not the last rule/)
  assert.throws(() => compileMapping('{"rules":[{"match":{"T":[]},"ignore":true}]}'), /rules\[0\].match.T" must be a value or a non-empty list/)
  assert.throws(() => compileMapping('{"rules":[{"match":{"T":"t"},"fields":{"symbol":"S","size":"s"}}]}'), /"rules\[0\].fields" maps unknown quote field "size"/)
  assert.throws(() => compileMapping('{"rules":[{"match":{"T":"t"},"ignore":true,"when":1}]}'), /unknown key "when"/)
  assert.throws(() => compileMapping('{"recordMatch":{"T":"q"},"rules":[{"ignore":true}]}'), /use one or the other/)
  assert.throws(() => loadFetcherConfig({ WSPS_PROVIDER: 'ws-stream', WSPS_STREAM_URL: 'ws://x', WSPS_STREAM_MAPPING: '{"records":1}' }), /WSPS_STREAM_MAPPING: "records" must be a dot path/)
  assert.throws(() => loadFetcherConfig({ WSPS_PROVIDER: 'ws-stream', WSPS_STREAM_URL: 'http://x' }), /must be a ws\(s\) URL/)
  assert.throws(() => loadFetcherConfig({ WSPS_PROVIDER: 'push' }), /needs WSPS_PUBLISH_TOKEN/)
  assert.throws(() => loadFetcherConfig({ WSPS_PUBLISH_TOKEN: 'short' }), /at least 16 characters/)
})

test('docs/feeding.md shows these mappings, and they load', () => {
  assert.deepEqual(documented('WSPS_STREAM_MAPPING').sort(), [ALPACA, POLYGON, FINNHUB].sort())
  for (const mapping of [ALPACA, POLYGON, FINNHUB]) {
    assert.equal(loadFetcherConfig({ WSPS_PROVIDER: 'ws-stream', WSPS_STREAM_URL: 'ws://x', WSPS_STREAM_MAPPING: mapping }).streamMapping, mapping)
  }
})
