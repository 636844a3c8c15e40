// The `wsps` command line against real processes: redis-server, a push-only
// fetcher with the publish API, a gateway without auth and one with HS256.
// Each verb is the real command (node clients/cli/bin/wsps.js), piped, so
// it prints JSON lines as it would into a script.
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { applyBook, canonicalBook } from '@wsps/shared/books'
import { redisKeys } from '@wsps/shared/keys'
import { registerScripts } from '@wsps/shared/scripts'
import { GATEWAY_MAIN, ROOT, setUp, useStack, waitFor } from '../src/index.js'

const WSPS = join(ROOT, 'clients/cli/bin/wsps.js')
const PUBLISH_TOKEN = 'cli-test-publish-token-0123456789'
const dir = mkdtempSync(join(tmpdir(), 'wsps-cli-stack-'))
const secretFile = join(dir, 'secret')
writeFileSync(secretFile, 'cli-test-secret-of-thirty-two-bytes-at-least')

const stack = useStack()
const on = setUp(async () => {
  const fetcher = await stack.fetcher({ WSPS_PROVIDER: 'push', WSPS_PUBLISH_TOKEN: PUBLISH_TOKEN })
  const open = await stack.gateway({})
  const authed = await stack.gateway({ WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET_FILE: secretFile })
  return { fetcher, open, authed }
})

/**
 * Runs `wsps` to its end.
 *
 * @param {string[]} args
 * @param {{input?: string, timeout?: number}} [o]
 * @returns {Promise<{code: number, out: string, err: string}>}
 */
function wsps (args, { input, timeout = 30_000 } = {}) {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [WSPS, ...args], { timeout, env: { PATH: process.env.PATH ?? '' } }, (err, out, errOut) => {
      resolve({ code: err ? Number(/** @type {any} */ (err).code ?? 1) : 0, out, err: errOut })
    })
    child.stdin?.end(input ?? '')
  })
}

/**
 * Starts `wsps tail` and resolves with its records once it exits.
 *
 * @param {string[]} args
 */
function tailing (args) {
  const child = spawn(process.execPath, [WSPS, 'tail', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '' } })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { err += d })
  const records = () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  const done = once(child, 'exit').then(([code]) => { clearTimeout(timer); return { code, records: records(), err } })
  return { records, done, child }
}

/**
 * Waits until a tail is live (its status record says so).
 *
 * @param {ReturnType<typeof tailing>} t
 */
