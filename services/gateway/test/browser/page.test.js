// The page served by the gateway, in real headless Chromium, against a real
// stack of our own (redis, fetcher, two gateways on free ports). The page
// gets both gateways via ?ws= since there is no nginx here.

// The callbacks of addInitScript / evaluate / $$eval run inside the page.
/* global window, document, MutationObserver */

import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { ROOT, useStack, waitFor } from '@wsps/testkit'
import { launchChromium, wireFrame } from './chromium.js'

const ARTIFACTS = join(ROOT, 'artifacts')
const PRICE = /^\d{1,3}(,\d{3})*\.\d{2,4}$/

/** @type {Awaited<ReturnType<typeof launchChromium>> | undefined} */
let browser
// Registered before the stack's own hook, so the page closes before its gateways.
after(async () => { await browser?.close() })
const stack = useStack()
/** @type {import('playwright-core').Page} */
let page
/** @type {import('@wsps/testkit').ServiceHandle} */
let a
/** @type {import('@wsps/testkit').ServiceHandle} */
let b
/** Frames the page received, per socket URL, as the browser saw them. */
/** @type {{url: string, binary?: boolean, msg: any}[]} */
const frames = []
/** @type {string[]} */
const pageErrors = []

before(async () => {
  await stack.fetcher()
  a = await stack.gateway()
  b = await stack.gateway()
  browser = await launchChromium()
  const { context } = browser
  // Every state the status line shows and every flash, recorded as the DOM
  // changes: a reconnect may pass faster than any poll.
  await context.addInitScript(() => {
    const w = /** @type {any} */ (window)
    w.__status = []
    w.__ticks = []
    document.addEventListener('DOMContentLoaded', () => {
      const conn = /** @type {HTMLElement} */ (document.getElementById('conn'))
      const state = /** @type {HTMLElement} */ (document.getElementById('conn-state'))
      const detail = /** @type {HTMLElement} */ (document.getElementById('conn-detail'))
      let last = ''
      const log = () => {
        const now = `${state.textContent}|${detail.textContent}`
        if (now !== last) w.__status.push(last = now)
      }
      log()
      new MutationObserver(log).observe(conn, { subtree: true, childList: true, characterData: true })
      new MutationObserver((records) => {
        for (const r of records) {
          const tr = /** @type {HTMLElement} */ (r.target)
          if (r.attributeName === 'data-flip') w.__ticks.push(`${tr.dataset.symbol}:${tr.dataset.tick}`)
        }
      }).observe(/** @type {HTMLElement} */ (document.getElementById('rows')), { subtree: true, attributes: true, attributeFilter: ['data-flip'] })
    })
  })
  page = context.pages()[0] ?? await context.newPage()
  page.on('websocket', (ws) => {
    ws.on('framereceived', ({ payload }) => frames.push({ url: ws.url(), binary: typeof payload !== 'string', msg: wireFrame(payload, 'received') }))
  })
  page.on('pageerror', (err) => pageErrors.push(String(err)))
  page.on('console', (m) => {
    // A refused socket during failover is expected noise, not a page bug.
    if (m.type() === 'error' && !/WebSocket connection to/.test(m.text())) pageErrors.push(m.text())
  })
})

/** @returns {Promise<string[]>} symbols of the rows, in order */
const rowSymbols = () => page.$$eval('#rows tr', (trs) => trs.map((tr) => /** @type {HTMLElement} */ (tr).dataset.symbol ?? ''))

/**
 * @param {string} symbol
 * @param {string} cell class of the cell
 */
const cellText = (symbol, cell) => page.locator(`#rows tr[data-symbol="${symbol}"] .${cell}`).textContent()

/** @returns {Promise<string>} */
const statusText = async () => `${await page.textContent('#conn-state')}`

/**
 * Waits until the last price of `symbol` has shown `count` different values.
 * @param {string} symbol
 * @param {number} count
 */
async function distinctPrices (symbol, count) {
  const seen = new Set()
  await waitFor(async () => {
    const text = (await cellText(symbol, 'last'))?.trim() ?? ''
    if (PRICE.test(text)) seen.add(text)
    return seen.size >= count
  }, { timeout: 15_000, interval: 50, message: `${count} different prices of ${symbol} (saw ${[...seen]})` })
  return seen
}

