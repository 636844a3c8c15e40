// The page: wires the watchlist, the table, the chart, the depth ladder
// and the status line to one WspsClient. Everything else lives in the small modules it imports.

import { CandleChart } from './candle-chart.js'
import { DepthLadder, LADDER_DEPTH } from './depth-ladder.js'
import { formatDelay } from './format.js'
import { LatencyMeter } from './latency.js'
import { QuoteTable } from './quote-table.js'
import { StatusBar } from './status-bar.js'
import { tokenProvider } from './token-provider.js'
import { Watchlist, parseSymbols } from './watchlist.js'
import { ErrorCode, WspsClient } from './client/index.js'
import { wsUrlsFromLocation } from './ws-urls.js'

/** @param {string} id */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id))

const form = byId('add-form')
const input = /** @type {HTMLInputElement} */ (byId('add-input'))
const errorBox = byId('add-error')
const empty = byId('empty')

/** localStorage may throw on access (disabled storage, sandboxed frames). */
function storage () {
  try {
    return globalThis.localStorage
  } catch {
    return null
  }
}

const watchlist = new Watchlist(storage())
const table = new QuoteTable(/** @type {HTMLTableSectionElement} */ (byId('rows')), /** @type {HTMLTemplateElement} */ (byId('row-template')), {
  onRemove: removeSymbol,
  onSelect: selectSymbol,
  onChange: (count) => { empty.hidden = count > 0 }
})
const status = new StatusBar({
  root: byId('conn'),
  state: byId('conn-state'),
  detail: byId('conn-detail'),
  node: byId('conn-node'),
  latency: byId('conn-latency'),
  transport: byId('conn-transport'),
  reconnect: /** @type {HTMLButtonElement} */ (byId('reconnect'))
})
const chart = new CandleChart({
  root: byId('chart'),
  symbol: byId('chart-symbol'),
  delayed: byId('chart-delayed'),
  intervals: byId('chart-intervals'),
  range: byId('chart-range'),
  svg: /** @type {SVGSVGElement} */ (/** @type {unknown} */ (byId('chart-svg'))),
  empty: byId('chart-empty')
}, { onInterval: (interval) => streamBars(chart.symbol, interval) })
/** Closed bars asked for on subscribe: about what the chart shows. */
const BACKFILL = 60
/** @type {{symbol: string, interval: string} | null} the bars subscribed, for the chart */
let barsOf = null
const ladder = new DepthLadder({
  root: byId('ladder'),
  symbol: byId('ladder-symbol'),
  rows: /** @type {HTMLTableSectionElement} */ (byId('ladder-rows')),
  state: byId('ladder-state')
})
const latency = new LatencyMeter()
const client = new WspsClient({ url: wsUrlsFromLocation(location), symbols: watchlist.symbols, getToken: tokenProvider(document, /** @type {{wspsGetToken?: unknown}} */ (globalThis)) })

table.addAll(watchlist.symbols)
empty.hidden = table.size > 0
selectSymbol(watchlist.symbols[0] ?? null)

form.addEventListener('submit', (ev) => {
  ev.preventDefault()
  const symbols = parseSymbols(input.value)
  if (symbols.length === 0) return
  clearError()
  const fresh = symbols.filter((s) => watchlist.add(s))
  table.addAll(fresh)
  input.value = ''
  if (fresh.length) client.subscribe(fresh)
  if (chart.symbol === null && fresh.length) selectSymbol(fresh[0])
})

input.addEventListener('input', () => {
  if (!errorBox.hidden && input.value === '') clearError()
})

/** @param {string} symbol */
function removeSymbol (symbol) {
  // Keep keyboard focus in the list instead of dropping it on <body>.
  const hadFocus = document.activeElement?.closest('tr')?.dataset.symbol === symbol
  const next = table.neighbourButton(symbol)
  watchlist.remove(symbol)
  table.remove(symbol)
  client.unsubscribe([symbol])
  if (chart.symbol === symbol) selectSymbol(watchlist.symbols[0] ?? null)
  if (hadFocus) (next ?? input).focus()
}

/**
 * Charts `symbol` (null: none): its row is marked, and the bars streamed
 * are its own, at the chart's interval.
 * @param {string | null} symbol
 */
function selectSymbol (symbol) {
  if (symbol === chart.symbol) return
  chart.show(symbol)
  table.select(symbol)
  chart.setDelayed(symbol !== null && client.isDelayed(symbol) ? formatDelay(client.delayMs ?? NaN) : null)
  streamBars(symbol, chart.interval)
  streamBook(symbol)
}

/**
 * Bars of the charted symbol only: the previous subscription ends first.
 * @param {string | null} symbol
 * @param {string} interval
 */
