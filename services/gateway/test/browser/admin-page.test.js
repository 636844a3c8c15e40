// The admin view (GET /admin/ beside /metrics) in headless Chromium against
// real processes: redis-server, a sim fetcher, a gateway with the admin API
// (and auth on) and one whose Redis link runs through a proxy that can go
// silent. The page shows the fleet, the most watched symbol, the cut-off
// gateway LATE while its link is silent and back once healed; a symbol
// stale while its channel cannot be restored (its gateway still writes its
// record) and gone from the list once it can; a user's connection, and a
// click on Disconnect closing it (4010); a wrong token is told.

// The callbacks of evaluate run inside the page.
/* global document */

import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import { SignJWT } from 'jose'
import { CloseCode } from '@wsps/protocol'
import { setUp, startGateway, startSilentProxy, useStack, waitFor } from '@wsps/testkit'
import { useBrowsers } from './chromium.js'

const ADMIN_TOKEN = 'admin-page-test-token-0123'
const INTERVAL_MS = 300
const SECRET = 'admin-page-test-secret-0123456789'

// Before the servers' hooks, so the pages close before them.
const newPage = useBrowsers()
const stack = useStack()
const on = setUp(async () => {
  await stack.start()
  const proxy = await startSilentProxy(stack.redis.port)
  await stack.fetcher({ WSPS_STATUS_INTERVAL_MS: INTERVAL_MS, WSPS_NODE_NAME: 'page-fetcher' })
  const admin = await stack.gateway({ WSPS_STATUS_INTERVAL_MS: INTERVAL_MS, WSPS_ADMIN_TOKEN: ADMIN_TOKEN, WSPS_NODE_NAME: 'page-gw-admin', WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET })
  // Long Redis timeouts: the silent link stays silent for the test instead of being rebuilt.
  const cut = await startGateway(proxy.url, { WSPS_STATUS_INTERVAL_MS: INTERVAL_MS, WSPS_NODE_NAME: 'page-gw-cut', WSPS_REDIS_PING_TIMEOUT_MS: 60_000, WSPS_REDIS_COMMAND_TIMEOUT_MS: 60_000 })
  return { proxy, admin, cut }
})
after(async () => {
  await on.cut?.kill()
  await on.proxy?.close()
})

/**
 * A client of the admin gateway, as `user`.
 *
 * @param {string} user
 */
async function userClient (user) {
  const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(user).setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))
  return stack.client(on.admin.wsUrl, { headers: { authorization: `Bearer ${token}` } })
}

/**
 * The page's tables and lists, as text.
 *
 * @param {import('playwright-core').Page} page
 */
const view = (page) => page.evaluate(() => {
  /** @param {string} id */
  const rows = (id) => Array.from(document.querySelectorAll(`#${id} tbody tr`), (tr) => ({ late: tr.className === 'late', cells: Array.from(tr.querySelectorAll('td:not(.action)'), (td) => td.textContent) }))
  /** @param {string} id */
  const items = (id) => Array.from(document.querySelectorAll(`#${id} li`), (li) => li.textContent)
  return { gateways: rows('gateways'), fetchers: rows('fetchers'), connections: rows('connections'), stale: items('stale'), watched: items('watched'), action: document.getElementById('action')?.textContent ?? '', error: document.getElementById('error')?.textContent ?? '' }
})

test('the fleet on the page: both gateways, the fetcher, the most watched symbol; a silent link shows its gateway LATE until healed', async () => {
  const client = await userClient('erin')
  await client.sub(['AAPL'])
  const { page, errors } = await newPage()
  await page.goto(`${on.admin.url}/admin/#token=${ADMIN_TOKEN}`)
  await waitFor(async () => {
    const v = await view(page)
    return v.gateways.length === 2 && v.fetchers.length === 1 && v.watched.includes('AAPL: 1 subscribers')
  }, { timeout: 15_000, message: 'the fleet on the page' })
  const v = await view(page)
  assert.deepEqual(v.gateways.map((r) => r.cells[0]), ['page-gw-admin', 'page-gw-cut'])
  assert.deepEqual(v.gateways.map((r) => r.late), [false, false])
  assert.equal(v.fetchers[0].cells[2], 'sim')
  assert.equal(await page.evaluate(() => document.location.hash), '', 'the token leaves the address bar')

  on.proxy.silence()
  try {
    await waitFor(async () => (await view(page)).gateways.find((r) => r.cells[0] === 'page-gw-cut')?.late === true, { timeout: 10_000, message: 'the cut-off gateway LATE' })
    const cut = /** @type {{late: boolean, cells: (string | null)[]}} */ ((await view(page)).gateways.find((r) => r.cells[0] === 'page-gw-cut'))
    assert.match(String(cut.cells.at(-1)), /^LATE \d+s ago$/)
    assert.equal((await view(page)).gateways[0].late, false, 'the other one is not')
  } finally {
    on.proxy.heal()
  }
  await waitFor(async () => (await view(page)).gateways.every((r) => !r.late), { timeout: 10_000, message: 'fresh again' })
  assert.deepEqual(errors, [])
  client.close()
})

