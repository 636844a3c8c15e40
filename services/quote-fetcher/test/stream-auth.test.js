// The ws-stream credentials (stream-auth.js): templates filled from secret
// settings only, the vendors' auth answers read, and start-up errors that
// say what is wrong without printing a credential.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { compileAuth, loggableUrl, streamUrl } from '../src/providers/stream-auth.js'
import { loadFetcherConfig } from '../src/config.js'
import { documented } from './feeding-doc.js'

const CREDENTIALS = { key: 'AKID"1', secret: 'se\\cret', token: 'tok en' }
// The WSPS_STREAM_AUTH_REPLIES of docs/feeding.md (checked below).
const ALPACA = '{"ok":{"T":"success","msg":"authenticated"},"refused":{"T":"error"},"limited":{"T":"error","code":406},"code":"code","message":"msg"}'
const POLYGON = '{"ok":{"ev":"status","status":"auth_success"},"refused":{"ev":"status","status":"auth_failed"},"limited":{"ev":"status","status":"max_connections"},"code":"status","message":"message"}'

test('{key}, {secret}, {token} become JSON strings in the auth message and bare values in headers', () => {
  const a = compileAuth({
    auth: '{"action":"auth","key":{key},"secret":{secret},"t":{token}}',
    headers: '{"APCA-API-KEY-ID":"{key}","APCA-API-SECRET-KEY":"{secret}","Authorization":"Bearer {token}"}',
    replies: ''
  }, CREDENTIALS)
  assert.deepEqual(JSON.parse(/** @type {string} */ (a.frame)), { action: 'auth', key: 'AKID"1', secret: 'se\\cret', t: 'tok en' })
  assert.deepEqual(a.headers, { 'APCA-API-KEY-ID': 'AKID"1', 'APCA-API-SECRET-KEY': 'se\\cret', Authorization: 'Bearer tok en' })
  assert.equal(a.waits, false)
  assert.equal(compileAuth({ auth: '', headers: '', replies: '' }, CREDENTIALS).frame, null)
})

test('Alpaca\'s answers: ok, refusal with code and message, the 406 limit told apart; records of an array are each looked at', () => {
  const { reply, waits } = compileAuth({ auth: '', headers: '', replies: ALPACA }, CREDENTIALS)
  assert.equal(waits, true)
  assert.equal(reply([{ T: 'success', msg: 'connected' }]), null)
  assert.deepEqual(reply([{ T: 'success', msg: 'connected' }, { T: 'success', msg: 'authenticated' }]), { kind: 'ok', code: '', message: 'authenticated' })
  assert.deepEqual(reply([{ T: 'error', code: 402, msg: 'auth failed' }]), { kind: 'refused', code: '402', message: 'auth failed' })
  assert.deepEqual(reply([{ T: 'error', code: 406, msg: 'connection limit exceeded' }]), { kind: 'limited', code: '406', message: 'connection limit exceeded' })
  assert.equal(reply('nonsense'), null)
})

test('Polygon\'s answers: auth_success, auth_failed, max_connections, one object or an array', () => {
  const { reply } = compileAuth({ auth: '{"action":"auth","params":{key}}', headers: '', replies: POLYGON }, CREDENTIALS)
  assert.equal(reply([{ ev: 'status', status: 'connected', message: 'Connected Successfully' }]), null)
  assert.equal(reply([{ ev: 'status', status: 'auth_success', message: 'authenticated' }])?.kind, 'ok')
  assert.deepEqual(reply({ ev: 'status', status: 'auth_failed', message: 'authentication failed' }), { kind: 'refused', code: 'auth_failed', message: 'authentication failed' })
  assert.equal(reply([{ ev: 'status', status: 'max_connections', message: 'Maximum number of websocket connections exceeded.' }])?.kind, 'limited')
})

test('a matcher value may be a list: one of', () => {
  const { reply } = compileAuth({ auth: '', headers: '', replies: '{"ok":{"T":"success","msg":"authenticated"},"refused":{"T":"error","code":[401,402,404]}}' }, CREDENTIALS)
  assert.equal(reply([{ T: 'error', code: 404 }])?.kind, 'refused')
  assert.equal(reply([{ T: 'error', code: 405 }]), null)
})

