import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Feed } from '../src/feed.js'
import { RecoveryPins } from '../src/recovery-pins.js'
import { quote } from './helper.js'

/** @param {number} seq */
const held = (seq) => quote(seq, { epoch: 'e1', ts: 1000 })

test('recent() hands the run from..to of what was held, in order, or null unless every tick of it is there', () => {
  const pins = new RecoveryPins(10)
  for (const seq of [4, 5, 6, 7]) pins.held(held(seq))
  assert.deepEqual(pins.recent(5, 7), [held(5), held(6), held(7)])
  assert.deepEqual(pins.recent(4, 4), [held(4)])
  assert.deepEqual(pins.recent(6, 5), [], 'nothing asked: nothing missing')
  assert.equal(pins.recent(3, 5), null, 'seq 3 was never held')
  assert.equal(pins.recent(6, 8), null, 'seq 8 is not held yet')
})

test('recent() is null where held quotes skip a seq', () => {
  const pins = new RecoveryPins(10)
  for (const seq of [4, 5, 7, 8]) pins.held(held(seq))
  assert.equal(pins.recent(4, 7), null, 'four quotes from 4 on end at 8, not 7')
  assert.equal(pins.recent(5, 6), null)
  assert.deepEqual(pins.recent(7, 8), [held(7), held(8)])
})

test('at most `max` quotes are kept: what follows is not there', () => {
  const pins = new RecoveryPins(2)
  for (const seq of [1, 2, 3]) pins.held(held(seq))
  assert.deepEqual(pins.recent(1, 2), [held(1), held(2)])
  assert.equal(pins.recent(2, 3), null)
  assert.equal(pins.recent(3, 3), null)
})

test('unpin() says whether a recovery still waits: the first pin is the constructor, each pin() one more', () => {
  const pins = new RecoveryPins(10)
  pins.pin()
  pins.pin()
  assert.equal(pins.unpin(), true)
  assert.equal(pins.unpin(), true)
  assert.equal(pins.unpin(), false, 'the last one is done')
})

test('a feed pinned by two recoveries is not idle until both unpin, and keeps what it holds only while pinned', () => {
  const feed = new Feed('AAPL', 0, /** @type {any} */ ({ queue () { throw new Error('no subscriber: nothing to fan out') } }), 10, true)
  feed.goLive(null, null)
  assert.equal(feed.idleFor(Date.now() + 1, 0), true, 'created idle, nobody waits')
  assert.equal(feed.recent(1, 1), null, 'not pinned: nothing kept')
  assert.deepEqual(feed.recent(2, 1), [])
  feed.pin(1)
  feed.pin(1)
  assert.equal(feed.idleFor(Date.now() + 1, 0), false)
  const onQuote = (/** @type {number} */ seq) => feed.onQuote(/** @type {any} */ (JSON.parse(held(seq))), held(seq))
  onQuote(1)
  onQuote(2)
  onQuote(2)
  assert.deepEqual(feed.recent(1, 2), [held(1), held(2)], 'every held quote once, the stale repeat not')
  feed.pin(-1)
  assert.equal(feed.idleFor(Date.now() + 1, 0), false, 'one recovery still waits')
  assert.deepEqual(feed.recent(2, 2), [held(2)])
  feed.pin(-1)
  assert.equal(feed.idleFor(Date.now() + 1, 0), true, 'idle from the last unpin on')
  assert.equal(feed.recent(1, 2), null, 'dropped with the last pin')
  feed.pin(1)
  onQuote(3)
  assert.equal(feed.recent(2, 3), null, 'a new pin keeps from its own start')
  assert.deepEqual(feed.recent(3, 3), [held(3)])
})
