// WSPS_BROKER and WSPS_NATS_URL: checked at start-up by both services'
// loaders (each refuses WSPS_BROKER=nats for now: its own test says why).

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { loadConfig } from '@wsps/shared/config'
import { brokerSettingsProblems, commonSettings } from '@wsps/shared/common-settings'

/** @param {Record<string, string>} env */
const problemsOf = (env) => brokerSettingsProblems(/** @type {any} */ (loadConfig(commonSettings, env)))

test('WSPS_BROKER is redis by default, with no NATS servers', () => {
  const c = /** @type {any} */ (loadConfig(commonSettings, {}))
  assert.equal(c.broker, 'redis')
  assert.deepEqual(c.natsUrls, [])
  assert.deepEqual(problemsOf({}), [])
})

test('WSPS_BROKER takes redis or nats only', () => {
  assert.throws(() => loadConfig(commonSettings, { WSPS_BROKER: 'kafka' }), /WSPS_BROKER/)
})

test('WSPS_NATS_URL: every server a nats://host:port; needed with nats, refused without it', () => {
  assert.deepEqual(problemsOf({ WSPS_BROKER: 'nats', WSPS_NATS_URL: 'nats://n0:4222, nats://10.0.0.7:4222,nats://[::1]:4222' }), [])
  assert.deepEqual(problemsOf({ WSPS_BROKER: 'nats' }), ['WSPS_NATS_URL must list the NATS servers (nats://host:port,...) when WSPS_BROKER=nats'])
  assert.deepEqual(problemsOf({ WSPS_BROKER: 'nats', WSPS_NATS_URL: 'nats://n0:4222,n1:4222,redis://n2:6379' }), ['WSPS_NATS_URL: not nats://host:port: "n1:4222", "redis://n2:6379"'])
  assert.deepEqual(problemsOf({ WSPS_NATS_URL: 'nats://n0:4222' }), ['WSPS_NATS_URL is set but WSPS_BROKER is redis: it is used only with WSPS_BROKER=nats'])
})
