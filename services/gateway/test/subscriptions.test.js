import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DISTINCT, FULL_RATE } from '../src/delivery.js'
import { Subscriptions } from '../src/subscriptions.js'

test('symbols keep their order, their delivery and their timeline; a removal reports what each had', () => {
  const subs = new Subscriptions()
  assert.deepEqual(subs.symbols, [])
  subs.add(['AAPL', 'MSFT'], FULL_RATE)
  subs.add(['IBM'], DISTINCT)
  subs.setDelayed('MSFT', true)
  assert.deepEqual(subs.symbols, ['AAPL', 'MSFT', 'IBM'])
  assert.equal(subs.deliveryOf('IBM'), DISTINCT)
  assert.equal(subs.deliveryOf('AAPL'), FULL_RATE)
  assert.equal(subs.delayedOf('MSFT'), true)
  assert.equal(subs.delayedOf('AAPL'), false)

  /** @type {[string, number, boolean][]} */
  const removed = []
  subs.remove(['IBM', 'MSFT', 'NVDA'], (s, delivery, delayed) => removed.push([s, delivery, delayed]))
  assert.deepEqual(removed, [['MSFT', FULL_RATE, true], ['IBM', DISTINCT, false]], 'in held order, only what was held')
  assert.deepEqual(subs.symbols, ['AAPL'])
  assert.equal(subs.deliveryOf('IBM'), FULL_RATE, 'a removed symbol forgets its delivery')
  assert.equal(subs.delayedOf('MSFT'), false, 'and its timeline')
})

test('holds(): the same answer from the short-list scan and the long-list set', () => {
  for (const n of [3, 40]) {
    const subs = new Subscriptions()
    const symbols = Array.from({ length: n }, (_, i) => `S${i}`)
    subs.add(symbols, FULL_RATE)
    const held = subs.holds()
    assert.ok(symbols.every(held), `${n}: every held symbol`)
    assert.equal(held('X'), false, `${n}: not another`)
  }
})

test('askDelayed notes only delayed symbols; moving one back to real-time forgets that it asked', () => {
  const subs = new Subscriptions()
  subs.add(['AAPL', 'MSFT'], FULL_RATE)
  subs.setDelayed('AAPL', true)
  subs.askDelayed(['AAPL', 'MSFT'], true)
  assert.equal(subs.askedDelayed('AAPL'), true)
  assert.equal(subs.askedDelayed('MSFT'), false, 'real-time: nothing to note')
  subs.askDelayed(['AAPL'], false)
  assert.equal(subs.askedDelayed('AAPL'), false, 'a later sub left it to the token')
  subs.askDelayed(['AAPL'], true)
  subs.setDelayed('AAPL', false)
  assert.equal(subs.askedDelayed('AAPL'), false)
  subs.setDelayed('AAPL', true)
  assert.equal(subs.askedDelayed('AAPL'), false, 'delayed again, by the token this time')
})

test('bars: held per (symbol, interval), counted with quotes, asked-delayed per series', () => {
  const subs = new Subscriptions()
  subs.add(['AAPL'], FULL_RATE)
  subs.holdBars('AAPL', '1m', false)
  subs.holdBars('MSFT', '1m', true, true)
  subs.holdBars('AAPL', '5m', true)
  assert.equal(subs.barCount, 3)
  assert.equal(subs.count, 4, 'quotes and bar series together')
  assert.deepEqual(subs.barsOf('1m'), ['AAPL', 'MSFT'])
  assert.equal(subs.barDelayed('AAPL', '5m'), true)
  assert.equal(subs.barDelayed('AAPL', '1h'), undefined, 'not held')
  assert.equal(subs.barsAsked('MSFT', '1m'), true)
  assert.equal(subs.barsAsked('AAPL', '5m'), false, 'delayed by the token')
  assert.deepEqual(subs.barSubscriptions(), [['AAPL', '1m', false], ['MSFT', '1m', true], ['AAPL', '5m', true]])
  assert.equal(subs.dropBars('MSFT', '1m'), true)
  assert.equal(subs.dropBars('MSFT', '1m'), false, 'once')
  assert.equal(subs.barsAsked('MSFT', '1m'), false)
  subs.clear()
  assert.equal(subs.count, 0)
  assert.deepEqual(subs.symbols, [])
  assert.deepEqual(subs.barSubscriptions(), [])
})
