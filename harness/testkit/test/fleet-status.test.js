// The fleet view on real processes: redis-server, a sim fetcher, a gateway
// with the admin API and a second one whose Redis link runs through a proxy
// that can go silent. `wsps top --json` (the real command) reads the fleet
// from the first gateway: every process, its clients, the symbols watched;
// a silent link shows its gateway LATE until it is healed; a clean stop
// takes a record away.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { ROOT, setUp, startGateway, startSilentProxy, useStack, waitFor } from '../src/index.js'

const WSPS = join(ROOT, 'clients/cli/bin/wsps.js')
const ADMIN_TOKEN = 'fleet-test-admin-token-0123'
const INTERVAL_MS = 300
const stack = useStack()
const on = setUp(async () => {
  await stack.start()
  const proxy = await startSilentProxy(stack.redis.port)
  const fetcher = await stack.fetcher({ WSPS_STATUS_INTERVAL_MS: INTERVAL_MS, WSPS_NODE_NAME: 'fleet-fetcher' })
  const admin = await stack.gateway({ WSPS_STATUS_INTERVAL_MS: INTERVAL_MS, WSPS_ADMIN_TOKEN: ADMIN_TOKEN, WSPS_NODE_NAME: 'fleet-gw-admin' })
  // Its own liveness would tear the silent link down and rebuild it: slower than the test needs.
  const cut = await startGateway(proxy.url, { WSPS_STATUS_INTERVAL_MS: INTERVAL_MS, WSPS_NODE_NAME: 'fleet-gw-cut', WSPS_REDIS_PING_TIMEOUT_MS: 60_000, WSPS_REDIS_COMMAND_TIMEOUT_MS: 60_000 })
  return { proxy, fetcher, admin, cut }
})
after(async () => {
  await on.cut?.kill()
  await on.proxy?.close()
})

/**
 * `wsps top --json` against the admin gateway.
 *
 * @param {string[]} [more]
 * @returns {Promise<{code: number, fleet: any, err: string}>}
 */
function top (more = []) {
  return new Promise((resolve) => {
    execFile(process.execPath, [WSPS, 'top', '--json', '--url', on.admin.url, '--token', ADMIN_TOKEN, ...more], { timeout: 20_000, env: { PATH: process.env.PATH ?? '' } }, (err, out, errOut) => {
      resolve({ code: err ? Number(/** @type {any} */ (err).code ?? 1) : 0, fleet: JSON.parse(out || 'null'), err: errOut })
    })
  })
}

/** @param {any} fleet @param {string} node */
const entry = (fleet, node) => fleet.processes.find((/** @type {any} */ p) => p.node === node)

test('wsps top: every process with its clients and channels; the symbols watched most, over the fleet', async () => {
  const a = await stack.client(on.admin.wsUrl)
  await a.sub(['AAPL', 'MSFT'])
  const b = await stack.client(on.cut.wsUrl)
  await b.sub(['AAPL'])
  /** @type {any} */
  let fleet = null
  await waitFor(async () => {
    fleet = (await top()).fleet
    return entry(fleet, 'fleet-gw-admin')?.connections === 1 && entry(fleet, 'fleet-gw-cut')?.connections === 1 && entry(fleet, 'fleet-fetcher')?.publishedPerS > 0
  }, { timeout: 15_000, message: 'the fleet with both clients and a publishing fetcher' })
  assert.ok(fleet)
  assert.deepEqual(fleet.processes.map((/** @type {any} */ p) => p.node), ['fleet-gw-admin', 'fleet-gw-cut', 'fleet-fetcher'], 'gateways first, then fetchers')
  for (const p of fleet.processes) {
    assert.equal(p.ready, true, p.node)
    assert.equal(p.late, false, p.node)
  }
  assert.deepEqual(entry(fleet, 'fleet-gw-admin').top.map((/** @type {any} */ t) => t.symbol).sort(), ['AAPL', 'MSFT'])
  assert.equal(entry(fleet, 'fleet-gw-admin').channels, 2)
  assert.equal(entry(fleet, 'fleet-fetcher').provider, 'sim')
  a.close()
  b.close()
})

test('a gateway whose Redis link goes silent is shown LATE while it lasts, and fresh once healed', async () => {
  on.proxy.silence()
  try {
    await waitFor(async () => entry((await top()).fleet, 'fleet-gw-cut')?.late === true, { timeout: 10_000, message: 'the cut-off gateway late' })
    const { fleet } = await top()
    assert.equal(entry(fleet, 'fleet-gw-admin').late, false, 'the others are not')
    assert.ok(entry(fleet, 'fleet-gw-cut').ageMs > 3 * INTERVAL_MS)
  } finally {
    on.proxy.heal()
  }
  await waitFor(async () => entry((await top()).fleet, 'fleet-gw-cut')?.late === false, { timeout: 10_000, message: 'fresh again' })
})

test('the admin API: a wrong token is UNAUTHORIZED, a gateway without WSPS_ADMIN_TOKEN has none; a stopped gateway leaves the fleet', async () => {
  const wrong = await top(['--token', 'wrong-token-wrong-token'])
  assert.equal(wrong.code, 1)
  assert.equal(wrong.fleet.error.answer.code, 'UNAUTHORIZED')
  const res = await fetch(`${on.cut.url}/admin/fleet`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  assert.equal(res.status, 404)
  assert.equal((await res.json()).code, 'ADMIN_DISABLED')

  await on.cut.stop()
  const { fleet } = await top()
  assert.equal(entry(fleet, 'fleet-gw-cut'), undefined, 'a clean stop removes its record at once')
})
