// The Alpaca and Polygon/Massive configurations of docs/feeding.md, exactly
// as the page gives them (every WSPS_ line of each block; only the URL and
// the credential files point at the test's own), end to end on real
// processes: a fake vendor speaking that vendor's documented dialect
// (fake-vendor.js), redis-server, two ws-stream fetchers, a gateway and a
// WebSocket client. What a reader who copies a block gets: one vendor
// connection for the key, quotes and trades of a symbol merged into one
// quote (bid and ask from quotes, last from trades), and a trade correction
// that does not become the last price.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { ClientPool, sleep, startFakeVendor, startFetcher, startGateway, startRedis, waitFor } from '../src/index.js'

const DOC = readFileSync(new URL('../../../docs/feeding.md', import.meta.url), 'utf8')
const KEY = 'AKVENDORTESTKEY01'
const SECRET = 'vendor-test-secret-5e4d'

/**
 * The settings of the feeding.md shell block whose WSPS_STREAM_URL names
 * `host`: `NAME=value` lines, single quotes taken off.
 *
 * @param {string} host
 * @returns {Record<string, string>}
 */
function documentedBlock (host) {
  for (const [, body] of DOC.matchAll(/```sh test:syntax\n([\s\S]*?)```/g)) {
    /** @type {Record<string, string>} */
    const env = {}
    for (const [, name, value] of body.matchAll(/^(WSPS_[A-Z0-9_]+)=(.*)$/gm)) env[name] = value.replace(/^'(.*)'$/, '$1')
    if (env.WSPS_STREAM_URL?.includes(host)) return env
  }
  throw new Error(`docs/feeding.md has no ws-stream block for ${host}`)
}

/**
 * The block with the test's vendor in place of the real one: its URL, and
 * the credentials in files where the block reads them from files.
 *
 * @param {Record<string, string>} block
 * @param {string} url
 */
function pointedAt (block, url) {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-vendor-'))
  /** @type {Record<string, string>} */
  const env = { ...block, WSPS_STREAM_URL: url }
  for (const [name, value] of [['WSPS_STREAM_KEY_FILE', KEY], ['WSPS_STREAM_SECRET_FILE', SECRET]]) {
    if (env[name] === undefined) continue
    env[name] = join(dir, name)
    writeFileSync(env[name], value, { mode: 0o600 })
  }
  return env
}

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis
/** @type {{stop(): Promise<unknown>}[]} */
const started = []
const clients = new ClientPool()

before(async () => {
  redis = await startRedis()
})

after(async () => {
  clients.terminate()
  await Promise.all(started.map((p) => p.stop()))
  await redis?.close()
})

/**
 * Starts the vendor and two fetchers with the documented block, and a
 * client holding AAPL and MSFT until both have bid, ask and last.
 *
 * @param {'alpaca' | 'polygon'} dialect
 * @param {string} host
 * @param {string} prefix a Redis key prefix of its own (two tests, one Redis)
 */
async function streaming (dialect, host, prefix) {
  const block = documentedBlock(host)
  const vendor = await startFakeVendor({ dialect, key: KEY, secret: dialect === 'alpaca' ? SECRET : '', maxConnections: 1 })
  started.push(vendor)
  const gw = await startGateway(redis.url, { WSPS_REDIS_KEY_PREFIX: prefix, WSPS_DEMAND_LEASE_MS: 1500, WSPS_UNSUBSCRIBE_DELAY_MS: 100 })
  started.push(gw)
  for (let i = 0; i < 2; i++) started.push(await startFetcher(redis.url, { ...pointedAt(block, vendor.streamUrl), WSPS_REDIS_KEY_PREFIX: prefix }))
  const client = await clients.connect(gw.wsUrl)
  await client.sub(['AAPL', 'MSFT'])
  const whole = (/** @type {string} */ s) => {
    const q = client.quote(s)
    return q !== undefined && typeof q.bid === 'number' && typeof q.ask === 'number' && typeof q.last === 'number'
  }
  await waitFor(() => whole('AAPL') && whole('MSFT'), { timeout: 20_000, message: `${dialect}: AAPL and MSFT with bid, ask and last` })
  return { block, vendor, client }
}

test('Alpaca, as docs/feeding.md configures it: one connection for the key, quotes and trades merged, a correction and a cancel do not set last', async () => {
  const { block, vendor, client } = await streaming('alpaca', 'alpaca.markets', 'alpaca')
  assert.equal(block.WSPS_STREAM_MAX_CONNECTIONS, '1', 'the block asks for one connection per key')
  const state = await vendor.state()
  assert.equal(state.authed, 1, `one authenticated connection for the key across two fetchers: ${JSON.stringify(state.conns)}`)
  assert.deepEqual(state.events.filter((e) => e.code === 406), [], 'the standby fetcher never tried the key (no "connection limit exceeded")')
  assert.ok(state.subscribed.AAPL === 1 && state.trades.AAPL === 1, `AAPL quotes and trades subscribed once: ${JSON.stringify(state)}`)
  // The fake's trade is bid + 0.01; a correction is the last trade + 0.50
  // and a cancel names the last trade: neither may become `last`.
  const from = client.frames.length
  assert.ok((await vendor.event('correction', 'AAPL')).sent >= 1, 'the correction reached the connection')
  assert.ok((await vendor.event('cancel', 'AAPL')).sent >= 1, 'the cancel reached the connection')
  await sleep(1000)
  const entries = client.frames.slice(from).filter((f) => f.op === 'q' || f.op === 'snap').flatMap((f) => f.quotes).filter((q) => q.symbol === 'AAPL')
  assert.ok(entries.length > 3, `AAPL kept streaming: ${entries.length} entries`)
  const maxBid = Math.max(...entries.map((q) => q.bid ?? 0), client.quote('AAPL')?.bid ?? 0)
  const lasts = entries.map((q) => q.last).filter((l) => l !== undefined)
  assert.ok(lasts.length > 0, 'trades set last')
  for (const last of lasts) assert.ok(last < maxBid + 0.1, `last ${last} came from a correction (bids up to ${maxBid})`)
  assert.deepEqual(client.problems, [])
})

test('Polygon/Massive, as docs/feeding.md configures it: the params comma list subscribes Q. and T. of each symbol, one connection, quotes and trades merged', async () => {
  const { block, vendor, client } = await streaming('polygon', 'polygon.io', 'polygon')
  assert.match(block.WSPS_STREAM_SUBSCRIBE, /\{symbols:Q\.\{symbol\},T\.\{symbol\}\}/)
  const state = await vendor.state()
  assert.equal(state.authed, 1, `one authenticated connection for the key across two fetchers: ${JSON.stringify(state.conns)}`)
  assert.deepEqual(state.events.filter((e) => e.action !== 'connect' && e.code !== undefined), [], 'no refusal of any kind (max_connections included)')
  for (const s of ['AAPL', 'MSFT']) assert.ok(state.subscribed[s] === 1 && state.trades[s] === 1, `${s}: Q. and T. subscribed once: ${JSON.stringify(state)}`)
  const q = client.quote('AAPL')
  assert.ok(q && Math.abs(q.last - q.bid) < 0.1, `last from trades beside bid from quotes: ${JSON.stringify(q)}`)
  assert.deepEqual(client.problems, [])
})
