// The page in headless Chromium where WebSocket does not reach, and where
// the gateway wants a token: with window.WebSocket removed it streams
// quotes and the chart's bars over SSE and says so; with auth on, a token provider brings it live and a
// refresh keeps it live past the first token's expiry.

// The callbacks of addInitScript / evaluate run inside the page.
/* global window */

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { waitFor } from '@wsps/testkit'
import { useBrowsers, wireFrame } from './chromium.js'
import { PAGE_TOKEN_PATH, reachToken, useReachStack } from './stack.js'

const PRICE = /^\d{1,3}(,\d{3})*\.\d{2,4}$/
/** Lifetime of each token the page gets: short, so the test sees a refresh. */
const TOKEN_SECONDS = 4

// Before the stack's own hook, so the pages close before their gateways.
const newPage = useBrowsers()
const gw = useReachStack()

/**
 * @param {import('playwright-core').Page} page
 * @param {string} symbol
 * @param {number} count distinct last prices to see
 */
async function distinctPrices (page, symbol, count) {
  const seen = new Set()
  await waitFor(async () => {
    const text = (await page.locator(`#rows tr[data-symbol="${symbol}"] .last`).textContent())?.trim() ?? ''
    if (PRICE.test(text)) seen.add(text)
    return seen.size >= count
  }, { timeout: 20_000, interval: 50, message: `${count} different prices of ${symbol} (saw ${[...seen]})` })
}

/**
 * @param {import('playwright-core').Page} page
 * @param {string} symbol
 */
async function add (page, symbol) {
  await page.focus('#add-input')
  await page.keyboard.type(symbol)
  await page.keyboard.press('Enter')
}

