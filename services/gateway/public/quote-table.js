// The watchlist table: one row per symbol, in watchlist order. Quote events
// only record what changed; the DOM is written once per animation frame, so
// a burst of ticks costs one layout, and a hidden tab costs nothing.
// A row is selected by a click on it (or its symbol button: keyboard),
// carries a "delayed" badge while the gateway serves its symbol delayed, and
// is greyed with "stale since 14:03:07" while what it shows is not live.
// A stale row never flashes: a tick then is gap fill, not live trading.

import { changeOf, formatChange, formatPercent, formatPrice, formatStale, formatTime } from './format.js'
import { sparkPoints } from './sparkline.js'

/** Prices kept per symbol for the sparkline. */
const HISTORY = 60

/**
 * @typedef {import('./client/index.js').Quote} Quote
 * @typedef {import('./client/index.js').QuoteEvent} QuoteEvent
 *
 * @typedef {object} Row
 * @property {string} symbol
 * @property {HTMLTableRowElement} tr
 * @property {Record<'last' | 'change' | 'pct' | 'bid' | 'ask', HTMLElement>} cells
 * @property {HTMLTimeElement} time
 * @property {HTMLElement} badge the "delayed 15 min" marker
 * @property {HTMLElement} staleNote the "stale since 14:03:07" marker
 * @property {boolean} stale what the row shows is not live
 * @property {SVGPolylineElement} spark
 * @property {number[]} history
 * @property {Quote | null} quote
 * @property {'up' | 'down' | null} flash direction of a tick not drawn yet
 */

export class QuoteTable {
  /** @type {Map<string, Row>} */
  #rows = new Map()
  /** @type {Set<Row>} */
  #dirty = new Set()
  #frame = 0
  #tbody
  #template
  #onChange

  /**
   * @param {HTMLTableSectionElement} tbody
   * @param {HTMLTemplateElement} template one `<tr>` with the cells (see index.html)
   * @param {object} options
   * @param {(symbol: string) => void} options.onRemove the remove button of a row was pressed
   * @param {(symbol: string) => void} [options.onSelect] a row was clicked (anywhere but its remove button)
   * @param {(count: number) => void} [options.onChange] rows were added or removed
   */
  constructor (tbody, template, { onRemove, onSelect = () => {}, onChange = () => {} }) {
    this.#tbody = tbody
    this.#template = template
    this.#onChange = onChange
    tbody.addEventListener('click', (ev) => {
      const target = /** @type {Element} */ (ev.target)
      const tr = target.closest('tr')
      if (!tr?.dataset.symbol) return
      if (target.closest('button.remove')) onRemove(tr.dataset.symbol)
      else onSelect(tr.dataset.symbol)
    })
  }

