// The page's chart and delayed markers in headless Chromium against a real
// stack: candles drawn from the gateway's live bars of the selected symbol
// (backfill, then the open bar and each closed one), bars streamed for that
// symbol only; and, with a token granting a symbol delayed only, the
// "delayed 15 min" badge on its row and the chart, in the gateway's words.

// The callbacks of $$eval run inside the page.

import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { ROOT, waitFor } from '@wsps/testkit'
import { useBrowsers, wireFrame } from './chromium.js'
import { PAGE_TOKEN_PATH, reachToken, useReachStack } from './stack.js'

const ARTIFACTS = join(ROOT, 'artifacts')
const INTERVAL_MS = { '1s': 1000, '1m': 60_000, '5m': 300_000 }

/** @typedef {{t: number, dir: string, closed: boolean, body: boolean, wick: boolean}} DrawnCandle */

// Before the stack's own hook, so the pages close before their gateways.
const openPage = useBrowsers()
const gw = useReachStack()

/** A fresh browser (own profile: no watchlist carried over), recording what the page sends and its errors. */
async function newPage () {
  const { page, errors } = await openPage()
  /** @type {any[]} */
  const sent = []
  /** @type {any[]} */
  const received = []
  page.on('websocket', (ws) => {
    ws.on('framesent', ({ payload }) => sent.push(wireFrame(payload, 'sent')))
    ws.on('framereceived', ({ payload }) => received.push(wireFrame(payload, 'received')))
  })
  return { page, errors, sent, received }
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

/**
 * The candles on the chart, as its DOM says.
 * @param {import('playwright-core').Page} page
 * @returns {Promise<DrawnCandle[]>}
 */
const candles = (page) => page.$$eval('#chart-svg g.candle', (gs) => gs.map((g) => ({
  t: Number(/** @type {SVGElement} */ (g).dataset.t),
  dir: /** @type {SVGElement} */ (g).dataset.dir ?? '',
  closed: /** @type {SVGElement} */ (g).dataset.closed === 'true',
  body: Number(g.querySelector('rect.body')?.getAttribute('height')) > 0,
  wick: g.querySelector('line.wick') !== null
})))

/**
 * Waits for at least `closed` closed candles and an open one (the last).
 * @param {import('playwright-core').Page} page
 * @param {number} closed
 */
async function liveCandles (page, closed) {
  /** @type {DrawnCandle[]} */
  let seen = []
  await waitFor(async () => {
    seen = await candles(page)
    return seen.filter((c) => c.closed).length >= closed && seen.at(-1)?.closed === false
  }, { timeout: 20_000, interval: 100, message: `${closed} closed candles and an open one (saw ${JSON.stringify(seen.slice(-4))})` })
  return seen
}

/**
 * @param {DrawnCandle[]} list
 * @param {keyof typeof INTERVAL_MS} interval
 */
function assertAligned (list, interval) {
  assert.ok(list.length > 0, 'candles drawn')
  for (const c of list) {
    assert.equal(c.t % INTERVAL_MS[interval], 0, `data-t ${c.t} on a ${interval} boundary`)
    assert.ok(['up', 'down', 'flat'].includes(c.dir), `direction ${c.dir}`)
    assert.ok(c.body && c.wick, 'a body and a wick')
  }
  for (let i = 1; i < list.length; i++) assert.ok(list[i].t > list[i - 1].t, `data-t increasing: ${list[i - 1].t} then ${list[i].t}`)
  assert.equal(list.filter((c) => !c.closed).length, 1, 'one open bar, the last')
}

describe('the chart and the delayed markers', { timeout: 90_000 }, () => {
  test('the chart draws candles of the selected symbol from live bars, and streams bars of that symbol only', async () => {
    const { page, errors, sent, received } = await newPage()
    await page.goto(`${gw.open.url}/`)
    assert.equal(await page.isVisible('#chart'), false, 'no chart while the watchlist is empty')
    await add(page, 'AAPL')
    await add(page, 'MSFT')
    // The first symbol added is charted, at the default interval (1 s).
    await waitFor(async () => (await page.textContent('#chart-symbol')) === 'AAPL', { message: 'AAPL charted' })
    assert.equal(await page.getAttribute('#rows tr[data-symbol="AAPL"]', 'data-selected'), 'true')
    assert.equal(await page.isChecked('#chart-intervals input[value="1s"]'), true)
    assertAligned(await liveCandles(page, 2), '1s')
    assert.equal(await page.isVisible('#chart-delayed'), false, 'real-time: no delayed badge')
    assert.match(`${await page.textContent('#chart-range')}`, /^\d[\d,.]* – \d[\d,.]*$/)
    // Drawn from the gateway's bar frames: a backfill, then live bars.
    assert.ok(received.some((m) => m.op === 'bars' && m.symbol === 'AAPL' && m.interval === '1s'), 'a backfill came')
    assert.ok(received.some((m) => m.op === 'bar' && m.symbol === 'AAPL' && m.closed === true), 'a bar closed')
    // A few more for the picture.
    await liveCandles(page, 6)
    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, 'browser-chart.png') })

    // A click on another row charts it: AAPL's bars stop, MSFT's start.
    await page.click('#rows tr[data-symbol="MSFT"] .last')
    await waitFor(async () => (await page.textContent('#chart-symbol')) === 'MSFT', { message: 'MSFT charted' })
    assert.equal(await page.getAttribute('#rows tr[data-symbol="AAPL"]', 'data-selected'), null)
    assertAligned(await liveCandles(page, 1), '1s')
    const barRequests = () => sent.filter((m) => m.bars !== undefined).map((m) => `${m.op} ${m.symbols.join(',')} ${m.bars}`)
    assert.deepEqual(barRequests(), ['sub AAPL 1s', 'unsub AAPL 1s', 'sub MSFT 1s'])

    // Another interval: the 1 s bars stop, the 1 min ones come with their backfill.
    await page.click('#chart-intervals label:has(input[value="1m"])')
    await waitFor(() => barRequests().length === 5, { message: 'the interval switch on the wire' })
    assert.deepEqual(barRequests().slice(3), ['unsub MSFT 1s', 'sub MSFT 1m'])
    await waitFor(async () => (await candles(page)).length > 0, { timeout: 20_000, message: 'a 1 min candle' })
    const minute = await candles(page)
    for (const c of minute) assert.equal(c.t % INTERVAL_MS['1m'], 0, `data-t ${c.t} on a minute`)
    // Removing the charted symbol charts the next one.
    await page.click('#rows tr[data-symbol="MSFT"] button.remove')
    await waitFor(async () => (await page.textContent('#chart-symbol')) === 'AAPL', { message: 'AAPL charted again' })
    assert.deepEqual(errors, [])
  })

  test('a token granting AAPL delayed only: "delayed 15 min" on its row and its chart, none on real-time MSFT', async () => {
    const { page, errors, received } = await newPage()
    await page.route(`**${PAGE_TOKEN_PATH}`, async (route) => {
      const exp = Math.floor(Date.now() / 1000) + 600
      await route.fulfill({ status: 200, contentType: 'text/plain', headers: { 'Cache-Control': 'no-store' }, body: await reachToken({ sub: 'delayed-reader', symbols: ['MSFT'], delayedSymbols: ['AAPL'] }, exp) })
    })
    await page.goto(`${gw.authed.url}/`)
    await add(page, 'MSFT')
    await add(page, 'AAPL')
    const badge = page.locator('#rows tr[data-symbol="AAPL"] .delayed')
    await badge.waitFor({ state: 'visible', timeout: 15_000 })
    // The words come from the gateway's ack (its WSPS_DELAY_MS, 15 min by default), not the page.
    const ack = received.find((m) => m.op === 'ack' && m.delayed?.includes('AAPL'))
    assert.equal(ack?.delayMs, 900_000)
    assert.equal(await badge.textContent(), 'delayed 15 min')
    assert.equal(await page.isVisible('#rows tr[data-symbol="MSFT"] .delayed'), false)
    // MSFT was added first, so it is charted: no badge; AAPL's chart has one.
    await waitFor(async () => (await page.textContent('#chart-symbol')) === 'MSFT', { message: 'MSFT charted' })
    assert.equal(await page.isVisible('#chart-delayed'), false)
    await page.click('#rows tr[data-symbol="AAPL"] .pick')
    await waitFor(async () => (await page.textContent('#chart-symbol')) === 'AAPL', { message: 'AAPL charted' })
    assert.equal(await page.isVisible('#chart-delayed'), true)
    assert.equal(await page.textContent('#chart-delayed'), 'delayed 15 min')
    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, 'browser-delayed.png') })
    assert.deepEqual(errors, [])
  })
})
