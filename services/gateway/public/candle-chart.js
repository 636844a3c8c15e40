// The chart of the selected symbol: a candlestick per bar of its live bar
// stream, an interval picker and a "delayed" badge. It draws the series the
// client holds (WspsClient.bars(), handed over by the `bars` and `bar`
// events) once per animation frame, like the table; which bars to stream
// is app.js's business (it asks on `onInterval`).
//
// The SVG has one <g class="candle"> per bar, with data-t (bar start, ms),
// data-dir (up/down/flat) and data-closed, holding a wick <line> (high to
// low) and a body <rect> (open to close): the DOM is the data, so tests
// and assistive tech read it without parsing pixels.

import { CHART_HEIGHT, CHART_WIDTH, chartBars, layoutCandles } from './candles.js'
import { formatPrice, formatTime } from './format.js'
import { BAR_INTERVALS } from './client/index.js'

const SVG = 'http://www.w3.org/2000/svg'

/** The intervals the gateway streams, and the one shown first (bars appear within seconds). */
export const INTERVALS = Object.freeze(Object.keys(BAR_INTERVALS))
export const DEFAULT_INTERVAL = '1s'

/**
 * @typedef {object} ChartElements
 * @property {HTMLElement} root hidden while no symbol is selected
 * @property {HTMLElement} symbol the title's symbol
 * @property {HTMLElement} delayed the badge; hidden for real-time symbols
 * @property {HTMLElement} intervals radio inputs named `interval`, values INTERVALS
 * @property {HTMLElement} range low-high of the bars shown
 * @property {SVGSVGElement} svg
 * @property {HTMLElement} empty shown until the first bar
 */

export class CandleChart {
  #els
  /** @type {import('./client/index.js').BarSeries | null} the client's series shown (updated in place by the client) */
  #series = null
  /** @type {string | null} */
  #symbol = null
  #interval = DEFAULT_INTERVAL
  #frame = 0
  #g

  /**
   * @param {ChartElements} els
   * @param {object} options
   * @param {(interval: string) => void} options.onInterval the user picked another interval
   */
  constructor (els, { onInterval }) {
    this.#els = els
    els.svg.setAttribute('viewBox', `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`)
    this.#g = document.createElementNS(SVG, 'g')
    this.#g.classList.add('candles')
    els.svg.replaceChildren(this.#g)
    els.intervals.querySelectorAll('input').forEach((input) => { input.checked = input.value === this.#interval })
    els.intervals.addEventListener('change', (ev) => {
      const input = /** @type {HTMLInputElement} */ (ev.target)
      if (input.name !== 'interval' || !INTERVALS.includes(input.value) || input.value === this.#interval) return
      this.#interval = input.value
      this.#series = null
      this.#redraw()
      onInterval(input.value)
    })
  }

  /** @returns {string | null} the symbol shown */
  get symbol () { return this.#symbol }
  /** @returns {string} the interval shown */
  get interval () { return this.#interval }

  /**
   * Shows `symbol` (null: none) with no bars until its backfill comes.
   * @param {string | null} symbol
   */
  show (symbol) {
    this.#symbol = symbol
    this.#series = null
    this.#els.root.hidden = symbol === null
    this.#els.symbol.textContent = symbol ?? ''
    this.#els.root.dataset.symbol = symbol ?? ''
    this.#redraw()
  }

  /**
   * The badge of a symbol served delayed: its text comes from the gateway
   * (e.g. "delayed 15 min"); null hides it.
   * @param {string | null} label
   */
  setDelayed (label) {
    this.#els.delayed.hidden = label === null
    this.#els.delayed.textContent = label ?? ''
  }

  /** @param {import('./client/index.js').BarsEvent} ev */
  backfill (ev) {
    if (!this.#mine(ev)) return
    this.#series = ev.series
    this.#schedule()
  }

  /** @param {import('./client/index.js').BarEvent} ev */
  update (ev) {
    if (!this.#mine(ev)) return
    this.#series = ev.series
    this.#schedule()
  }

  /** @param {{symbol: string, interval: string}} ev */
  #mine ({ symbol, interval }) {
    return symbol === this.#symbol && interval === this.#interval
  }

  #schedule () {
    if (!this.#frame) this.#frame = requestAnimationFrame(() => this.#render())
  }

  /**
   * Draws now: after another symbol or interval, no candle of the old one
   * may stay on screen (or in the DOM tests read) for a frame.
   */
  #redraw () {
    cancelAnimationFrame(this.#frame)
    this.#render()
  }

  #render () {
    this.#frame = 0
    const bars = chartBars(this.#series)
    const { candles, min, max } = layoutCandles(bars)
    this.#els.empty.hidden = candles.length > 0
    this.#els.range.textContent = candles.length ? `${formatPrice(min)} – ${formatPrice(max)}` : ''
    // Few dozen nodes: rebuilt whole, which keeps the order and the count
    // exactly the series' without bookkeeping.
    this.#g.replaceChildren(...candles.map((c, i) => candleNode(c, bars[bars.length - candles.length + i])))
  }
}

/**
 * @param {import('./candles.js').Candle} c
 * @param {import('./candles.js').Prices} bar
 */
function candleNode (c, bar) {
  const g = document.createElementNS(SVG, 'g')
  g.classList.add('candle')
  g.dataset.t = String(c.t)
  g.dataset.dir = c.dir
  g.dataset.closed = String(c.closed)
  const title = document.createElementNS(SVG, 'title')
  title.textContent = `${formatTime(bar.t)} O ${formatPrice(bar.o)} H ${formatPrice(bar.h)} L ${formatPrice(bar.l)} C ${formatPrice(bar.c)}`
  const wick = document.createElementNS(SVG, 'line')
  wick.classList.add('wick')
  set(wick, { x1: c.cx, x2: c.cx, y1: c.high, y2: c.low })
  const body = document.createElementNS(SVG, 'rect')
  body.classList.add('body')
  set(body, { x: c.x, y: c.top, width: c.width, height: c.height })
  g.append(title, wick, body)
  return g
}

/**
 * @param {Element} el
 * @param {Record<string, number>} attrs
 */
function set (el, attrs) {
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
}