  get size () { return this.#rows.size }

  /** @param {readonly string[]} symbols */
  addAll (symbols) {
    for (const s of symbols) this.add(s)
  }

  /**
   * Appends an empty row (filled when its first quote arrives).
   * @param {string} symbol
   */
  add (symbol) {
    if (this.#rows.has(symbol)) return
    const tr = /** @type {HTMLTableRowElement} */ (/** @type {DocumentFragment} */ (this.#template.content.cloneNode(true)).firstElementChild)
    tr.dataset.symbol = symbol
    const q = (/** @type {string} */ sel) => /** @type {HTMLElement} */ (tr.querySelector(sel))
    q('.pick').textContent = symbol
    q('.pick').title = symbol // long symbols are cut with an ellipsis
    q('.pick').setAttribute('aria-label', `Chart ${symbol}`)
    q('button.remove').setAttribute('aria-label', `Remove ${symbol}`)
    /** @type {Row} */
    const row = {
      symbol,
      tr,
      cells: { last: q('.last'), change: q('.change'), pct: q('.pct'), bid: q('.bid'), ask: q('.ask') },
      time: /** @type {HTMLTimeElement} */ (q('time')),
      badge: q('.delayed'),
      staleNote: q('.stale-since'),
      stale: false,
      spark: /** @type {SVGPolylineElement} */ (/** @type {unknown} */ (q('polyline'))),
      history: [],
      quote: null,
      flash: null
    }
    this.#rows.set(symbol, row)
    this.#tbody.append(tr)
    this.#onChange(this.#rows.size)
  }

  /** @param {string} symbol */
  remove (symbol) {
    const row = this.#rows.get(symbol)
    if (!row) return
    this.#rows.delete(symbol)
    this.#dirty.delete(row)
    row.tr.remove()
    this.#onChange(this.#rows.size)
  }

  /**
   * The remove button of the row after `symbol` (or before it, for the last
   * row): where keyboard focus goes when that row disappears.
   * @param {string} symbol
   * @returns {HTMLButtonElement | null}
   */
  neighbourButton (symbol) {
    const tr = this.#rows.get(symbol)?.tr
    const next = /** @type {HTMLElement | null} */ (tr?.nextElementSibling ?? tr?.previousElementSibling ?? null)
    return next?.querySelector('button.remove') ?? null
  }

  /**
   * Marks the row of `symbol` as the one charted (none: null).
   * @param {string | null} symbol
   */
  select (symbol) {
    for (const row of this.#rows.values()) {
      const on = row.symbol === symbol
      if (on) row.tr.dataset.selected = 'true'
      else delete row.tr.dataset.selected
      row.tr.querySelector('button.pick')?.setAttribute('aria-pressed', String(on))
    }
  }

  /**
   * Shows or hides the delayed badge of a row.
   * @param {string} symbol
   * @param {string | null} label e.g. "delayed 15 min"; null: real-time
   */
  setDelayed (symbol, label) {
    const row = this.#rows.get(symbol)
    if (!row) return
    row.badge.hidden = label === null
    setText(row.badge, label ?? '')
    row.tr.classList.toggle('is-delayed', label !== null)
  }

  /**
   * Greys a row as not live, or makes it live again.
   * @param {string} symbol
   * @param {number | null} since what it shows is from then or before (ms since the epoch); null: live
   */
  setStale (symbol, since) {
    const row = this.#rows.get(symbol)
    if (!row) return
    row.stale = since !== null
    row.staleNote.hidden = since === null
    setText(row.staleNote, since === null ? '' : formatStale(since))
    row.tr.classList.toggle('is-stale', row.stale)
    if (row.stale) row.flash = null
  }

  /** @param {QuoteEvent} ev */
  update ({ symbol, quote, previous, snapshot }) {
    const row = this.#rows.get(symbol)
    if (!row) return
    row.quote = quote
    if (typeof quote.last === 'number') {
      row.history.push(quote.last)
      if (row.history.length > HISTORY) row.history.shift()
    }
    // A snapshot is a resync, not a trade, and a stale row is not live: no flash.
    if (!snapshot && previous && !row.stale) row.flash = direction(previous, quote) ?? row.flash
    this.#dirty.add(row)
    if (!this.#frame) this.#frame = requestAnimationFrame(() => this.#render())
  }

  #render () {
    this.#frame = 0
    for (const row of this.#dirty) renderRow(row)
    this.#dirty.clear()
  }
}

/**
 * Up or down by last price, else by mid (a quote can move without a trade).
 * @param {Quote} a
 * @param {Quote} b
 * @returns {'up' | 'down' | null}
 */
function direction (a, b) {
  const d = (b.last - a.last) || ((b.bid + b.ask) - (a.bid + a.ask))
  return d > 0 ? 'up' : d < 0 ? 'down' : null
}

/**
 * @param {HTMLElement} el
 * @param {string} text
 */
function setText (el, text) {
  if (el.textContent !== text) el.textContent = text
}

/** @param {Row} row */
function renderRow (row) {
  const q = row.quote
  if (!q) return
  const { change, pct } = changeOf(q)
  const sign = change > 0 ? 'pos' : change < 0 ? 'neg' : 'zero'
  setText(row.cells.last, formatPrice(q.last))
  setText(row.cells.change, formatChange(change, q.last))
  setText(row.cells.pct, formatPercent(pct))
  setText(row.cells.bid, formatPrice(q.bid))
  setText(row.cells.ask, formatPrice(q.ask))
  row.cells.change.dataset.sign = sign
  row.cells.pct.dataset.sign = sign
  const when = new Date(q.ts)
  row.time.dateTime = when.toISOString()
  setText(row.time, formatTime(when.getTime()))
  row.spark.setAttribute('points', sparkPoints(row.history))
  row.spark.dataset.sign = sign
  if (row.flash) {
    // Switching between two identical keyframe names restarts the CSS
    // animation without forcing a reflow (see style.css).
    row.tr.dataset.tick = row.flash
    row.tr.dataset.flip = row.tr.dataset.flip === '0' ? '1' : '0'
    row.flash = null
  }
}
