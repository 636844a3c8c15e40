// Start-up contract of both services as processes.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { FETCHER_MAIN, GATEWAY_MAIN, NODE_FLAGS, ROOT } from '../src/index.js'

/** @param {string} main @param {Record<string, string>} env */
const run = (main, env) => spawnSync(process.execPath, [main], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 10000 })

for (const [name, main] of [['gateway', GATEWAY_MAIN], ['quote-fetcher', FETCHER_MAIN]]) {
  test(`${name} refuses bad config with exit 78 and one line per problem`, () => {
    const r = run(main, { WSPS_HTTP_PORT: 'eighty', WSPS_LOG_LEVEL: 'loud', WSPS_TYPO_SETTING: '1', WSPS_REDIS_PORT: 'tcp://10.0.0.1:6379' })
    assert.equal(r.status, 78)
    assert.match(r.stderr, /WSPS_HTTP_PORT="eighty": expected a whole number/)
    assert.match(r.stderr, /WSPS_LOG_LEVEL="loud": expected one of/)
    assert.match(r.stderr, /WSPS_TYPO_SETTING: unknown setting/)
    assert.doesNotMatch(r.stderr, /WSPS_REDIS_PORT/, 'Kubernetes service links are ignored')
  })
}

test('the image and make up run the services with the Node flags the tests and the bench use', () => {
  const nodeOptions = /NODE_OPTIONS="([^"]*)"/.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))?.[1]
  const upFlags = /^NODE_FLAGS=(.*)$/m.exec(readFileSync(join(ROOT, 'infra/local/up.sh'), 'utf8'))?.[1]
  assert.ok(nodeOptions && upFlags, 'Dockerfile NODE_OPTIONS and up.sh NODE_FLAGS are found')
  for (const flag of NODE_FLAGS) {
    assert.ok(nodeOptions.split(' ').includes(flag), `Dockerfile NODE_OPTIONS has ${flag}`)
    assert.ok(upFlags.split(' ').includes(flag), `infra/local/up.sh NODE_FLAGS has ${flag}`)
  }
})

test('secrets never reach the start-up log', async () => {
  const { startRedis, startGateway } = await import('../src/index.js')
  const redis = await startRedis()
  const gw = await startGateway(redis.url, { WSPS_LOG_LEVEL: 'info', WSPS_REDIS_PASSWORD: '', WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: 'super-secret-value-that-is-32-bytes-long!' })
  await gw.stop()
  await redis.close()
  const out = gw.logs.join('\n')
  assert.match(out, /"authSecret":"\[redacted\]"/)
  assert.doesNotMatch(out, /super-secret-value/)
})

test('WSPS_METRICS_PORT moves /metrics off the public port', async () => {
  const { startRedis, startGateway, freePort, getJson } = await import('../src/index.js')
  const redis = await startRedis()
  const metricsPort = await freePort()
  const gw = await startGateway(redis.url, { WSPS_METRICS_PORT: metricsPort })
  try {
    assert.equal((await getJson(`${gw.url}/metrics`)).status, 404)
    assert.equal((await getJson(`${gw.url}/readyz`)).status, 200)
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
    assert.equal(res.status, 200)
    assert.match(await res.text(), /wsps_gateway_connections/)
  } finally {
    await gw.stop()
    await redis.close()
  }
})
