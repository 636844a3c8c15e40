// WSPS_PAGE_TOKEN_URL: the served page learns where its tokens come from
// (public/token-provider.js reads the meta tag); validated at start-up.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { ConfigError } from '@wsps/shared/errors'
import { loadGatewayConfig } from '../src/config.js'
import { registerHttpRoutes, withTokenUrl } from '../src/http-routes.js'

const AUTHED = { WSPS_AUTH_MODE: 'hs256', WSPS_AUTH_HS256_SECRET: 'x'.repeat(32) }
const META = '<meta name="wsps-token-url" content="/local-token">'

/** @param {string} url */
async function pageApp (url) {
  const app = Fastify()
  await registerHttpRoutes(app, { broker: () => ({ alive: true, aliveForMs: 0 }), readiness: () => ({}), registry: null, staticDir: '', pageTokenUrl: url })
  return app
}

test('a same-origin path is accepted; anything else is refused at start-up with the setting named', () => {
  assert.equal(loadGatewayConfig({ ...AUTHED, WSPS_PAGE_TOKEN_URL: '/local-token' }).pageTokenUrl, '/local-token')
  assert.equal(loadGatewayConfig({ ...AUTHED, WSPS_PAGE_TOKEN_URL: '/app/wsps-token?aud=quotes' }).pageTokenUrl, '/app/wsps-token?aud=quotes')
  assert.equal(loadGatewayConfig({}).pageTokenUrl, '')
  for (const bad of ['https://evil.example/t', '//evil.example/t', 'token', '/t"><script>', '/a b', '/a\\b']) {
    assert.throws(() => loadGatewayConfig({ ...AUTHED, WSPS_PAGE_TOKEN_URL: bad }), (e) => e instanceof ConfigError && /WSPS_PAGE_TOKEN_URL must be a same-origin path/.test(e.message), bad)
  }
  assert.throws(() => loadGatewayConfig({ WSPS_PAGE_TOKEN_URL: '/t' }), /WSPS_AUTH_MODE=none checks none/)
  assert.throws(() => loadGatewayConfig({ ...AUTHED, WSPS_PAGE_TOKEN_URL: '/t', WSPS_STATIC_DIR: '-' }), /WSPS_STATIC_DIR=- serves none/)
})

test('the page is served with the token URL before its first module; the other files as they are', async (t) => {
  const app = await pageApp('/local-token')
  t.after(() => app.close())
  for (const path of ['/', '/index.html']) {
    const res = await app.inject({ method: 'GET', url: path })
    assert.equal(res.statusCode, 200, path)
    assert.match(String(res.headers['content-type']), /^text\/html/)
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.ok(res.body.includes(META), `${path} has the meta tag`)
    assert.ok(res.body.indexOf(META) < res.body.indexOf('<script'), 'before any script')
  }
  const js = await app.inject({ method: 'GET', url: '/token-provider.js' })
  assert.equal(js.statusCode, 200)
  assert.ok(js.body.includes('wsps-token-url'))
})

test('without it the bundled page is served untouched', async (t) => {
  const app = await pageApp('')
  t.after(() => app.close())
  const res = await app.inject({ method: 'GET', url: '/' })
  assert.equal(res.statusCode, 200)
  assert.ok(!res.body.includes('name="wsps-token-url"'))
})

test('withTokenUrl needs the charset meta to anchor on', () => {
  assert.throws(() => withTokenUrl('<html><head></head></html>', '/t'), /no <meta charset>/)
  assert.equal(withTokenUrl('<meta charset="utf-8"><title>', '/t'), '<meta charset="utf-8">\n  <meta name="wsps-token-url" content="/t"><title>')
})
