import assert from 'node:assert/strict'
import { test } from 'node:test'
import { HOT_SYMBOLS, formatDuration, parseDuration, readConfig, symbolUniverse } from './config.js'

test('parseDuration reads k6 durations and bare seconds', () => {
  assert.equal(parseDuration('30s'), 30000)
  assert.equal(parseDuration('1m30s'), 90000)
  assert.equal(parseDuration('2h'), 7200000)
  assert.equal(parseDuration('250ms'), 250)
  assert.equal(parseDuration('1.5s'), 1500)
  assert.equal(parseDuration('45'), 45000)
  assert.throws(() => parseDuration('10 minutes'), /not a duration/)
  assert.throws(() => parseDuration(''), /not a duration/)
})

test('formatDuration writes what k6 reads back', () => {
  for (const ms of [0, 250, 1000, 90000, 3600000 + 61000, 1500]) {
    const s = formatDuration(ms)
    assert.equal(ms === 0 ? 0 : parseDuration(s), ms, s)
  }
  assert.equal(formatDuration(90000), '1m30s')
})

test('symbolUniverse: a count gives hot names then synthetic ones, all valid and distinct', () => {
  const u = symbolUniverse('200')
  assert.equal(u.length, 200)
  assert.deepEqual(u.slice(0, HOT_SYMBOLS.length), [...HOT_SYMBOLS])
  assert.equal(new Set(u).size, 200)
  for (const s of u) assert.match(s, /^[A-Z0-9.^=-]{1,16}$/)
  assert.deepEqual(symbolUniverse('3'), ['AAPL', 'MSFT', 'NVDA'])
})

test('symbolUniverse: a list is kept in order, deduplicated and validated', () => {
  assert.deepEqual(symbolUniverse('AAPL, MSFT,AAPL,BRK.B'), ['AAPL', 'MSFT', 'BRK.B'])
  assert.throws(() => symbolUniverse('AAPL,aapl'), /not valid symbols.*aapl/)
  assert.throws(() => symbolUniverse('0'), /count/)
})

test('readConfig: defaults work against make up', () => {
  const c = readConfig({})
  assert.equal(c.scenario, 'ramp')
  assert.deepEqual(c.urls, ['ws://localhost:8080/ws'])
  assert.equal(c.target, 1000)
  assert.equal(c.rampMs, 30000)
  assert.equal(c.holdMs, 60000)
  assert.equal(c.subs, 5)
  assert.equal(c.connsPerVu, 10)
  assert.equal(c.symbols.length, 200)
  assert.equal(c.reconnect, false)
  assert.equal(c.churnMs, 0)
  assert.equal(c.summaryDir, 'loadtest/results')
})

test('readConfig: scenario defaults and overrides', () => {
  const smoke = readConfig({ SCENARIO: 'smoke' })
  assert.equal(smoke.target, 20)
  const soak = readConfig({ SCENARIO: 'soak', TARGET: '300', HOLD: '2h' })
  assert.equal(soak.target, 300)
  assert.equal(soak.holdMs, 7200000)
  assert.equal(soak.churnMs, 60000)
  const r = readConfig({ TARGET: '5000', RAMP: '1m', HOLD: '5m', SUBS: '20', SKEW: '0', CONNS_PER_VU: '50', RECONNECT: '1', WS_URL: 'ws://a:1/ws, ws://b:2/ws', SUMMARY_DIR: '/tmp/' })
  assert.equal(r.target, 5000)
  assert.equal(r.rampMs, 60000)
  assert.equal(r.subs, 20)
  assert.equal(r.skew, 0)
  assert.equal(r.connsPerVu, 50)
  assert.equal(r.reconnect, true)
  assert.deepEqual(r.urls, ['ws://a:1/ws', 'ws://b:2/ws'])
  assert.equal(r.summaryDir, '/tmp')
})

test('readConfig: STAGES replaces RAMP/HOLD; the hold is the final flat stage', () => {
  const c = readConfig({ STAGES: '30s:1000,1m:1000,30s:3000,2m:3000' })
  assert.equal(c.stages.length, 4)
  assert.equal(c.target, 3000)
  assert.equal(c.rampMs, 30000)
  assert.equal(c.holdMs, 120000)
  assert.equal(readConfig({ STAGES: '30s:1000,30s:0' }).holdMs, 0)
})

test('readConfig: bad values name the variable', () => {
  assert.throws(() => readConfig({ SCENARIO: 'spike' }), /SCENARIO=spike/)
  assert.throws(() => readConfig({ TARGET: '-3' }), /TARGET=-3/)
  assert.throws(() => readConfig({ TARGET: '1.5' }), /TARGET=1.5/)
  assert.throws(() => readConfig({ SUBS: '300', SYMBOLS: '200' }), /SUBS=300/)
  assert.throws(() => readConfig({ WS_URL: 'http://x/ws' }), /WS_URL/)
  assert.throws(() => readConfig({ STAGES: '30s-100' }), /STAGES/)
  assert.throws(() => readConfig({ STAGES: '30s:0' }), /never opens/)
  assert.throws(() => readConfig({ CONNECT_OK: '2' }), /CONNECT_OK=2/)
})
