// WSPS_REDIS_MODE=sentinel: its settings are checked at start-up (both
// services' loaders throw a ConfigError with these problems), with messages
// naming the variable to fix.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { loadConfig } from '@wsps/shared/config'
import { commonSettings, parseHostPort, redisSettingsProblems } from '@wsps/shared/common-settings'

/** @param {Record<string, string>} env */
const load = (env) => /** @type {any} */ (loadConfig(commonSettings, env))
/** @param {Record<string, string>} env */
const problemsOf = (env) => redisSettingsProblems(load(env))

test('parseHostPort: names, IPv4, bracketed IPv6; refuses a missing or impossible port', () => {
  assert.deepEqual(parseHostPort('wsps-redis-sentinel-0.wsps-redis-sentinel-headless:26379'), { host: 'wsps-redis-sentinel-0.wsps-redis-sentinel-headless', port: 26379 })
  assert.deepEqual(parseHostPort('10.0.0.7:26379'), { host: '10.0.0.7', port: 26379 })
  assert.deepEqual(parseHostPort('[::1]:26379'), { host: '::1', port: 26379 })
  for (const bad of ['sentinel', 'sentinel:', ':26379', 'sentinel:0', 'sentinel:70000', 'redis://s:1', 's:1:2']) assert.equal(parseHostPort(bad), null, bad)
})

test(`WSPS_REDIS_MODE=sentinel loads the Sentinels, the master name and the Sentinel password`, () => {
  const c = load({ WSPS_REDIS_MODE: 'sentinel', WSPS_REDIS_SENTINELS: 's0:26379, s1:26379,s2:26379', WSPS_REDIS_MASTER_NAME: 'wsps', WSPS_REDIS_SENTINEL_PASSWORD: 'pw' })
  assert.equal(c.redisMode, 'sentinel')
  assert.deepEqual(c.redisSentinels, ['s0:26379', 's1:26379', 's2:26379'])
  assert.equal(c.redisMasterName, 'wsps')
  assert.equal(c.redisSentinelPassword, 'pw')
})

test(`sentinel mode without Sentinels or master name, or with a bad address, fails at start-up`, () => {
  assert.deepEqual(problemsOf({ WSPS_REDIS_MODE: 'sentinel' }), [
    'WSPS_REDIS_SENTINELS must list the Sentinels (host:port,host:port,...) when WSPS_REDIS_MODE=sentinel',
    'WSPS_REDIS_MASTER_NAME must name the monitored primary when WSPS_REDIS_MODE=sentinel'
  ])
  assert.deepEqual(problemsOf({ WSPS_REDIS_MODE: 'sentinel', WSPS_REDIS_SENTINELS: 's0:26379,s1', WSPS_REDIS_MASTER_NAME: 'wsps' }), [
    'WSPS_REDIS_SENTINELS: not host:port: "s1"'
  ])
})

test(`Sentinel settings without WSPS_REDIS_MODE=sentinel are refused, not ignored`, () => {
  assert.deepEqual(problemsOf({ WSPS_REDIS_SENTINELS: 's0:26379', WSPS_REDIS_MASTER_NAME: 'wsps', WSPS_REDIS_SENTINEL_PASSWORD: 'pw' }), [
    'WSPS_REDIS_SENTINELS is set but WSPS_REDIS_MODE is standalone: it is used only with WSPS_REDIS_MODE=sentinel',
    'WSPS_REDIS_MASTER_NAME is set but WSPS_REDIS_MODE is standalone: it is used only with WSPS_REDIS_MODE=sentinel',
    'WSPS_REDIS_SENTINEL_PASSWORD is set but WSPS_REDIS_MODE is standalone: it is used only with WSPS_REDIS_MODE=sentinel'
  ])
})

