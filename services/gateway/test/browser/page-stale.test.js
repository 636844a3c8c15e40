// The page in headless Chromium, served by the gateway's own HTTP routes,
// talking to a scripted fake gateway (via ?ws=) that sends the `stale` /
// `fresh` frames of docs/protocol.md and cuts the socket: a stale row is
// greyed with "stale since HH:MM:SS" (local time) and never flashes as live;
// it returns to normal on fresh, and on its snapshot after a reconnect.

// The callbacks of evaluate run inside the page.
/* global document, getComputedStyle */

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import Fastify from 'fastify'
import { sleep, waitFor } from '@wsps/testkit'
import { registerHttpRoutes } from '../../src/http-routes.js'
import { useBrowsers } from './chromium.js'
import { fakeGateway, hello } from './stack.js'

const PRICE = /^\d{1,3}(,\d{3})*\.\d{2,4}$/

// Before the servers' hooks, so the page closes before them.
const newPage = useBrowsers()

/** @type {import('fastify').FastifyInstance} */
let app
/** @type {Awaited<ReturnType<typeof fakeGateway>>} */
let gw
/** @type {string} */
let pageUrl
/** @type {import('ws').WebSocket[]} the fake gateway's side of each connection */
const sockets = []
/** Set by a test: the next connection's subs wait for it before their answer. */
/** @type {Promise<void> | null} */
let hold = null
/** @type {Map<string, number>} the seq of each symbol's last snapshot */
const seqOf = new Map()

/** @param {any} q */
const quote = (q) => ({ bid: 100, ask: 101, last: 100.5, bidSize: 1, askSize: 1, volume: 1, open: 100, high: 102, low: 99, prevClose: 100, ts: Date.now(), ...q })

/**
 * @param {import('ws').WebSocket} ws
 * @param {any} frame
 */
const send = (ws, frame) => ws.send(JSON.stringify(frame))

/** @param {number} ts local HH:MM:SS, as the page shows times (the browser and this process share the time zone) */
const hms = (ts) => { const d = new Date(ts); return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':') }

before(async () => {
  // The page exactly as the gateway serves it; no Redis needed for that.
  app = Fastify()
  await registerHttpRoutes(app, { broker: () => ({ alive: true, aliveForMs: 0 }), readiness: () => ({}), registry: null, staticDir: '' })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = /** @type {import('node:net').AddressInfo} */ (app.server.address())
  pageUrl = `http://127.0.0.1:${port}`
  gw = await fakeGateway((ws) => {
    sockets.push(ws)
    const held = hold
    ws.send(hello(`gw${sockets.length}`))
    ws.on('message', async (data) => {
      const m = JSON.parse(String(data))
      if (m.op === 'ping') return send(ws, { op: 'pong', id: m.id })
      if (m.op !== 'sub' && m.op !== 'unsub') return
      if (held) await held
      send(ws, { op: 'ack', id: m.id, symbols: m.op === 'sub' ? m.symbols : [] })
      if (m.op !== 'sub') return
      for (const s of m.symbols) seqOf.set(s, (seqOf.get(s) ?? 0) + 1000)
      send(ws, { op: 'snap', quotes: m.symbols.map((/** @type {string} */ s) => quote({ symbol: s, seq: seqOf.get(s) })) })
    })
  })
})
after(async () => {
  await gw?.close()
  await app?.close()
})

