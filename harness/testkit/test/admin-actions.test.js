// An operator's actions on real processes: redis-server, a sim fetcher and
// three gateways with auth on; the admin API of one reaches the others
// through Redis. The real `wsps` command shows a user's connections on
// every gateway and what each resumed, disconnects them (4010, and nobody else), disconnects one
// connection by its id, and drains a gateway (its clients get 1012, it
// exits and leaves the fleet view).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { SignJWT } from 'jose'
import { CloseCode } from '@wsps/protocol'
import { ROOT, setUp, useStack, waitFor } from '../src/index.js'

const WSPS = join(ROOT, 'clients/cli/bin/wsps.js')
const ADMIN_TOKEN = 'admin-actions-test-token-0123'
const SECRET = 'admin-actions-test-secret-0123456789'
const AUTH = { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET, WSPS_STATUS_INTERVAL_MS: 300 }
const stack = useStack()
const on = setUp(async () => {
  await stack.start()
  await stack.fetcher({ WSPS_STATUS_INTERVAL_MS: 300 })
  const admin = await stack.gateway({ ...AUTH, WSPS_ADMIN_TOKEN: ADMIN_TOKEN, WSPS_NODE_NAME: 'act-gw-admin' })
  const other = await stack.gateway({ ...AUTH, WSPS_NODE_NAME: 'act-gw-other' })
  const drained = await stack.gateway({ ...AUTH, WSPS_NODE_NAME: 'act-gw-drained', WSPS_DRAIN_MS: 300 })
  // Every gateway in the fleet view: an action waits for the answers of those listed.
  await waitFor(async () => (await api('/admin/fleet', undefined, admin.url)).body.processes?.filter((/** @type {any} */ p) => p.role === 'gateway').length === 3, { timeout: 15_000, message: 'three gateways in the fleet view' })
  return { admin, other, drained }
})

/** @param {string} user */
const tokenOf = (user) => new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(user).setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))

/**
 * @param {string} url
 * @param {string} user
 */
async function client (url, user) {
  return stack.client(url, { headers: { authorization: `Bearer ${await tokenOf(user)}` } })
}

/**
 * @param {string} path
 * @param {unknown} [body] POST it when given
 * @param {string} [base]
 * @param {string} [token]
 */
async function api (path, body, base = on.admin.url, token = ADMIN_TOKEN) {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: /** @type {any} */ (await res.json()) }
}

/**
 * The real `wsps` against the admin gateway.
 *
 * @param {string[]} args
 * @returns {Promise<{code: number, out: string, err: string}>}
 */
function wsps (args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [WSPS, ...args, '--url', on.admin.url, '--token', ADMIN_TOKEN], { timeout: 20_000, env: { PATH: process.env.PATH ?? '' } }, (err, out, errOut) => {
      resolve({ code: err ? Number(/** @type {any} */ (err).code ?? 1) : 0, out, err: errOut })
    })
  })
}

