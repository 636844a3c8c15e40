// Enforced auth through the design's ingress (issue #28): the release is
// upgraded to HS256 JWT auth (gateway.auth.mode=hs256, the secret from an
// existing Secret) while its Ingress is on the F5 NGINX controller, and
// every way a client can get a token wrong is tried through nginx, each
// against the code the protocol promises (docs/protocol.md, Authentication
// and Errors): at the upgrade (401), in the first frame (4001), no token in
// time (4003), a token that expires (4002), a symbol not granted
// (NOT_ENTITLED), a delayed grant asking for real-time (DELAYED_ONLY), SSE
// without a token (401) - and a good token still streams, over both
// transports. The release stays authed for the steps after this one (the
// secrets step checks that the HS256 secret shows up nowhere).
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import http from 'node:http'
import { TestClient } from '../../harness/testkit/src/test-client.js'
import { CloseCode, ErrorCode } from '../../services/protocol/index.js'
import { signHs256 } from '../../clients/cli/src/jwt.js'
import { upstreamsSettled } from './nginx.mjs'

export const AUTH_SECRET = 'wsps-e2e-auth'
/** The HS256 secret enforcedAuth() makes and puts in Secret AUTH_SECRET: what later steps sign their tokens with. */
export const AUTH_SECRET_FILE = '.run/e2e/auth-secret'
const PORT = process.env.NGINX_NODEPORT || '30081'
// Short, so the 4003 case does not wait long (WSPS_AUTH_TIMEOUT_MS).
const AUTH_TIMEOUT_MS = 3000

/**
 * @typedef {import('./nginx.mjs').E2E} E2E
 * @typedef {{status?: number, code?: number, frames: any[]}} Outcome
 */

/**
 * Opens a socket through nginx with the testkit's client, sends `first`
 * once it is open and, when `stopWhen` is given, closes it (1000) at the
 * first frame that matches; resolves with how it ended: the HTTP status of
 * a refused upgrade, or the close code, with the frames received.
 *
 * @param {string} host
 * @param {{token?: string, first?: object[], stopWhen?: (f: any) => boolean, timeoutMs?: number}} o
 * @returns {Promise<Outcome>}
 */
