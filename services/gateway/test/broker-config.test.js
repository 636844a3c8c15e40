// WSPS_BROKER=nats is refused at start-up, with the reason, until the
// gateway runs on NATS (docs/architecture.md, A second engine: NATS JetStream):
// never started half on one engine.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError } from '@wsps/shared/errors'
import { loadGatewayConfig } from '../src/config.js'

test('WSPS_BROKER=nats is refused, saying why; redis (the default) loads', () => {
  assert.equal(loadGatewayConfig({}).broker, 'redis')
  assert.throws(() => loadGatewayConfig({ WSPS_BROKER: 'nats', WSPS_NATS_URL: 'nats://127.0.0.1:4222' }), (/** @type {any} */ err) => {
    assert.ok(err instanceof ConfigError)
    assert.deepEqual(err.problems.map((/** @type {string} */ p) => p.split(':')[0]), ['WSPS_BROKER=nats'])
    assert.match(err.message, /does not run on NATS yet/)
    return true
  })
})