describe('stale rows on the page', { timeout: 60_000 }, () => {
  test('stale from the gateway: greyed with "stale since", no flash on its ticks, normal again on fresh; a lost connection greys every row until restored', async () => {
    const { page, errors } = await newPage()
    await page.goto(`${pageUrl}/?ws=${encodeURIComponent(gw.url)}`)
    await waitFor(async () => (await page.textContent('#conn-state')) === 'live', { message: 'live' })
    for (const s of ['AAPL', 'MSFT']) {
      await page.focus('#add-input')
      await page.keyboard.type(s)
      await page.keyboard.press('Enter')
    }
    const row = (/** @type {string} */ s) => page.locator(`#rows tr[data-symbol="${s}"]`)
    /** @param {string} s */
    const state = async (s) => ({
      stale: (await row(s).getAttribute('class'))?.split(' ').includes('is-stale') ?? false,
      note: await row(s).locator('.stale-since').isVisible() ? await row(s).locator('.stale-since').textContent() : null
    })
    /** @param {string} s @returns {Promise<number>} the opacity of its last price as drawn */
    const opacity = (s) => page.evaluate((sym) => Number(getComputedStyle(/** @type {Element} */ (document.querySelector(`#rows tr[data-symbol="${sym}"] .last`))).opacity), s)
    await waitFor(async () => PRICE.test((await row('MSFT').locator('.last').textContent()) ?? ''), { message: 'the MSFT snapshot shown' })
    assert.deepEqual(await state('AAPL'), { stale: false, note: null })
    assert.equal(await opacity('AAPL'), 1)
    const [one] = sockets

    // The gateway's feed of AAPL is interrupted since a minute ago.
    const since = Date.now() - 60_000
    send(one, { op: 'stale', symbols: ['AAPL'], since })
    await waitFor(async () => (await state('AAPL')).stale, { message: 'AAPL stale' })
    assert.deepEqual(await state('AAPL'), { stale: true, note: `stale since ${hms(since)}` })
    assert.ok(await opacity('AAPL') < 1, 'greyed')
    assert.deepEqual(await state('MSFT'), { stale: false, note: null }, 'MSFT stays live')
    assert.equal(await opacity('MSFT'), 1)

    // Ticks while stale (gap fill) update the figures but do not flash; MSFT's do.
    /** @param {string} symbol @param {number} last a delta continuing the snapshot */
    const tick = (symbol, last) => ({ symbol, seq: Number(seqOf.get(symbol)) + 1, ts: Date.now(), last })
    send(one, { op: 'q', quotes: [tick('AAPL', 120.25), tick('MSFT', 130.75)] })
    await waitFor(async () => (await row('MSFT').locator('.last').textContent()) === '130.75', { message: 'the MSFT tick shown' })
    assert.equal(await row('AAPL').locator('.last').textContent(), '120.25', 'the stale row shows what came')
    assert.equal(await row('MSFT').getAttribute('data-tick'), 'up', 'a live tick flashes')
    assert.equal(await row('AAPL').getAttribute('data-tick'), null, 'a stale row never flashes')
    assert.equal((await state('AAPL')).stale, true)

    send(one, { op: 'fresh', symbols: ['AAPL'] })
    await waitFor(async () => !(await state('AAPL')).stale, { message: 'AAPL fresh' })
    assert.deepEqual(await state('AAPL'), { stale: false, note: null })
    assert.equal(await opacity('AAPL'), 1)

    // The last frame, then the socket is cut well after it: every row is
    // stale from that last frame until the next connection restores it.
    let release = () => {}
    hold = new Promise((resolve) => { release = () => resolve() })
    const lastAt = Date.now()
    send(one, { op: 'pong' })
    await sleep(1500)
    one.terminate()
    await waitFor(async () => (await state('AAPL')).stale && (await state('MSFT')).stale, { message: 'both rows stale after the cut' })
    for (const s of ['AAPL', 'MSFT']) {
      const { note } = await state(s)
      assert.ok([hms(lastAt), hms(lastAt + 300)].includes(`${note?.replace('stale since ', '')}`), `${s}: ${note} is the last frame's time (${hms(lastAt)})`)
    }
    await waitFor(() => sockets.length === 2, { message: 'the page reconnected' })
    await sleep(200)
    assert.equal((await state('AAPL')).stale, true, 'still stale while the new connection has not answered')
    release()
    await waitFor(async () => !(await state('AAPL')).stale && !(await state('MSFT')).stale, { message: 'both rows live again' })
    assert.deepEqual(errors, [], 'no errors in the page')
  })
})