test('a stale symbol on the page while its channel cannot be restored, and off the list once it is', async () => {
  const client = await userClient('grace')
  await client.sub(['NVDA'])
  const { page, errors } = await newPage()
  await page.goto(`${on.admin.url}/admin/#token=${ADMIN_TOKEN}`)
  await waitFor(async () => (await view(page)).stale.join() === 'none', { timeout: 10_000, message: 'nothing stale at first' })
  // The fault: the subscriber links are dropped and may not subscribe again
  // (an ACL gone wrong, a shard the gateway cannot reach); the command link,
  // which writes the status record, still works.
  const redis = await stack.redisClient()
  await redis.call('ACL', 'SETUSER', 'default', '-subscribe', '-ssubscribe')
  try {
    await redis.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
    await waitFor(async () => (await view(page)).stale.some((s) => s.startsWith('NVDA on page-gw-admin since ')), { timeout: 15_000, message: 'NVDA listed stale on page-gw-admin' })
    assert.ok(client.frames.some((f) => f.op === 'stale' && f.symbols.includes('NVDA')), 'its subscriber was told too')
    assert.equal((await view(page)).gateways.find((r) => r.cells[0] === 'page-gw-admin')?.late, false, 'its gateway is not late: it writes its record')
  } finally {
    await redis.call('ACL', 'SETUSER', 'default', '+subscribe', '+ssubscribe')
  }
  await waitFor(async () => !(await view(page)).stale.some((s) => s.startsWith('NVDA on page-gw-admin')), { timeout: 20_000, message: 'NVDA off the stale list' })
  await waitFor(() => client.frames.some((f) => f.op === 'fresh' && f.symbols.includes('NVDA')), { timeout: 5000, message: 'fresh told' })
  assert.deepEqual(errors, [])
  client.close()
})

test('a user\'s connection on the page, and a click on Disconnect closing it with 4010', async () => {
  const client = await userClient('frank')
  await client.sub(['MSFT'], { mode: 'distinct' })
  const { page, errors } = await newPage()
  await page.goto(`${on.admin.url}/admin/#token=${ADMIN_TOKEN}`)
  await page.fill('#user', 'frank')
  await page.click('#lookup button:not([type])')
  await waitFor(async () => (await view(page)).connections.length === 1, { timeout: 10_000, message: 'frank\'s connection listed' })
  const [row] = (await view(page)).connections
  assert.equal(row.cells[0], 'page-gw-admin')
  assert.equal(row.cells[2], 'pro', 'its user class: the token names none')
  assert.equal(row.cells[4], 'MSFT (distinct)')
  await page.click('#connections tbody tr .action button')
  assert.equal((await client.closedPromise).code, CloseCode.OPERATOR_DISCONNECT)
  await waitFor(async () => (await view(page)).connections.length === 0, { timeout: 10_000, message: 'the row gone once closed' })
  assert.match((await view(page)).action, /^connections of frank: 0/)
  assert.deepEqual(errors, [])
})

test('a wrong token: the page says UNAUTHORIZED and asks for the token', async () => {
  const { page } = await newPage()
  await page.goto(`${on.admin.url}/admin/#token=not-the-admin-token`)
  await waitFor(async () => (await view(page)).error.startsWith('UNAUTHORIZED'), { timeout: 10_000, message: 'UNAUTHORIZED on the page' })
  assert.equal(await page.evaluate(() => /** @type {HTMLFormElement} */ (document.getElementById('login')).hidden), false)
  const res = await fetch(`${on.cut.url}/admin/`)
  assert.equal(res.status, 404, 'a gateway without WSPS_ADMIN_TOKEN serves no admin view')
})
