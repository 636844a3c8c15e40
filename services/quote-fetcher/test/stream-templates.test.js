// WSPS_STREAM_SUBSCRIBE / WSPS_STREAM_UNSUBSCRIBE templates and
// WSPS_STREAM_SUBSCRIBE_BATCH, with the formats of docs/feeding.md.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkTemplate, compileTemplate } from '../src/providers/stream-templates.js'

/** The messages a template makes of these symbols. @param {string} template @param {string[]} symbols @param {number} [batch] */
const subscribeFrames = (template, symbols, batch = 0) => compileTemplate(template, batch)(symbols)
import { loadFetcherConfig } from '../src/config.js'
import { documented } from './feeding-doc.js'

// The exact templates docs/feeding.md shows.
const ALPACA_SUBSCRIBE = '{"action":"subscribe","quotes":{symbols},"trades":{symbols}}'
const POLYGON_SUBSCRIBE = '{"action":"subscribe","params":"{symbols:Q.{symbol},T.{symbol}}"}'
const FINNHUB_SUBSCRIBE = '{"type":"subscribe","symbol":{symbol}}'

test('docs/feeding.md shows these templates, and their unsubscribe twins', () => {
  const subscribe = [ALPACA_SUBSCRIBE, POLYGON_SUBSCRIBE, FINNHUB_SUBSCRIBE]
  assert.deepEqual(documented('WSPS_STREAM_SUBSCRIBE').sort(), [...subscribe].sort())
  assert.deepEqual(documented('WSPS_STREAM_UNSUBSCRIBE').sort(), subscribe.map((t) => t.replace('subscribe', 'unsubscribe')).sort())
})

const streamEnv = (more) => ({ WSPS_PROVIDER: 'ws-stream', WSPS_STREAM_URL: 'ws://x', ...more })

test('Polygon: {symbols:ITEM} expands per symbol inside a string, a comma list', () => {
  assert.deepEqual(subscribeFrames(POLYGON_SUBSCRIBE, ['AAPL', 'MSFT']), ['{"action":"subscribe","params":"Q.AAPL,T.AAPL,Q.MSFT,T.MSFT"}'])
  assert.deepEqual(JSON.parse(subscribeFrames(POLYGON_SUBSCRIBE, ['BRK.B'])[0]), { action: 'subscribe', params: 'Q.BRK.B,T.BRK.B' })
})

test('Alpaca: {symbols} is a JSON array, as often as the template names it', () => {
  assert.deepEqual(subscribeFrames(ALPACA_SUBSCRIBE, ['AAPL', 'MSFT']), ['{"action":"subscribe","quotes":["AAPL","MSFT"],"trades":["AAPL","MSFT"]}'])
})

test('{symbol} is one message per symbol; no symbols, no message', () => {
  assert.deepEqual(subscribeFrames(FINNHUB_SUBSCRIBE, ['A', 'B']), ['{"type":"subscribe","symbol":"A"}', '{"type":"subscribe","symbol":"B"}'])
  for (const t of [ALPACA_SUBSCRIBE, POLYGON_SUBSCRIBE, FINNHUB_SUBSCRIBE]) assert.deepEqual(subscribeFrames(t, []), [])
})

test('the batch limit splits a change into messages of at most that many symbols', () => {
  const symbols = ['A', 'B', 'C', 'D', 'E']
  assert.deepEqual(subscribeFrames(POLYGON_SUBSCRIBE, symbols, 2).map((f) => JSON.parse(f).params), ['Q.A,T.A,Q.B,T.B', 'Q.C,T.C,Q.D,T.D', 'Q.E,T.E'])
  assert.deepEqual(subscribeFrames(ALPACA_SUBSCRIBE, symbols, 3).map((f) => JSON.parse(f).quotes), [['A', 'B', 'C'], ['D', 'E']])
  assert.equal(subscribeFrames(ALPACA_SUBSCRIBE, symbols, 0).length, 1, '0: all in one')
  assert.equal(subscribeFrames(FINNHUB_SUBSCRIBE, symbols, 2).length, 5, '{symbol}: always one each')
  assert.equal(loadFetcherConfig(streamEnv({ WSPS_STREAM_SUBSCRIBE_BATCH: '100' })).streamSubscribeBatch, 100)
})

test('a template that is not JSON once filled in is refused at start-up, showing what it rendered', () => {
  // What the issue tried: {symbol} inside a string puts quotes in quotes.
  assert.throws(() => loadFetcherConfig(streamEnv({ WSPS_STREAM_SUBSCRIBE: '{"action":"subscribe","params":"Q.{symbol},T.{symbol}"}' })),
    (/** @type {Error} */ err) => err.message.includes('WSPS_STREAM_SUBSCRIBE renders {"action":"subscribe","params":"Q."AAPL",T."AAPL""} for ["AAPL","MSFT"], which is not JSON (inside a JSON string, write {symbols:ITEM}'))
  assert.throws(() => checkTemplate('{"params":"{symbols:Q.{symbol}}}', 0), { message: 'renders {"params":"Q.AAPL,Q.MSFT} for ["AAPL","MSFT"], which is not JSON' })
  assert.throws(() => loadFetcherConfig(streamEnv({ WSPS_STREAM_UNSUBSCRIBE: '{"sub":1}' })), /WSPS_STREAM_UNSUBSCRIBE must contain \{symbols\}, \{symbols:ITEM\} or \{symbol\}/)
  assert.throws(() => checkTemplate('{"a":{symbols},"b":{symbol}}', 0), /mixes \{symbol\}/)
  assert.throws(() => checkTemplate('{"params":"{symbols:Q.*}"}', 0), /\{symbols:Q\.\*\} without \{symbol\}/)
  for (const t of [ALPACA_SUBSCRIBE, POLYGON_SUBSCRIBE, FINNHUB_SUBSCRIBE]) checkTemplate(t, 1)
})
