// WSPS_BROKER=nats is refused at start-up, with the reason, until the
// quote-fetcher runs on NATS (docs/architecture.md, A second engine: NATS JetStream):
// never started half on one engine.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError } from '@wsps/shared/errors'
import { loadFetcherConfig } from '../src/config.js'

test('WSPS_BROKER=nats is refused, saying why; redis (the default) loads', () => {
  assert.equal(loadFetcherConfig({}).broker, 'redis')
  assert.throws(() => loadFetcherConfig({ WSPS_BROKER: 'nats', WSPS_NATS_URL: 'nats://127.0.0.1:4222' }), (/** @type {any} */ err) => {
    assert.ok(err instanceof ConfigError)
    assert.deepEqual(err.problems.map((/** @type {string} */ p) => p.split(':')[0]), ['WSPS_BROKER=nats'])
    assert.match(err.message, /cannot publish on NATS yet/)
    return true
  })
})
