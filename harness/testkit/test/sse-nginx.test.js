// GET /sse through nginx with the local stack's config (the stand-in for an
// ingress), at curl level: events stream unbuffered, refusals keep their
// status and coded body, and the query-string token never reaches nginx's
// access log.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { after, before, test } from 'node:test'
import { promisify } from 'node:util'
import { SignJWT } from 'jose'
import { ErrorCode } from '@wsps/protocol'
import { startFetcher, startGateway, startNginx, startRedis, waitFor } from '../src/index.js'

const SECRET = 'hs256-secret-for-the-nginx-sse-test-0123'
const run = promisify(execFile)

/** @type {Awaited<ReturnType<typeof startRedis>>} */
let redis
/** @type {import('../src/index.js').ServiceHandle[]} */
let procs = []
/** @type {Awaited<ReturnType<typeof startNginx>>} */
let nginx

before(async () => {
  redis = await startRedis()
  const env = { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: SECRET, WSPS_HEARTBEAT_MS: 1000 }
  procs = await Promise.all([startGateway(redis.url, env), startGateway(redis.url, env), startFetcher(redis.url)])
  nginx = await startNginx(procs.slice(0, 2))
})

after(async () => {
  await nginx?.stop()
  await Promise.all(procs.map((p) => p.kill()))
  await redis?.close()
})

/**
 * curl -N: what a client without any SSE library sees, for `seconds`.
 *
 * @param {string} path
 * @param {number} seconds
 * @param {string[]} [extra] more curl arguments
 * @returns {Promise<{status: number, body: string}>}
 */
async function curl (path, seconds, extra = []) {
  const args = ['-sS', '-N', '--max-time', String(seconds), '-w', '\n%{http_code}', ...extra, `${nginx.url}${path}`]
  const out = await run('curl', args).then((r) => r.stdout, (err) => {
    // 28: --max-time reached, the normal end of reading a stream that never ends.
    if (err.code !== 28) throw err
    return String(err.stdout)
  })
  const i = out.lastIndexOf('\n')
  return { status: Number(out.slice(i + 1)), body: out.slice(0, i) }
}

test('curl through nginx: a stream of hello, ack, snap and q events with ids and heartbeats, token in the query', async () => {
  const jwt = await new SignJWT({ sub: 'curl' }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))
  const { status, body } = await curl(`/sse?symbols=AAPL,MSFT&token=${jwt}`, 4)
  assert.equal(status, 200)
  const events = body.split('\n\n').filter((e) => e.startsWith('id: '))
  const names = events.map((e) => /^event: (\w+)$/m.exec(e)?.[1])
  assert.deepEqual(names.slice(0, 2), ['hello', 'ack'])
  assert.ok(names.includes('snap'), 'snapshots came through')
  // Deltas arrive while the response is still open: nginx did not hold them back.
  assert.ok(names.filter((n) => n === 'q').length >= 3, `deltas streamed: ${names.join(',')}`)
  assert.match(body, /^:$/m, 'heartbeat comments pass through')

  // nginx logs the request by its path only.
  const [, payload] = jwt.split('.')
  await waitFor(() => existsSync(nginx.accessLog) && readFileSync(nginx.accessLog, 'utf8').includes('GET /sse '), { message: 'the access log line' })
  const log = readFileSync(nginx.accessLog, 'utf8')
  assert.ok(!log.includes(payload), 'no token in the access log')
  assert.ok(!log.includes('token='), 'no query string in the access log')
})

test('curl through nginx: refusals keep their 4xx and the coded error body', async () => {
  for (const [path, status, code] of /** @type {const} */ ([
    ['/sse?symbols=AAPL', 401, ErrorCode.UNAUTHORIZED],
    ['/sse?symbols=AAPL&token=x.y.z', 401, ErrorCode.UNAUTHORIZED],
    ['/sse?symbols=aapl', 400, ErrorCode.BAD_SYMBOL]
  ])) {
    const r = await curl(path, 5)
    assert.equal(r.status, status, path)
    assert.equal(JSON.parse(r.body).code, code, path)
  }
})