test('wsps conn --user: the user\'s connections on every gateway, with their symbols and modes; wsps disconnect --user closes those with 4010 and nobody else', async () => {
  const aliceHere = await client(on.admin.wsUrl, 'alice')
  await aliceHere.sub(['AAPL'], { mode: 'distinct' })
  const aliceThere = await client(on.other.wsUrl, 'alice')
  await aliceThere.sub(['MSFT'])
  const bob = await client(on.other.wsUrl, 'bob')
  await bob.sub(['MSFT'])

  const shown = await wsps(['conn', '--user', 'alice', '--json'])
  assert.equal(shown.code, 0, shown.err)
  const answer = JSON.parse(shown.out)
  assert.deepEqual(answer.missing, [])
  const conns = answer.answers.flatMap((/** @type {any} */ a) => (a.connections ?? []).map((/** @type {any} */ c) => ({ node: a.node, ...c })))
  assert.deepEqual(conns.map((/** @type {any} */ c) => [c.node, c.user, c.symbols]).sort(), [
    ['act-gw-admin', 'alice', [{ symbol: 'AAPL', mode: 'distinct', delayed: false }]],
    ['act-gw-other', 'alice', [{ symbol: 'MSFT', mode: 'merge', delayed: false }]]
  ])
  assert.equal(answer.answers.length, 3, 'every gateway answered, those without alice with 0')

  const human = await wsps(['conn', '--user', 'alice'])
  assert.match(human.out, /act-gw-other #\d+ {2}user alice/)

  const done = await wsps(['disconnect', '--user', 'alice', '--json'])
  assert.equal(done.code, 0, done.err)
  assert.equal(JSON.parse(done.out).matched, 2)
  for (const c of [aliceHere, aliceThere]) assert.deepEqual(await c.closedPromise, { code: CloseCode.OPERATOR_DISCONNECT, reason: 'disconnected by an operator' })
  const before = bob.seqs.get('MSFT')?.length ?? 0
  await bob.waitQuotes('MSFT', before + 2)
  assert.equal(bob.closed, null, 'bob is still connected')
  bob.close()
})

test('wsps disconnect --node --id: one connection, by the id wsps conn shows', async () => {
  const first = await client(on.other.wsUrl, 'carol')
  const second = await client(on.other.wsUrl, 'carol')
  const { body } = await api('/admin/connections?user=carol')
  const ids = body.answers.find((/** @type {any} */ a) => a.node === 'act-gw-other').connections.map((/** @type {any} */ c) => c.id)
  assert.equal(ids.length, 2)
  const done = await wsps(['disconnect', '--node', 'act-gw-other', '--id', String(Math.max(...ids))])
  assert.equal(done.code, 0, done.err)
  assert.match(done.out, /^disconnected 1 \(act-gw-other: 1\)/)
  assert.equal((await second.closedPromise).code, CloseCode.OPERATOR_DISCONNECT, 'the newer one (the higher id)')
  assert.equal(first.closed, null)
  first.close()
})

test('wsps conn shows what a connection resumed: symbols recovered with since, and those that were not', async () => {
  const first = await client(on.admin.wsUrl, 'erin')
  await first.sub(['AAPL'])
  await first.waitQuotes('AAPL', 1)
  const held = first.quote('AAPL')
  assert.ok(held)
  first.close()
  const again = await client(on.admin.wsUrl, 'erin')
  const ack = await again.sub(['AAPL', 'MSFT'], { since: { AAPL: { seq: held.seq, epoch: held.epoch }, MSFT: { seq: 1, epoch: 'notthishistory' } } })
  assert.deepEqual(ack.recovered, { AAPL: true, MSFT: false }, JSON.stringify(ack))
  const shown = await wsps(['conn', '--user', 'erin', '--json'])
  assert.equal(shown.code, 0, shown.err)
  const [conn] = JSON.parse(shown.out).answers.flatMap((/** @type {any} */ a) => a.connections ?? [])
  assert.deepEqual(conn.resumes, { recovered: 1, notRecovered: 1 })
  assert.match((await wsps(['conn', '--user', 'erin'])).out, /resumed 1 recovered, 1 not/)
  again.close()
})

test('the admin actions refuse what they cannot do, with a code', async () => {
  assert.deepEqual((await api('/admin/disconnect', {})).body.code, 'BAD_REQUEST')
  assert.equal((await api('/admin/disconnect', { connection: 3 })).status, 400, 'an id without its node')
  assert.equal((await api('/admin/disconnect', { user: 'x', extra: 1 })).body.code, 'BAD_REQUEST')
  assert.deepEqual(await api('/admin/drain', { node: 'no-such-gateway' }), { status: 404, body: { code: 'NO_SUCH_NODE', message: 'no gateway "no-such-gateway" in the fleet view' } })
  assert.equal((await api('/admin/disconnect', { user: 'alice' }, on.admin.url, 'wrong-token-wrong-token')).status, 401)
  assert.equal((await api('/admin/disconnect', { user: 'alice' }, on.other.url)).body.code, 'ADMIN_DISABLED')
  const usage = await wsps(['disconnect', '--id', '3'])
  assert.equal(usage.code, 2)
  assert.match(usage.err, /USAGE: --id is per gateway: give --node too/)
})

test('wsps drain: the gateway named tells its clients 1012, exits, and leaves the fleet view', async () => {
  const c = await client(on.drained.wsUrl, 'dave')
  await c.sub(['AAPL'])
  const done = await wsps(['drain', 'act-gw-drained'])
  assert.equal(done.code, 0, done.err)
  assert.equal(done.out.trim(), 'act-gw-drained: draining')
  assert.equal((await c.closedPromise).code, CloseCode.SERVICE_RESTART)
  assert.deepEqual(await on.drained.exited, { code: 0, signal: null })
  const { body } = await api('/admin/fleet')
  assert.deepEqual(body.processes.filter((/** @type {any} */ p) => p.role === 'gateway').map((/** @type {any} */ p) => p.node), ['act-gw-admin', 'act-gw-other'])
})
