import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadConfig, redacted } from '../src/config.js'
import { ConfigError } from '../src/errors.js'

/** @type {import('../src/config.js').Setting[]} */
const schema = [
  { env: 'WSPS_PORT_X', key: 'port', type: 'int', min: 1, max: 10, default: 5, doc: '' },
  { env: 'WSPS_FLAG', key: 'flag', type: 'bool', default: false, doc: '' },
  { env: 'WSPS_MODE', key: 'mode', type: 'enum', values: ['a', 'b'], default: 'a', doc: '' },
  { env: 'WSPS_LIST', key: 'list', type: 'list', default: [], doc: '' },
  { env: 'WSPS_URL', key: 'url', type: 'url', protocols: ['redis'], default: 'redis://h:1', doc: '' },
  { env: 'WSPS_SECRET', key: 'secret', type: 'string', default: '', secret: true, doc: '' }
]

test('defaults apply to unset and empty variables', () => {
  assert.deepEqual({ ...loadConfig(schema, { WSPS_FLAG: '' }) }, { port: 5, flag: false, mode: 'a', list: [], url: 'redis://h:1', secret: '' })
})

test('values are parsed by type', () => {
  const c = loadConfig(schema, { WSPS_PORT_X: '7', WSPS_FLAG: 'yes', WSPS_MODE: 'b', WSPS_LIST: 'x, y,,z', WSPS_URL: 'redis://:pw@r:6379' })
  assert.deepEqual({ ...c }, { port: 7, flag: true, mode: 'b', list: ['x', 'y', 'z'], url: 'redis://:pw@r:6379', secret: '' })
  assert.ok(Object.isFrozen(c))
})

test('every problem is reported at once, secrets without their value', () => {
  assert.throws(() => loadConfig(schema, {
    WSPS_PORT_X: '11', WSPS_FLAG: 'maybe', WSPS_MODE: 'c', WSPS_URL: 'http://x', WSPS_TYPO: '1'
  }), (/** @type {ConfigError} */ err) => {
    assert.equal(err.code, 'WSPS_ERR_CONFIG')
    assert.deepEqual(err.problems, [
      'WSPS_PORT_X="11": must be <= 10',
      'WSPS_FLAG="maybe": expected true or false',
      'WSPS_MODE="c": expected one of a, b',
      'WSPS_URL="http://x": scheme must be one of redis',
      'WSPS_TYPO: unknown setting (see docs/configuration.md)'
    ])
    return true
  })
})

test('Kubernetes service-link variables are not taken for typos', () => {
  // every variable Kubernetes injects for a Service wsps-redis (port 6379) and
  // wsps-gateway (named port http), IPv4 and IPv6
  assert.doesNotThrow(() => loadConfig(schema, {
    WSPS_REDIS_SERVICE_HOST: '10.0.0.1',
    WSPS_REDIS_SERVICE_PORT: '6379',
    WSPS_REDIS_PORT: 'tcp://10.0.0.1:6379',
    WSPS_REDIS_PORT_6379_TCP: 'tcp://10.0.0.1:6379',
    WSPS_REDIS_PORT_6379_TCP_PROTO: 'tcp',
    WSPS_REDIS_PORT_6379_TCP_PORT: '6379',
    WSPS_REDIS_PORT_6379_TCP_ADDR: '10.0.0.1',
    WSPS_GATEWAY_SERVICE_HOST: 'fd00::2',
    WSPS_GATEWAY_SERVICE_PORT_HTTP: '8080',
    WSPS_GATEWAY_PORT: 'tcp://[fd00::2]:8080'
  }))
})

test('a _PORT name whose value is not a service link is an unknown setting, not ignored', () => {
  // WSPS_METRIC_PORT=9100 is a typo of a port setting: Kubernetes never sets
  // <SERVICE>_PORT to a bare number, so it must not start on the default port
  assert.throws(() => loadConfig(schema, {
    WSPS_METRIC_PORT: '9100',
    WSPS_REDIS_SERVICE_HOST: 'redis.local',
    WSPS_REDIS_PORT_6379_TCP_PORT: 'six'
  }), (/** @type {ConfigError} */ err) => {
    assert.deepEqual(err.problems, [
      'WSPS_METRIC_PORT: unknown setting (see docs/configuration.md)',
      'WSPS_REDIS_SERVICE_HOST: unknown setting (see docs/configuration.md)',
      'WSPS_REDIS_PORT_6379_TCP_PORT: unknown setting (see docs/configuration.md)'
    ])
    return true
  })
})

test('a secret can come from <NAME>_FILE and is redacted for logs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wsps-config-'))
  writeFileSync(join(dir, 's'), 'hunter2\n')
  const c = loadConfig(schema, { WSPS_SECRET_FILE: join(dir, 's'), WSPS_URL: 'redis://:pw@r:1' })
  assert.equal(c.secret, 'hunter2')
  assert.deepEqual(redacted(schema, c), { ...c, secret: '[redacted]', url: 'redis://:redacted@r:1' })
  assert.throws(() => loadConfig(schema, { WSPS_SECRET_FILE: join(dir, 'missing') }), ConfigError)
})