function streamBars (symbol, interval) {
  if (barsOf) client.unsubscribeBars([barsOf.symbol], barsOf.interval)
  barsOf = symbol === null ? null : { symbol, interval }
  if (barsOf) client.subscribeBars([barsOf.symbol], interval, { backfill: BACKFILL })
}

/**
 * The order book of the selected symbol only, at the ladder's depth: the
 * previous one ends first. A symbol without a book (or a gateway that
 * serves none) shows quotes only, and the ladder says so.
 * @param {string | null} symbol
 */
function streamBook (symbol) {
  const was = ladder.symbol
  if (was !== null) client.unsubscribeBook([was])
  ladder.show(symbol)
  if (symbol === null) return
  client.subscribeBook([symbol], LADDER_DEPTH).then(
    ({ noBook }) => { if (ladder.symbol === symbol && noBook.includes(symbol)) ladder.none() },
    (/** @type {Error & import('./client/index.js').ErrorInfo} */ err) => {
      // CANCELLED: another symbol was selected meanwhile; CLOSED: the page is going.
      if (ladder.symbol === symbol && err.code !== 'CANCELLED' && err.code !== 'CLOSED') ladder.none()
    })
}

/** @param {import('./client/index.js').ErrorInfo} error */
function showError (error) {
  const code = document.createElement('code')
  code.textContent = error.code
  const text = [error.symbols?.length ? error.symbols.join(', ') : '', error.message].filter(Boolean).join(': ')
  errorBox.replaceChildren(code, text ? ` ${text}` : '')
  errorBox.dataset.code = error.code
  errorBox.hidden = false
  input.setAttribute('aria-invalid', 'true')
}

function clearError () {
  errorBox.hidden = true
  errorBox.replaceChildren()
  delete errorBox.dataset.code
  input.removeAttribute('aria-invalid')
}

/** A symbol without a book, or a gateway without books: the ladder says so, the error box does not. */
const NOT_SHOWN = /** @type {string[]} */ ([ErrorCode.NO_BOOK, ErrorCode.BAD_BOOK])

client.on('status', (s) => {
  status.setStatus(s)
  if (s.state !== 'live') latency.clear()
})
client.on('quote', (ev) => {
  table.update(ev)
  // A snapshot may carry a quote minutes old, and a stale symbol's ticks are
  // gap fill: only live ticks measure the path.
  if (!ev.snapshot && !client.isStale(ev.symbol)) latency.add(ev.latencyMs)
})
// Rows not live (the gateway's feed of them, or the connection, was
// interrupted) are greyed with the time they were last known good.
client.on('stale', ({ symbols }) => { for (const s of symbols) table.setStale(s, client.staleSince(s)) })
client.on('fresh', ({ symbols }) => { for (const s of symbols) table.setStale(s, null) })
client.on('error', (error) => {
  // DRAINING is routine (a gateway restarting); the status line shows it.
  if (error.code === ErrorCode.DRAINING) return
  if (NOT_SHOWN.includes(error.code)) return
  showError(error)
})
client.on('rejected', ({ symbols, error, interval, book }) => {
  // A refused bar subscription (it names its interval) or book keeps the quotes.
  if (book && NOT_SHOWN.includes(error.code)) return
  if (interval !== undefined || book) {
    showError(error)
    return
  }
  for (const s of symbols) {
    watchlist.remove(s)
    table.remove(s)
  }
  if (chart.symbol !== null && symbols.includes(chart.symbol)) selectSymbol(watchlist.symbols[0] ?? null)
  showError(error)
})
client.on('bars', (ev) => chart.backfill(ev))
client.on('bar', (ev) => chart.update(ev))
client.on('book', (ev) => { if (ev.symbol === ladder.symbol) ladder.render(ev.book) })
// The acks say which symbols are delayed and by how much: the markers
// show it before the first (delayed) quote comes, in the gateway's words.
client.on('delayed', ({ symbols, delayMs }) => {
  const label = formatDelay(delayMs ?? NaN)
  for (const s of watchlist.symbols) table.setDelayed(s, symbols.includes(s) ? label : null)
  chart.setDelayed(chart.symbol !== null && symbols.includes(chart.symbol) ? label : null)
})

setInterval(() => status.setLatency(latency.median()), 500)
byId('reconnect').addEventListener('click', () => client.connect())
addEventListener('online', () => client.reconnectNow())
addEventListener('keydown', (ev) => {
  // "/" jumps to the input, as on many sites; not while typing somewhere.
  const target = /** @type {HTMLElement} */ (ev.target)
  if (ev.key === '/' && !ev.ctrlKey && !ev.metaKey && !ev.altKey && !target.closest('input, textarea, select, [contenteditable]')) {
    ev.preventDefault()
    input.focus()
  }
})

client.connect()
