import assert from 'node:assert/strict'
import { test } from 'node:test'
import { RedisTlsError } from '../src/errors.js'
import { redisTlsError } from '../src/redis.js'

const settings = { redisTlsCaFile: '/etc/ca.crt' }

test('a certificate the CA file does not vouch for is WSPS_ERR_REDIS_TLS naming the file', () => {
  for (const code of ['SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED']) {
    const e = redisTlsError(Object.assign(new Error('x'), { code }), settings)
    assert.ok(e instanceof RedisTlsError, code)
    assert.equal(e.code, 'WSPS_ERR_REDIS_TLS')
    assert.match(e.message, /not trusted by WSPS_REDIS_TLS_CA_FILE=\/etc\/ca\.crt/)
    assert.equal(/** @type {any} */ (e.cause).code, code)
  }
})

test('ioredis\' Sentinel text of the same failures is recognised too', () => {
  const e = redisTlsError(new Error('All sentinels are unreachable. Retrying from scratch after 2000ms. Last error: self-signed certificate in certificate chain'), { redisTlsCaFile: '' })
  assert.equal(e?.code, 'WSPS_ERR_REDIS_TLS')
  assert.match(e.message, /system CAs/)
})

test('a failed handshake (plain-text server) is WSPS_ERR_REDIS_TLS; other errors are not', () => {
  assert.match(redisTlsError(Object.assign(new Error('wrong version number'), { code: 'ERR_SSL_WRONG_VERSION_NUMBER' }), settings)?.message ?? '', /handshake failed/)
  assert.equal(redisTlsError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }), settings), null)
  assert.equal(redisTlsError(new Error('All sentinels are unreachable. Retrying from scratch after 2000ms. Last error: Connection is closed.'), settings), null)
})