async function socket (host, { token, first = [], stopWhen, timeoutMs = 15000 }) {
  const c = new TestClient(`ws://127.0.0.1:${PORT}/ws`, { headers: { host, ...(token ? { authorization: `Bearer ${token}` } : {}) }, handshakeTimeout: 10000 })
  c.upgraded.then(() => { for (const f of first) c.send(f) })
  // A refused upgrade rejects `opened` with its status; a socket closed
  // before `hello` leaves it pending, and the close says how it ended.
  const refused = c.opened.then(() => new Promise(() => {}), (/** @type {any} */ err) => {
    if (err.status === undefined) throw err
    return { status: err.status, frames: c.frames }
  })
  const stopped = stopWhen === undefined ? new Promise(() => {}) : c.next(stopWhen, { timeout: timeoutMs, from: 0 }).then(() => { c.ws.close(1000); return c.closedPromise })
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  const late = new Promise((_resolve, reject) => {
    timer = setTimeout(() => { c.ws.terminate(); reject(new Error(`no outcome within ${timeoutMs} ms; frames ${JSON.stringify(c.frames).slice(0, 300)}`)) }, timeoutMs)
  })
  // Whichever settles first is the outcome; the others are left to settle
  // (or not) unheard.
  for (const p of [refused, stopped]) p.catch(() => {})
  try {
    return await Promise.race([refused, late, stopped.then(() => ({ code: c.closed?.code, frames: c.frames })), c.closedPromise.then((closed) => ({ code: closed.code, frames: c.frames }))])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * @param {E2E} e
 */
export async function enforcedAuth (e) {
  const secret = randomBytes(32).toString('hex')
  const file = AUTH_SECRET_FILE
  writeFileSync(file, secret, { mode: 0o600 })
  const s = await e.kubectl(['create', 'secret', 'generic', AUTH_SECRET, `--from-file=hs256-secret=${file}`, '--dry-run=client', '-o', 'yaml'])
  writeFileSync('.run/e2e/auth-secret.yaml', s.out, { mode: 0o600 })
  await e.kubectl(['apply', '-f', '.run/e2e/auth-secret.yaml'])
  await e.run(e.helmBin, ['upgrade', e.rel, 'charts/wsps', '-n', e.ns, '--reuse-values',
    '--set', 'gateway.auth.mode=hs256', '--set', `gateway.auth.existingSecret=${AUTH_SECRET}`,
    '--set', `gateway.config.WSPS_AUTH_TIMEOUT_MS=${AUTH_TIMEOUT_MS}`, '--wait', '--timeout', '5m'], { timeoutMs: 330000 })
  await e.run('kubectl', ['-n', e.ns, 'rollout', 'status', `deployment/${e.rel}-gateway`, '--timeout=300s'], { timeoutMs: 320000 })
  await upstreamsSettled(e)

  const now = Math.floor(Date.now() / 1000)
  const good = (/** @type {Record<string, unknown>} */ claims, ttl = 600) => signHs256(secret, { sub: 'e2e', iat: now, exp: Math.floor(Date.now() / 1000) + ttl, ...claims })
  const host = e.host
  /** @type {string[]} */
  const seen = []
  /**
   * @param {string} what
   * @param {Outcome} got
   * @param {{status?: number, code?: number, error?: string}} want
   */
  const expect = (what, got, want) => {
    const errors = got.frames.filter((f) => f.op === 'error').map((f) => f.code)
    const ok = (want.status === undefined || got.status === want.status) &&
      (want.code === undefined || got.code === want.code) &&
      (want.error === undefined || errors.includes(want.error))
    const said = got.status !== undefined ? `HTTP ${got.status}` : `close ${got.code}${errors.length ? ` ${errors.join(',')}` : ''}`
    if (!ok) e.fail(`auth through nginx: ${what}: got ${said}, want ${JSON.stringify(want)}; frames ${JSON.stringify(got.frames).slice(0, 300)}`)
    seen.push(`${what} ${said}`)
  }

  expect('garbage token', await socket(host, { token: 'not-a-token' }), { status: 401 })
  expect('another secret', await socket(host, { token: signHs256(randomBytes(32).toString('hex'), { sub: 'x', exp: now + 600 }) }), { status: 401 })
  expect('expired', await socket(host, { token: good({}, -60) }), { status: 401 })
  expect('grant of the wrong shape', await socket(host, { token: good({ symbols: 'AAPL' }) }), { status: 401 })
  expect('alg none', await socket(host, { token: `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'x', exp: now + 600 })).toString('base64url')}.` }), { status: 401 })
  expect('no token in time', await socket(host, {}), { code: CloseCode.AUTH_TIMEOUT })
  expect('bad first frame', await socket(host, { first: [{ op: 'auth', token: 'not-a-token' }] }), { code: CloseCode.UNAUTHORIZED, error: ErrorCode.UNAUTHORIZED })
  expect('a request before auth', await socket(host, { first: [{ op: 'sub', symbols: ['AAPL'], id: 1 }], stopWhen: (f) => f.op === 'error' }), { code: 1000, error: ErrorCode.AUTH_REQUIRED })
  expect('symbol not granted', await socket(host, { token: good({ symbols: ['AAPL'] }), first: [{ op: 'sub', symbols: ['MSFT'], id: 1 }], stopWhen: (f) => f.op === 'error' }), { code: 1000, error: ErrorCode.NOT_ENTITLED })
  expect('real-time asked of a delayed grant', await socket(host, { token: good({ symbols: ['MSFT'], delayedSymbols: ['AAPL'] }), first: [{ op: 'sub', symbols: ['AAPL'], delayed: false, id: 1 }], stopWhen: (f) => f.op === 'error' }), { code: 1000, error: ErrorCode.DELAYED_ONLY })
  expect('token expiring without a refresh', await socket(host, { token: good({ symbols: ['AAPL'] }, 3) }), { code: CloseCode.TOKEN_EXPIRED })

  // A good token streams, in the header and as the first frame.
  /** @type {[string, {token?: string, first?: string}][]} */
  const goods = [['header', { token: good({ symbols: ['AAPL'] }) }], ['first frame', { first: good({ symbols: ['AAPL'] }) }]]
  for (const [how, o] of goods) {
    const c = new TestClient(`ws://127.0.0.1:${PORT}/ws`, { headers: { host, ...(o.token ? { authorization: `Bearer ${o.token}` } : {}) }, handshakeTimeout: 10000 }, o.first ? { token: o.first } : undefined)
    /** @type {string | null} */
    let problem = null
    try {
      await c.opened
      const ack = await c.sub(['AAPL'])
      if (ack.op !== 'ack') problem = `was refused AAPL: ${JSON.stringify(ack)}`
      else await c.waitQuotes('AAPL', 1, 30000)
    } catch (err) {
      problem = `got no quote: ${/** @type {Error} */ (err).message}`
    } finally {
      c.ws.terminate()
    }
    if (problem !== null) e.fail(`auth through nginx: a good token (${how}) ${problem}; frames ${JSON.stringify(c.frames).slice(0, 300)}`)
    seen.push(`good token (${how}) streams`)
  }

  // SSE: refused without a token, streams with one. (node:http, not fetch:
  // fetch does not send a Host header of the caller's choosing.)
  /** @type {(token: string | undefined) => Promise<{status: number, body: string}>} */
  const sse = (token) => new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: Number(PORT), path: '/sse?symbols=AAPL', headers: { host, ...(token ? { authorization: `Bearer ${token}` } : {}) }, timeout: 20000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        body += chunk
        if (res.statusCode === 200 && body.includes('event: snap')) req.destroy()
      })
      const done = () => resolve({ status: res.statusCode ?? 0, body })
      res.on('end', done)
      res.on('close', done)
    })
    req.on('timeout', () => req.destroy(new Error('SSE: no snap within 20 s')))
    req.on('error', (err) => { if (!req.destroyed || err.message.startsWith('SSE')) reject(err) })
  })
  const anon = await sse(undefined)
  if (anon.status !== 401 || !anon.body.includes(ErrorCode.UNAUTHORIZED)) e.fail(`auth through nginx: SSE without a token got ${anon.status} ${anon.body.slice(0, 200)}`)
  const authed = await sse(good({ symbols: ['AAPL'] }))
  if (authed.status !== 200 || !authed.body.includes('event: snap')) e.fail(`auth through nginx: SSE with a good token got ${authed.status} ${authed.body.slice(0, 200)}`)
  seen.push(`SSE without a token HTTP 401 ${ErrorCode.UNAUTHORIZED}`, 'SSE with a good token streams')
  return `auth through nginx (hs256, secret from Secret ${AUTH_SECRET}): ${seen.length} cases as promised: ${seen.join('; ')}`
}
