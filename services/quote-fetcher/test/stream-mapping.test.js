// WSPS_STREAM_MAPPING and the subscribe templates, with the two vendor
// styles docs/feeding.md shows.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { authFrame, compileMapping, DEFAULT_MAPPING, subscribeFrames } from '../src/providers/stream-mapping.js'
import { loadFetcherConfig } from '../src/config.js'

const NOW = 1_700_000_000_000

// The exact mappings docs/feeding.md shows.
const ALPACA = '{"recordMatch":{"T":"q"},"fields":{"symbol":"S","bid":"bp","ask":"ap","bidSize":"bs","askSize":"as","ts":"t"}}'
const FINNHUB = '{"match":{"type":"trade"},"records":"data","fields":{"symbol":"s","last":"p","volume":"v","ts":"t"}}'

test('Alpaca/Polygon style: an array of records, quote records picked by T', () => {
  const map = compileMapping(ALPACA)
  const out = map([
    { T: 'success', msg: 'authenticated' },
    { T: 'q', S: 'AAPL', bp: 189.1, ap: 189.2, bs: 3, as: 5, t: '2024-03-01T15:30:00.123456789Z' },
    { T: 't', S: 'AAPL', p: 189.15 }
  ], NOW)
  assert.deepEqual(out.quotes, [{ symbol: 'AAPL', ts: Date.parse('2024-03-01T15:30:00.123Z'), bid: 189.1, ask: 189.2, bidSize: 3, askSize: 5 }])
  assert.equal(out.malformed, 0)
  assert.equal(map([{ T: 'subscription', quotes: ['AAPL'] }], NOW).ignored, true, 'control messages are ignored, not malformed')
})

test('Finnhub style: trades under data, picked by the message type; ms timestamps', () => {
  const map = compileMapping(FINNHUB)
  const out = map({ type: 'trade', data: [{ s: 'MSFT', p: 410.5, v: 100, t: 1_700_000_000_123 }, { s: 'BINANCE:BTCUSDT', p: 1, v: 1, t: 1 }] }, NOW)
  assert.deepEqual(out.quotes, [{ symbol: 'MSFT', ts: 1_700_000_000_123, last: 410.5, volume: 100 }])
  assert.equal(out.malformed, 1, 'a symbol outside the protocol rule is malformed')
  assert.equal(map({ type: 'ping' }, NOW).ignored, true)
  assert.equal(map({ type: 'trade' }, NOW).malformed, 1, 'a matched message without records is malformed')
})

test('the default mapping reads wsps-named records; bad values make a record malformed, not the message', () => {
  const map = compileMapping(DEFAULT_MAPPING)
  const out = map([{ symbol: 'ibm', bid: '12.5', ask: 13 }, { symbol: 'X', bid: 'abc' }, 7, { symbol: 'Y', ts: 1_700_000_000 }], NOW)
  assert.deepEqual(out.quotes, [{ symbol: 'IBM', ts: NOW, bid: 12.5, ask: 13 }, { symbol: 'Y', ts: 1_700_000_000_000 }])
  assert.equal(out.malformed, 2)
})

test('a bad mapping is refused at start-up with the reason', () => {
  assert.throws(() => compileMapping('nope'), /not JSON/)
  assert.throws(() => compileMapping('{"fields":{"bid":"b"}}'), /must map "symbol"/)
  assert.throws(() => compileMapping('{"fields":{"symbol":"s","price":"p"}}'), /unknown quote field "price"/)
  assert.throws(() => compileMapping('{"where":{}}'), /unknown key "where"/)
  assert.throws(() => loadFetcherConfig({ WSPS_PROVIDER: 'ws-stream', WSPS_STREAM_URL: 'ws://x', WSPS_STREAM_MAPPING: '{"records":1}' }), /WSPS_STREAM_MAPPING: "records" must be a dot path/)
  assert.throws(() => loadFetcherConfig({ WSPS_PROVIDER: 'ws-stream', WSPS_STREAM_URL: 'http://x' }), /must be a ws\(s\) URL/)
  assert.throws(() => loadFetcherConfig({ WSPS_PROVIDER: 'ws-stream', WSPS_STREAM_URL: 'ws://x', WSPS_STREAM_SUBSCRIBE: '{"sub":1}' }), /must contain \{symbols\} or \{symbol\}/)
  assert.throws(() => loadFetcherConfig({ WSPS_PROVIDER: 'push' }), /needs WSPS_PUBLISH_TOKEN/)
  assert.throws(() => loadFetcherConfig({ WSPS_PUBLISH_TOKEN: 'short' }), /at least 16 characters/)
})

test('subscribe templates: {symbols} is one message, {symbol} one per symbol; auth fills {token}', () => {
  assert.deepEqual(subscribeFrames('{"action":"subscribe","quotes":{symbols}}', ['A', 'B']), ['{"action":"subscribe","quotes":["A","B"]}'])
  assert.deepEqual(subscribeFrames('{"type":"subscribe","symbol":{symbol}}', ['A', 'B']), ['{"type":"subscribe","symbol":"A"}', '{"type":"subscribe","symbol":"B"}'])
  assert.deepEqual(subscribeFrames('{"s":{symbols}}', []), [])
  assert.equal(authFrame('{"action":"auth","key":{token}}', 'k"1'), '{"action":"auth","key":"k\\"1"}')
})
