// The page's depth ladder in headless Chromium against a gateway in this
// process serving an order book (stack.js bookGateway): the selected row's
// book at depth 10, exactly the venue's after many updates; a symbol
// without a book says so; selecting another row ends the book before.

// The callbacks of $$eval run inside the page.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { waitFor } from '@wsps/testkit'
import { useBrowsers, wireFrame } from './chromium.js'
import { bookGateway, scripted } from './stack.js'

const S = 'BTC-USD'
// Before the gateways: the pages close first.
const openPage = useBrowsers()
const { atEnd } = scripted()

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
 * The ladder as drawn: asks (best at the bottom), then bids (best first).
 * @param {import('playwright-core').Page} page
 */
const ladder = (page) => page.$$eval('#ladder-rows tr', (trs) => trs.map((tr) => [
  /** @type {HTMLElement} */ (tr).className,
  tr.querySelector('.price')?.textContent ?? '',
  tr.querySelector('.size')?.textContent ?? ''
]))

describe('the depth ladder', { timeout: 60_000 }, () => {
  test('the selected row\'s book, updated live; a symbol without a book; selecting another row ends the book before', async () => {
    const gw = await bookGateway()
    atEnd(() => gw.close())
    const v = gw.venue(S, { seed: 9 })
    v.snapshot(30, { dark: true })
    const { page, errors } = await openPage()
    /** @type {any[]} */
    const sent = []
    page.on('websocket', (ws) => ws.on('framesent', ({ payload }) => sent.push(wireFrame(payload, 'sent'))))
    await page.goto(gw.httpUrl)
    assert.equal(await page.isVisible('#ladder'), false, 'no ladder while nothing is selected')
    await add(page, S)
    await waitFor(async () => (await page.textContent('#ladder-symbol')) === S && (await ladder(page)).length === 20, { message: 'the ladder of BTC-USD' })

    for (let i = 0; i < 200; i++) v.update()
    const top = v.ref.top(10)
    const want = [...top.asks.slice().reverse().map(([p, s]) => ['ask', p, s]), ...top.bids.map(([p, s]) => ['bid', p, s])]
    /** @type {string[][]} */
    let drawn = []
    await waitFor(async () => JSON.stringify(drawn = await ladder(page)) === JSON.stringify(want), { message: `the venue's top 10 (drawn ${JSON.stringify(drawn.slice(0, 3))})` })
    assert.equal(await page.isVisible('#ladder-state'), false)

    // A symbol without a book: quotes only, the ladder says so, no error shown.
    await add(page, 'NOPE-USD')
    await page.click('#rows tr[data-symbol="NOPE-USD"] .last')
    await waitFor(async () => (await page.textContent('#ladder-state')) === 'No order book for this symbol.', { message: 'no book' })
    assert.equal((await ladder(page)).length, 0)
    // (This gateway serves no bars: the chart's BAD_BARS may be shown, NO_BOOK not.)
    assert.doesNotMatch(`${await page.textContent('#add-error')}`, /NO_BOOK/, 'NO_BOOK is not an error to show')
    const books = sent.filter((m) => m.book !== undefined).map((m) => `${m.op} ${m.symbols} ${m.book}`)
    assert.deepEqual(books, [`sub ${S} 10`, `unsub ${S} 10`, 'sub NOPE-USD 10'], 'the book of the row before ends first')

    await page.click(`#rows tr[data-symbol="${S}"] .last`)
    await waitFor(async () => (await ladder(page)).length === 20, { message: 'the book again' })
    assert.deepEqual(errors, [])
  })
})
