// The page's bar state (public/chart-bars.js): backfill, then live updates,
// as the gateway's `bars` and `bar` frames bring them.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ChartBars } from '../public/chart-bars.js'

const T0 = 1_763_800_020_000
const MIN = 60_000

/**
 * @param {number} i bar number from T0, one a minute
 * @param {number} [c] close
 */
const bar = (i, c = 100 + i) => ({ t: T0 + i * MIN, o: 100, h: Math.max(100, c) + 1, l: Math.min(100, c) - 1, c, v: 10 * (i + 1), n: i + 1 })

/** @param {ChartBars} s */
const shape = (s) => s.bars.map((b) => `${(b.t - T0) / MIN}:${b.c}${b.closed ? '' : '*'}`)

test('backfill: closed bars oldest first, then the open one', () => {
  const s = new ChartBars()
  s.backfill({ bars: [bar(0), bar(1), bar(2)], current: bar(3) })
  assert.deepEqual(shape(s), ['0:100', '1:101', '2:102', '3:103*'])
  assert.deepEqual({ ...s.bars[1] }, { ...bar(1), closed: true })
})

test('backfill without an open bar, and empty', () => {
  const s = new ChartBars()
  s.backfill({ bars: [bar(0), bar(1)] })
  assert.deepEqual(shape(s), ['0:100', '1:101'])
  s.backfill({ bars: [] })
  assert.deepEqual(shape(s), [])
})

test('a backfill replaces what was held (a resubscription after a reconnect)', () => {
  const s = new ChartBars()
  s.backfill({ bars: [bar(0)], current: bar(1) })
  s.apply({ bar: bar(1, 99), closed: true })
  s.backfill({ bars: [bar(5), bar(6)], current: bar(7) })
  assert.deepEqual(shape(s), ['5:105', '6:106', '7:107*'])
})

test('live: the open bar is replaced in place, never appended twice', () => {
  const s = new ChartBars()
  s.backfill({ bars: [bar(0)], current: bar(1, 101) })
  assert.equal(s.apply({ bar: bar(1, 104), closed: false }), true)
  assert.equal(s.apply({ bar: bar(1, 98), closed: false }), true)
  assert.deepEqual(shape(s), ['0:100', '1:98*'])
})

test('live: a closed bar is final; a late update of it changes nothing', () => {
  const s = new ChartBars()
  s.backfill({ bars: [bar(0)], current: bar(1) })
  assert.equal(s.apply({ bar: bar(1, 110), closed: true }), true)
  assert.deepEqual(shape(s), ['0:100', '1:110'])
  assert.equal(s.apply({ bar: bar(1, 90), closed: false }), false)
  assert.equal(s.apply({ bar: bar(1, 90), closed: true }), false)
  assert.equal(s.apply({ bar: bar(0, 90), closed: false }), false, 'older than the held ones')
  assert.deepEqual(shape(s), ['0:100', '1:110'])
})

test('live: a new bar starts after the closed one; one whose close was lost is final anyway', () => {
  const s = new ChartBars()
  s.backfill({ bars: [], current: bar(0) })
  s.apply({ bar: bar(0, 100), closed: true })
  s.apply({ bar: bar(1, 101), closed: false })
  assert.deepEqual(shape(s), ['0:100', '1:101*'])
  // The closing frame of bar 1 never came: bar 2 makes it final.
  s.apply({ bar: bar(2, 102), closed: false })
  assert.deepEqual(shape(s), ['0:100', '1:101', '2:102*'])
  assert.equal(s.apply({ bar: bar(1, 0), closed: true }), false)
})

test('at most `max` bars, the newest', () => {
  const s = new ChartBars(3)
  s.backfill({ bars: [bar(0), bar(1), bar(2), bar(3)], current: bar(4) })
  assert.deepEqual(shape(s), ['2:102', '3:103', '4:104*'])
  s.apply({ bar: bar(5), closed: false })
  assert.deepEqual(shape(s), ['3:103', '4:104', '5:105*'])
})

test('malformed bars are skipped; out-of-order backfill entries are dropped', () => {
  const s = new ChartBars()
  s.backfill({ bars: [bar(1), { t: T0 }, bar(0), null, bar(2)], current: bar(2) })
  assert.deepEqual(shape(s), ['1:101', '2:102'], 'an open bar no newer than the last closed one is dropped')
  assert.equal(s.apply({ bar: { t: T0 + 3 * MIN, o: 1, h: 'x', l: 1, c: 1 } }), false)
  assert.equal(s.apply({}), false)
  s.clear()
  assert.deepEqual(shape(s), [])
})