/** @param {string} symbol */
async function addWithKeyboard (symbol) {
  await page.focus('#add-input')
  await page.keyboard.type(symbol)
  await page.keyboard.press('Enter')
}

/** @returns {Promise<string[] | null>} */
const stored = () => page.evaluate(() => JSON.parse(localStorage.getItem('wsps.watchlist.v1') ?? 'null'))

describe('the quote page in Chromium', { timeout: 80_000 }, () => {
  test('loads from the gateway, goes live and names the serving node', async () => {
    await page.goto(`${a.url}/?ws=${encodeURIComponent(`${a.wsUrl},${b.wsUrl}`)}`)
    await waitFor(async () => (await statusText()) === 'live', { message: 'status live' })
    assert.equal(await page.textContent('#conn-node'), a.name)
    assert.ok(frames.length > 0 && frames.every((f) => f.binary), 'the page\'s client chose Protobuf (wsps.v1.proto), and the gateway speaks it')
    assert.equal(await page.isVisible('#empty'), true, 'empty-list hint')
    assert.deepEqual(await rowSymbols(), [])
    const focused = await page.evaluate(() => document.activeElement?.id)
    assert.equal(focused, 'add-input', 'the input has focus: type right away')
  })

  test('add AAPL and MSFT with the keyboard: rows fill with numbers that keep changing', async () => {
    await addWithKeyboard('AAPL')
    await addWithKeyboard('msft') // typed in lower case: the page normalizes
    assert.deepEqual(await rowSymbols(), ['AAPL', 'MSFT'])
    assert.equal(await page.isVisible('#empty'), false)
    for (const s of ['AAPL', 'MSFT']) await distinctPrices(s, 3)
    for (const s of ['AAPL', 'MSFT']) {
      for (const cell of ['bid', 'ask']) assert.match(`${await cellText(s, cell)}`, PRICE, `${s} ${cell}`)
      assert.match(`${await cellText(s, 'change')}`, /^([+-]\d[\d,]*\.\d{2,4}|0\.00)$/, `${s} change`)
      assert.match(`${await cellText(s, 'pct')}`, /^([+-]\d+\.\d{2}|0\.00)%$/, `${s} % change`)
      assert.match(`${await cellText(s, 'time')}`, /^\d{2}:\d{2}:\d{2}$/, `${s} time`)
      const points = await page.getAttribute(`#rows tr[data-symbol="${s}"] polyline`, 'points')
      assert.ok((points ?? '').split(' ').length >= 3, `${s} sparkline has points: ${points}`)
    }
    // Ticks flashed by direction.
    await waitFor(() => page.evaluate(() => /** @type {any} */ (window).__ticks.some((/** @type {string} */ t) => /^AAPL:(up|down)$/.test(t))), { message: 'an AAPL flash' })
    const ticks = await page.evaluate(() => /** @type {string[]} */ (/** @type {any} */ (window).__ticks))
    assert.ok(ticks.every((t) => /^(AAPL|MSFT):(up|down)$/.test(t)), `flashes: ${ticks}`)
    await waitFor(async () => /^\d+ ms$/.test(`${await page.textContent('#conn-latency')}`), { message: 'a latency estimate' })
    assert.deepEqual(await stored(), ['AAPL', 'MSFT'])
  })

  test('remove MSFT with the keyboard: its row goes, its updates stop, focus stays in the list', async () => {
    await page.focus('#rows tr[data-symbol="MSFT"] button.remove')
    const from = frames.length
    await page.keyboard.press('Enter')
    assert.deepEqual(await rowSymbols(), ['AAPL'])
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Remove AAPL')
    assert.deepEqual(await stored(), ['AAPL'])
    // On the wire: after the gateway acknowledged the unsub, no MSFT quote.
    const ack = /** @type {typeof frames[number]} */ (await waitFor(() => frames.slice(from).find((f) => f.msg.op === 'ack' && !f.msg.symbols.includes('MSFT')), { message: 'the unsub ack' }))
    const ackAt = frames.indexOf(ack)
    const aaplFrames = () => frames.slice(ackAt).filter((f) => (f.msg.quotes ?? []).some((/** @type {any} */ q) => q.symbol === 'AAPL')).length
    await waitFor(() => aaplFrames() >= 5, { message: 'AAPL keeps ticking after the unsub' })
    const msft = frames.slice(ackAt).filter((f) => (f.msg.quotes ?? []).some((/** @type {any} */ q) => q.symbol === 'MSFT'))
    assert.deepEqual(msft, [], 'no MSFT quote after the unsub ack')
  })

  test('a bad symbol shows its error code next to the input and is not kept', async () => {
    assert.equal(await page.isVisible('#add-error'), false)
    await addWithKeyboard('BAD$')
    await waitFor(() => page.isVisible('#add-error'), { message: 'the inline error' })
    assert.match(`${await page.textContent('#add-error')}`, /^BAD_SYMBOL BAD\$/)
    assert.equal(await page.getAttribute('#add-error', 'data-code'), 'BAD_SYMBOL')
    assert.equal(await page.getAttribute('#add-input', 'aria-invalid'), 'true')
    await waitFor(async () => (await rowSymbols()).join() === 'AAPL', { message: 'the BAD$ row removed' })
    assert.deepEqual(await stored(), ['AAPL'])

    await addWithKeyboard('TSLA')
    assert.equal(await page.isVisible('#add-error'), false, 'a good add clears the error')
    await distinctPrices('TSLA', 2)
    assert.deepEqual(await stored(), ['AAPL', 'TSLA'])
  })

  test('a reload restores the watchlist in order from localStorage', async () => {
    await page.reload()
    assert.deepEqual(await rowSymbols(), ['AAPL', 'TSLA'])
    await waitFor(async () => (await statusText()) === 'live', { message: 'live after reload' })
    for (const s of ['AAPL', 'TSLA']) await distinctPrices(s, 2)
  })

  test('phone width: no sideways scrolling, figures still shown', async () => {
    await page.setViewportSize({ width: 360, height: 740 })
    try {
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
      assert.ok(overflow <= 0, `page is ${overflow}px wider than the screen`)
      for (const cell of ['last', 'change', 'pct', 'bid', 'ask', 'time']) {
        assert.equal(await page.isVisible(`#rows tr[data-symbol="AAPL"] .${cell}`), true, `${cell} visible`)
      }
      assert.equal(await page.isVisible('#conn-state'), true)
      mkdirSync(ARTIFACTS, { recursive: true })
      await page.screenshot({ path: join(ARTIFACTS, 'browser-phone.png') })
    } finally {
      await page.setViewportSize({ width: 1100, height: 700 })
    }
  })

  test('SIGTERM on the gateway that served the page: reconnecting, then live on the other with the same watchlist', async () => {
    await page.evaluate(() => { /** @type {any} */ (window).__status.length = 0 })
    await a.stop('SIGTERM')
    await waitFor(async () => (await statusText()) === 'live' && (await page.textContent('#conn-node')) === b.name, { timeout: 15_000, message: `live on ${b.name}` })
    const log = await page.evaluate(() => /** @type {string[]} */ (/** @type {any} */ (window).__status))
    assert.ok(log.some((s) => /^reconnecting\|in \d+\.\d s/.test(s)), `the status showed reconnecting with a countdown: ${JSON.stringify(log)}`)
    assert.equal(log.at(-1), 'live|')
    assert.deepEqual(await rowSymbols(), ['AAPL', 'TSLA'])
    assert.deepEqual(await stored(), ['AAPL', 'TSLA'])
    // Quotes now come over the socket to b, and the rows keep changing.
    for (const s of ['AAPL', 'TSLA']) {
      await waitFor(() => frames.some((f) => f.url === b.wsUrl && (f.msg.quotes ?? []).some((/** @type {any} */ q) => q.symbol === s)), { message: `${s} from ${b.name}` })
    }
    for (const s of ['AAPL', 'TSLA']) await distinctPrices(s, 3)
    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, 'browser-watchlist.png') })
    assert.deepEqual(pageErrors, [], 'no errors in the page')
  })
})
