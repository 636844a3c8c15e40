import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { continues } from '@wsps/protocol'
import { diffQuotes, mergeUpdates } from '../src/delta.js'

const quote = (/** @type {number} */ seq, /** @type {Record<string, number>} */ fields = {}) => ({
  symbol: 'AAPL', seq, ts: 1000 + seq, bid: 1, ask: 2, last: 1.5, bidSize: 100, askSize: 100, volume: 0, open: 1, high: 2, low: 1, prevClose: 1, ...fields
})

test('a delta carries symbol, seq, ts and only the changed fields', () => {
  const u = diffQuotes(quote(1), quote(2, { last: 1.6, volume: 100 }))
  assert.deepEqual(JSON.parse(String(u.json)), { symbol: 'AAPL', seq: 2, ts: 1002, last: 1.6, volume: 100 })
  assert.equal(u.base, 1)
})

test('a delta after a skipped seq names its base', () => {
  const u = diffQuotes(quote(1), quote(4, { bid: 1.1 }))
  assert.deepEqual(JSON.parse(String(u.json)), { symbol: 'AAPL', seq: 4, ts: 1004, base: 1, bid: 1.1 })
  assert.ok(continues(JSON.parse(String(u.json)), 1))
  assert.ok(!continues(JSON.parse(String(u.json)), 3))
})

test('merged updates apply on top of the older base', () => {
  const a = diffQuotes(quote(1), quote(2, { bid: 1.1 }))
  const b = diffQuotes(quote(2, { bid: 1.1 }), quote(3, { bid: 1.1, ask: 2.2 }))
  const m = mergeUpdates(a, b)
  assert.deepEqual(JSON.parse(m.json ?? JSON.stringify(m.fields)), { symbol: 'AAPL', seq: 3, ts: 1003, bid: 1.1, ask: 2.2, base: 1 })
})

test('property: applying a chain of merged deltas to the base gives the final quote', () => {
  const field = fc.constantFrom('bid', 'ask', 'last', 'bidSize', 'askSize', 'volume', 'high', 'low')
  const change = fc.dictionary(field, fc.integer({ min: 1, max: 1000 }))
  fc.assert(fc.property(fc.array(change, { minLength: 1, maxLength: 12 }), (changes) => {
    const quotes = [quote(1)]
    for (const c of changes) quotes.push({ ...quotes[quotes.length - 1], ...c, seq: quotes.length + 1, ts: 1000 + quotes.length + 1 })
    let merged = diffQuotes(quotes[0], quotes[1])
    for (let i = 2; i < quotes.length; i++) merged = mergeUpdates(merged, diffQuotes(quotes[i - 1], quotes[i]))
    const wire = JSON.parse(JSON.stringify(merged.fields))
    assert.ok(continues(wire, 1))
    const { base: _b, ...fields } = wire
    assert.deepEqual({ ...quotes[0], ...fields }, quotes[quotes.length - 1])
  }))
})