test('the URL takes URL-encoded credentials; only scheme, host and path are logged', () => {
  assert.equal(streamUrl('wss://ws.example.com/v1?token={token}', CREDENTIALS), 'wss://ws.example.com/v1?token=tok%20en')
  assert.equal(loggableUrl('wss://user:pw@ws.example.com/v1?token=abc'), 'wss://ws.example.com/v1')
})

/** @param {Record<string, string>} env */
const load = (env) => loadFetcherConfig({ WSPS_PROVIDER: 'ws-stream', WSPS_STREAM_URL: 'wss://vendor.example/stream', ...env })

/**
 * @param {Record<string, string>} env
 * @param {RegExp} message
 */
function refused (env, message) {
  assert.throws(() => load(env), (/** @type {any} */ err) => {
    assert.equal(err.code, 'WSPS_ERR_CONFIG')
    assert.match(err.message, message)
    for (const v of [env.WSPS_STREAM_KEY, env.WSPS_STREAM_SECRET]) if (v) assert.ok(!err.message.includes(v), 'no credential in the error')
    return true
  })
}

test('start-up refuses bad templates with a clear error that never shows a credential', () => {
  refused({ WSPS_STREAM_AUTH: '{"action":"auth","key":"{key}"}', WSPS_STREAM_KEY: 'AKIDSECRETISH' }, /WSPS_STREAM_AUTH is not JSON once the credentials are filled in.*"key":""KEY""/)
  refused({ WSPS_STREAM_AUTH: '{"action":"auth","key":{key},"secret":{secret}}', WSPS_STREAM_KEY: 'AKIDSECRETISH' }, /uses \{secret\} but WSPS_STREAM_SECRET is empty/)
  refused({ WSPS_STREAM_HEADERS: '["APCA-API-KEY-ID"]' }, /WSPS_STREAM_HEADERS must be a JSON object/)
  refused({ WSPS_STREAM_HEADERS: '{"bad header":"x"}' }, /"bad header" is not a header name/)
  refused({ WSPS_STREAM_HEADERS: '{"X-Key":"{key}"}', WSPS_STREAM_KEY: 'a\nb' }, /line break/)
  refused({ WSPS_STREAM_AUTH_REPLIES: '{"refused":{"T":"error"}}' }, /must have "ok"/)
  refused({ WSPS_STREAM_AUTH_REPLIES: '{"ok":{"T":{"x":1}}}' }, /"WSPS_STREAM_AUTH_REPLIES: ok.T" must be a value/)
  refused({ WSPS_STREAM_AUTH_REPLIES: '{"ok":{},"extra":1}' }, /unknown key "extra"/)
  refused({ WSPS_STREAM_URL: 'wss://ws.example/?token={token}' }, /WSPS_STREAM_URL uses \{token\} but WSPS_STREAM_TOKEN is empty/)
})

test('the documented Alpaca and Polygon settings load; key and secret are secret settings (`_FILE`, redacted)', async () => {
  const c = load({
    WSPS_STREAM_KEY: 'AKID',
    WSPS_STREAM_SECRET: 'S',
    WSPS_STREAM_AUTH: '{"action":"auth","key":{key},"secret":{secret}}',
    WSPS_STREAM_HEADERS: '{"APCA-API-KEY-ID":"{key}","APCA-API-SECRET-KEY":"{secret}"}',
    WSPS_STREAM_AUTH_REPLIES: ALPACA,
    WSPS_STREAM_MAX_CONNECTIONS: '1'
  })
  assert.equal(c.streamMaxConnections, 1)
  assert.equal(load({ WSPS_STREAM_KEY: 'K', WSPS_STREAM_AUTH: '{"action":"auth","params":{key}}', WSPS_STREAM_AUTH_REPLIES: POLYGON }).streamAuthReplies, POLYGON)
  const { fetcherSettings } = await import('../src/config.js')
  for (const env of ['WSPS_STREAM_KEY', 'WSPS_STREAM_SECRET', 'WSPS_STREAM_TOKEN']) assert.equal(fetcherSettings.find((s) => s.env === env)?.secret, true, env)
})

test('the auth settings docs/feeding.md shows are the ones tested here and in ws-stream-session.test.js', () => {
  assert.deepEqual(documented('WSPS_STREAM_AUTH_REPLIES').sort(), [ALPACA, POLYGON].sort())
  assert.deepEqual(documented('WSPS_STREAM_AUTH').sort(), ['{"action":"auth","key":{key},"secret":{secret}}', '{"action":"auth","params":{key}}'].sort())
})