describe('the page where WebSocket does not reach, and with auth on', { timeout: 90_000 }, () => {
  test('with window.WebSocket removed, the page streams over SSE and shows it', async () => {
    const { browser, page, errors } = await newPage()
    await browser.context.addInitScript(() => {
      // As in a runtime without WebSocket (or where a proxy strips upgrades and the page is told so).
      delete (/** @type {any} */ (window)).WebSocket
    })
    /** @type {string[]} */
    const sockets = []
    page.on('websocket', (ws) => sockets.push(ws.url()))
    await page.goto(`${gw.open.url}/`)
    assert.equal(await page.evaluate(() => typeof (/** @type {any} */ (window)).WebSocket), 'undefined')
    await add(page, 'AAPL')
    await add(page, 'MSFT')
    await distinctPrices(page, 'AAPL', 3)
    await distinctPrices(page, 'MSFT', 2)
    assert.equal(await page.textContent('#conn-state'), 'live')
    assert.equal(await page.textContent('#conn-transport'), 'sse')
    assert.deepEqual(sockets, [], 'no WebSocket was opened')
    // The chart's bars come on the same stream.
    await waitFor(async () => (await page.$$('#chart-svg g.candle')).length >= 2, { timeout: 20_000, message: 'candles over SSE' })
    // Removing a symbol reopens the stream without it; the other keeps ticking.
    await page.click('#rows tr[data-symbol="MSFT"] .remove')
    await distinctPrices(page, 'AAPL', 5)
    assert.deepEqual(errors, [])
  })

  test('an SSE stream cut by a network change while a symbol is added still brings every symbol', async () => {
    const { browser, page, errors } = await newPage()
    await browser.context.addInitScript(() => {
      delete (/** @type {any} */ (window)).WebSocket
    })
    // What Chromium does when network interfaces appear (a local cluster
    // coming up): in-flight requests fail (net::ERR_NETWORK_CHANGED). The
    // first stream for AAPL fails that way; its retry is held until MSFT has
    // been added, so it was asked for without MSFT and goes live after the
    // watch set grew.
    /** @type {string[]} */
    const streams = []
    /** @type {() => void} */
    let release = () => {}
    const released = new Promise((resolve) => { release = () => resolve(undefined) })
    await page.route('**/sse?*', async (route) => {
      const symbols = new URL(route.request().url()).searchParams.get('symbols') ?? ''
      streams.push(symbols)
      const aaplOnly = streams.filter((s) => s === 'AAPL').length
      if (symbols === 'AAPL' && aaplOnly === 1) return route.abort('internetdisconnected')
      if (symbols === 'AAPL' && aaplOnly === 2) await released
      return route.continue()
    })
    await page.goto(`${gw.open.url}/`)
    await add(page, 'AAPL')
    await waitFor(() => streams.filter((s) => s === 'AAPL').length === 2, { timeout: 20_000, interval: 50, message: `the retry of the AAPL stream (streams: ${streams.join(' | ')})` })
    await add(page, 'MSFT')
    await page.locator('#rows tr[data-symbol="MSFT"]').waitFor()
    release()
    await distinctPrices(page, 'AAPL', 2)
    await distinctPrices(page, 'MSFT', 2)
    assert.equal(await page.textContent('#conn-transport'), 'sse')
    assert.deepEqual(errors, [])
  })

  test('with auth on and WSPS_PAGE_TOKEN_URL, the page fetches its tokens from that same-origin path, and again before they expire', async () => {
    const { page, errors } = await newPage()
    /** @type {number[]} */
    const fetched = []
    await page.route(`**${PAGE_TOKEN_PATH}`, async (route) => {
      const exp = Math.floor(Date.now() / 1000) + TOKEN_SECONDS
      fetched.push(exp * 1000)
      await route.fulfill({ status: 200, contentType: 'text/plain', headers: { 'Cache-Control': 'no-store' }, body: await reachToken({ sub: 'page-meta' }, exp) })
    })
    await page.goto(`${gw.authed.url}/`)
    assert.equal(await page.getAttribute('meta[name="wsps-token-url"]', 'content'), PAGE_TOKEN_PATH)
    await add(page, 'MSFT')
    await distinctPrices(page, 'MSFT', 2)
    assert.equal(await page.textContent('#conn-state'), 'live')
    const first = fetched[0]
    assert.ok(first, 'the page fetched a token from the meta tag\'s path')
    await waitFor(() => Date.now() > first + 1500, { timeout: 20_000, interval: 200, message: 'past the first token\'s exp' })
    await distinctPrices(page, 'MSFT', 3)
    assert.equal(await page.textContent('#conn-state'), 'live')
    assert.ok(fetched.length >= 2, `fetched again to refresh (${fetched.length} fetches)`)
    assert.deepEqual(errors, [])
  })

  test('with auth on, a token provider brings the page live and a refresh keeps it live past the first token\'s expiry', async () => {
    const { browser, page, errors } = await newPage()
    /** @type {number[]} */
    const expiries = []
    await browser.context.exposeFunction('mintToken', async () => {
      const exp = Math.floor(Date.now() / 1000) + TOKEN_SECONDS
      expiries.push(exp * 1000)
      return reachToken({ sub: 'page' }, exp)
    })
    await browser.context.addInitScript(() => {
      const w = /** @type {any} */ (window)
      w.wspsGetToken = () => w.mintToken()
      // Every state the status line shows, recorded as it changes.
      w.__states = []
      w.addEventListener('DOMContentLoaded', () => {
        const state = /** @type {HTMLElement} */ (w.document.getElementById('conn-state'))
        new w.MutationObserver(() => w.__states.push(state.textContent)).observe(state, { childList: true, characterData: true, subtree: true })
      })
    })
    /** @type {any[]} */
    const sent = []
    page.on('websocket', (ws) => ws.on('framesent', ({ payload }) => sent.push({ url: ws.url(), msg: wireFrame(payload, 'sent') })))
    await page.goto(`${gw.authed.url}/`)
    await add(page, 'AAPL')
    await distinctPrices(page, 'AAPL', 2)
    assert.equal(await page.textContent('#conn-state'), 'live')
    assert.equal(await page.textContent('#conn-transport'), 'websocket')
    const firstExpiry = expiries[0]
    await waitFor(() => Date.now() > firstExpiry + 1500, { timeout: 20_000, interval: 200, message: 'past the first token\'s exp' })
    await distinctPrices(page, 'AAPL', 3)
    assert.equal(await page.textContent('#conn-state'), 'live')
    const auths = sent.filter((f) => f.msg.op === 'auth')
    assert.ok(auths.length >= 2, `the token was refreshed in-band (${auths.length} auth frames)`)
    assert.equal(new Set(auths.map((f) => f.url)).size, 1, 'on the same socket')
    assert.deepEqual(await page.evaluate(() => (/** @type {any} */ (window)).__states.filter((/** @type {string} */ s) => s !== 'live')), [], 'the page never left live')
    assert.deepEqual(errors, [])
  })
})
