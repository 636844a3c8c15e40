// The chart's bars and geometry (public/candles.js) and the delayed marker's words
// (public/format.js formatDelay), without a DOM.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CHART_HEIGHT, CHART_WIDTH, chartBars, layoutCandles } from '../public/candles.js'
import { formatDelay } from '../public/format.js'

const bar = (/** @type {number} */ t, /** @type {number} */ o, /** @type {number} */ h, /** @type {number} */ l, /** @type {number} */ c, closed = true) => ({ t, o, h, l, c, v: 1, closed })

test('one candle per bar, left to right in time, inside the viewBox', () => {
  const bars = [bar(0, 10, 12, 9, 11), bar(1000, 11, 11.5, 8, 9), bar(2000, 9, 10, 9, 9, false)]
  const { candles, min, max } = layoutCandles(bars)
  assert.deepEqual(candles.map((c) => c.t), [0, 1000, 2000])
  assert.deepEqual(candles.map((c) => c.dir), ['up', 'down', 'flat'])
  assert.deepEqual(candles.map((c) => c.closed), [true, true, false])
  assert.equal(min, 8)
  assert.equal(max, 12)
  for (let i = 1; i < candles.length; i++) assert.ok(candles[i].x > candles[i - 1].x + candles[i - 1].width, 'no overlap, in order')
  for (const c of candles) {
    assert.ok(c.x >= 0 && c.x + c.width <= CHART_WIDTH)
    assert.ok(c.high >= 0 && c.low <= CHART_HEIGHT && c.high <= c.top + 0.5 && c.top + c.height <= c.low + 0.5, `wick spans the body: ${JSON.stringify(c)}`)
    assert.ok(c.height >= 1, 'a doji still shows')
  }
})

test('the price axis: the highest high at the top, the lowest low at the bottom', () => {
  const { candles } = layoutCandles([bar(0, 10, 20, 5, 15), bar(1, 15, 16, 14, 14)])
  const [a, b] = candles
  assert.ok(a.high < b.high, 'higher price, smaller y')
  assert.ok(a.low > b.low)
  // Up candle: body from close (top) to open (bottom).
  assert.ok(Math.abs((a.top + a.height) - a.low) > 1, 'the open is above the low')
})

test('a flat series is drawn through the middle; no bars, no candles', () => {
  const { candles } = layoutCandles([bar(0, 5, 5, 5, 5), bar(1, 5, 5, 5, 5)])
  assert.ok(candles.every((c) => c.high === CHART_HEIGHT / 2 && c.low === CHART_HEIGHT / 2))
  assert.deepEqual(layoutCandles([]).candles, [])
})

test('more bars than slots: the newest are shown', () => {
  const bars = Array.from({ length: 50 }, (_, i) => bar(i, 1, 2, 0.5, 1.5))
  const { candles } = layoutCandles(bars, 40)
  assert.equal(candles.length, 40)
  assert.equal(candles[0].t, 10)
  assert.equal(candles.at(-1)?.t, 49)
})

test('formatDelay: the gateway\'s delay in the words of the marker', () => {
  assert.equal(formatDelay(900_000), 'delayed 15 min')
  assert.equal(formatDelay(60_000), 'delayed 1 min')
  assert.equal(formatDelay(90_000), 'delayed 1.5 min')
  assert.equal(formatDelay(3_600_000), 'delayed 1 h')
  assert.equal(formatDelay(2000), 'delayed 2 s')
  assert.equal(formatDelay(NaN), 'delayed')
})

test('chartBars: the newest closed bars of a client series, then its open bar, at most max', () => {
  const p = (/** @type {number} */ t) => ({ t, o: 1, h: 2, l: 0, c: 1, v: 1, n: 1 })
  assert.deepEqual(chartBars(null), [])
  assert.deepEqual(chartBars({ bars: [], current: null }), [])
  const series = { bars: [p(0), p(1), p(2), p(3)], current: p(4) }
  assert.deepEqual(chartBars(series).map((b) => [b.t, b.closed]), [[0, true], [1, true], [2, true], [3, true], [4, false]])
  assert.deepEqual(chartBars(series, 3).map((b) => [b.t, b.closed]), [[2, true], [3, true], [4, false]])
  assert.deepEqual(chartBars({ ...series, current: null }, 3).map((b) => [b.t, b.closed]), [[1, true], [2, true], [3, true]])
  assert.equal(series.bars.length, 4, 'the series is only read')
})
