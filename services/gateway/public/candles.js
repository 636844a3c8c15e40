// Candlestick geometry: where each bar's body and wick go in the chart's
// viewBox. Pure numbers, no DOM (like sparkline.js), so the layout is tested
// in Node and candle-chart.js only writes attributes.

export const CHART_WIDTH = 600
export const CHART_HEIGHT = 200
/** Bars shown at most: what a chart of a few hundred pixels can show. */
export const MAX_BARS = 120
/** Room above and below the highest high and lowest low. */
const PAD_Y = 8
/** Fraction of a slot the body fills; the rest is the gap between candles. */
const BODY = 0.7
/** A doji (open = close) still shows a line. */
const MIN_BODY = 1

/**
 * @typedef {object} Candle
 * @property {number} t bar start, ms
 * @property {'up' | 'down' | 'flat'} dir close above, below or at open
 * @property {boolean} closed final (the open bar is the last and may change)
 * @property {number} x left edge of the body
 * @property {number} width of the body
 * @property {number} cx centre: where the wick is
 * @property {number} top of the body
 * @property {number} height of the body
 * @property {number} high y of the high (the wick's top)
 * @property {number} low y of the low (the wick's bottom)
 */

/**
 * @typedef {{t: number, o: number, h: number, l: number, c: number}} Prices a bar's prices
 */

/**
 * The bars to chart of a series the client holds (its BarSeries, from the
 * `bars` and `bar` events): the newest closed ones, then the open one,
 * at most `max`. The client owns the series; this only reads it.
 *
 * @param {{bars: readonly Prices[], current: Prices | null} | null} series
 * @param {number} [max]
 * @returns {(Prices & {closed: boolean})[]} oldest first
 */
export function chartBars (series, max = MAX_BARS) {
  if (series === null) return []
  const open = series.current === null ? [] : [{ ...series.current, closed: false }]
  const closed = series.bars.slice(-(max - open.length)).map((b) => ({ ...b, closed: true }))
  return [...closed, ...open].slice(-max)
}

/**
 * Lays out bars in `slots` equal slots from the left; with fewer bars than
 * slots the chart fills from the left, so a candle keeps its width while
 * the series grows. The price axis spans the lows and highs shown.
 *
 * @param {readonly {t: number, o: number, h: number, l: number, c: number, closed?: boolean}[]} bars oldest first (a bar's prices; closed: false for the open one)
 * @param {number} [slots] candles the width holds (default: the bars, at least 30)
 * @returns {{candles: Candle[], min: number, max: number}}
 */
export function layoutCandles (bars, slots = Math.max(30, bars.length)) {
  if (bars.length === 0) return { candles: [], min: NaN, max: NaN }
  const shown = bars.slice(-slots)
  let min = Infinity
  let max = -Infinity
  for (const b of shown) {
    if (b.l < min) min = b.l
    if (b.h > max) max = b.h
  }
  const span = max - min
  const h = CHART_HEIGHT - 2 * PAD_Y
  /** @param {number} price */
  const y = (price) => span === 0 ? CHART_HEIGHT / 2 : PAD_Y + h - ((price - min) / span) * h
  const slot = CHART_WIDTH / slots
  const width = Math.max(1, slot * BODY)
  const candles = shown.map((b, i) => {
    const cx = slot * i + slot / 2
    const top = y(Math.max(b.o, b.c))
    const bottom = y(Math.min(b.o, b.c))
    // A doji's line is centred on its price, half a pixel past it either side.
    const height = Math.max(MIN_BODY, bottom - top)
    const bodyTop = (top + bottom) / 2 - height / 2
    return {
      t: b.t,
      dir: /** @type {Candle['dir']} */ (b.c > b.o ? 'up' : b.c < b.o ? 'down' : 'flat'),
      closed: b.closed !== false,
      x: round(cx - width / 2),
      width: round(width),
      cx: round(cx),
      top: round(bodyTop),
      height: round(height),
      high: round(y(b.h)),
      low: round(y(b.l))
    }
  })
  return { candles, min, max }
}

/** @param {number} n */
const round = (n) => Math.round(n * 10) / 10