async function live (t) {
  const deadline = Date.now() + 20_000
  while (!t.records().some((r) => r.type === 'status' && r.state === 'live')) {
    if (Date.now() > deadline || t.child.exitCode !== null) throw new Error(`tail never went live: ${JSON.stringify(t.records())}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

test('publish (CSV) through the fetcher\'s API, tail --mode distinct gets every row, in order, with its seq', async () => {
  const t = tailing(['--url', on.open.wsUrl, '--mode', 'distinct', '--count', '3', 'CLIA'])
  await live(t)
  // The gateway subscribed once the ack came; the ack follows the live status within a pass.
  await new Promise((resolve) => setTimeout(resolve, 300))
  const csv = 'symbol,bid,ask,last\nCLIA,1.0,1.2,1.1\nCLIA,1.1,1.3,1.2\nCLIA,1.2,1.4,1.3\n'
  const published = await wsps(['publish', '--url', on.fetcher.url, '--token', PUBLISH_TOKEN, '--json'], { input: csv })
  assert.equal(published.code, 0, published.err)
  assert.deepEqual(JSON.parse(published.out), { ok: true, quotes: 3, accepted: 3, refused: {}, requests: 1 })
  const { code, records } = await t.done
  assert.equal(code, 0)
  const quotes = records.filter((r) => r.type === 'quote').map((r) => r.quote)
  assert.deepEqual(quotes.map((q) => q.last), [1.1, 1.2, 1.3])
  assert.deepEqual(quotes.map((q) => q.seq), [1, 2, 3].map((i) => quotes[0].seq + i - 1), 'consecutive')

  const refused = await wsps(['publish', '--url', on.fetcher.url, '--token', 'not-the-token'], { input: 'symbol,last\nCLIA,2\n' })
  assert.equal(refused.code, 1)
  assert.match(refused.err, /^wsps publish: REFUSED: 401 UNAUTHORIZED: /, 'the API\'s own code')
  const old = await wsps(['publish', '--url', on.fetcher.url, '--token', PUBLISH_TOKEN], { input: `symbol,last,ts\nCLIA,2,${Date.now() - 60_000}\n` })
  assert.equal(old.code, 0)
  assert.equal(old.out.trim(), 'published 0 of 1 quotes in 1 request; refused: 1 old', 'an older quote is refused, and said so')
})

test('tail --since starts at a cursor a client logged: its quote whole, then every tick after it, from history', async () => {
  const t = tailing(['--url', on.open.wsUrl, '--mode', 'distinct', '--count', '4', 'CLIS'])
  await live(t)
  await new Promise((resolve) => setTimeout(resolve, 300))
  const csv = 'symbol,bid,ask,last\n' + [1, 2, 3, 4].map((i) => `CLIS,${i}.0,${i}.2,${i}.1`).join('\n') + '\n'
  assert.equal((await wsps(['publish', '--url', on.fetcher.url, '--token', PUBLISH_TOKEN], { input: csv })).code, 0)
  const logged = (await t.done).records.filter((r) => r.type === 'quote').map((r) => r.quote)
  assert.equal(logged.length, 4)
  const from = logged[1]

  // Nothing is published any more: all it prints comes from history.
  const resumed = tailing(['--url', on.open.wsUrl, '--mode', 'distinct', '--count', '3', '--since', `clis:${from.seq}:${from.epoch}`, 'CLIS'])
  const { code, records } = await resumed.done
  assert.equal(code, 0)
  assert.deepEqual(records.filter((r) => r.type === 'recovery'), [{ type: 'recovery', symbol: 'CLIS', recovered: true }])
  const quotes = records.filter((r) => r.type === 'quote')
  assert.deepEqual(quotes.map((r) => r.snapshot), [true, false, false])
  assert.deepEqual(quotes.map((r) => r.quote), logged.slice(1), 'the same quotes, whole, as the client that logged them saw')
})

test('tail --book: the book whole, then each change, as the book script wrote them in Redis', async () => {
  const redis = registerScripts(await stack.redisClient())
  const keys = redisKeys('wsps')
  /** @param {any} update */
  const write = async (update) => {
    const c = canonicalBook({ symbol: 'CLBK', ts: Date.now(), ...update })
    assert.equal(typeof c, 'object', String(c))
    return applyBook(redis, keys, /** @type {any} */ (c), { ttlMs: 60_000, pushLeaseMs: 60_000 })
  }
  await write({ kind: 'snapshot', bids: [['100.5', '2'], ['100.4', '1.25']], asks: [['100.6', '3']] })
  const t = tailing(['--url', on.open.wsUrl, '--book', '10', '--count', '3', 'CLBK'])
  await live(t)
  // The snapshot first (a delta written before the book is read would be in it: one record fewer).
  await waitFor(() => t.records().some((r) => r.type === 'book'), { timeout: 20_000, message: 'the book\'s snapshot printed' })
  await write({ kind: 'delta', bids: [['100.5', '0'], ['100.3', '4']], asks: [] })
  // One change at a time: two in one batching window would come as one frame (merge).
  await waitFor(() => t.records().filter((r) => r.type === 'book').length === 2, { timeout: 20_000, message: 'the first change printed' })
  await write({ kind: 'delta', bids: [], asks: [['100.55', '1']] })
  const { code, records } = await t.done
  assert.equal(code, 0)
  const books = records.filter((r) => r.type === 'book')
  assert.deepEqual(books.map((r) => [r.seq, r.snapshot, r.sync, r.depth]), [[1, true, true, 10], [2, false, true, 10], [3, false, true, 10]])
  assert.deepEqual(books.map((r) => [r.bids, r.asks]), [
    [[['100.5', '2'], ['100.4', '1.25']], [['100.6', '3']]],
    [[['100.4', '1.25'], ['100.3', '4']], [['100.6', '3']]],
    [[['100.4', '1.25'], ['100.3', '4']], [['100.55', '1'], ['100.6', '3']]]
  ])
})

test('token and check-token: a token the gateway accepts streams what it grants; a symbol it does not grant ends tail with REFUSED', async () => {
  const jwt = (await wsps(['token', '--secret-file', secretFile, 'CLIB'])).out.trim()
  const tokenFile = join(dir, 'token')
  writeFileSync(tokenFile, jwt)
  const checked = await wsps(['check-token', '--json', '--secret-file', secretFile, jwt])
  assert.equal(checked.code, 0, checked.err + checked.out)
  assert.deepEqual(JSON.parse(checked.out).realtime, ['CLIB'])

  const t = tailing(['--url', on.authed.wsUrl, '--token-file', tokenFile, '--count', '1', 'CLIB'])
  await live(t)
  await new Promise((resolve) => setTimeout(resolve, 300))
  assert.equal((await wsps(['publish', '--url', on.fetcher.url, '--token', PUBLISH_TOKEN], { input: '{"symbol":"CLIB","last":7}\n' })).code, 0)
  const got = await t.done
  assert.equal(got.code, 0, got.err)
  assert.deepEqual(got.records.filter((r) => r.type === 'quote').map((r) => [r.symbol, r.quote.last]), [['CLIB', 7]])

  const denied = await tailing(['--url', on.authed.wsUrl, '--token', jwt, 'CLIA']).done
  assert.equal(denied.code, 1)
  assert.match(denied.err, /^wsps tail: REFUSED: every symbol was refused: NOT_ENTITLED /m)
  const unauth = await tailing(['--url', on.authed.wsUrl, '--token', 'not.a.token', 'CLIB']).done
  assert.equal(unauth.code, 1, 'a refused token ends it too')
  assert.match(unauth.err, /REFUSED: the gateway closed the connection with 4001/)
})

test('check-config prints the very lines the gateway prints when it refuses to start with the same settings', async () => {
  const env = { WSPS_REDIS_URL: 'redis://127.0.0.1:1', WSPS_SEND_MAX_BYTES: '2048', WSPS_SEND_HIGH_WATER_BYTES: '4096', WSPS_TYPO_SETTING: '1' }
  const file = join(dir, 'gateway.env')
  writeFileSync(file, Object.entries(env).map(([k, v]) => `${k}=${v}`).join('\n'))
  const checked = await wsps(['check-config', 'gateway', file])
  assert.equal(checked.code, 1)
  const started = await new Promise((resolve) => {
    execFile(process.execPath, [GATEWAY_MAIN], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 }, (err, _out, errOut) => resolve({ code: /** @type {any} */ (err)?.code, err: errOut }))
  })
  assert.equal(started.code, 78, 'the gateway refuses them (EX_CONFIG)')
  assert.equal(checked.err, `wsps check-config: BAD_CONFIG: ${started.err}`, 'word for word')
})
