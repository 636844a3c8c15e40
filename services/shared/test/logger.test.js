import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { test } from 'node:test'
import { createHttpApp } from '../src/http-app.js'
import { createLogger, redactUrl } from '../src/logger.js'

test('redactUrl masks token values in a query and nothing else', () => {
  assert.equal(redactUrl('/sse?symbols=AAPL&token=abc.def.ghi'), '/sse?symbols=AAPL&token=[redacted]')
  assert.equal(redactUrl('/sse?token=abc&symbols=A'), '/sse?token=[redacted]&symbols=A')
  assert.equal(redactUrl('/sse?access_token=x#f'), '/sse?access_token=[redacted]#f')
  assert.equal(redactUrl('/sse?symbols=TOKEN'), '/sse?symbols=TOKEN')
  assert.equal(redactUrl(undefined), undefined)
})

test('a request logged by fastify (our logger instance) shows its URL with the token masked', async () => {
  const lines = /** @type {string[]} */ ([])
  const sink = new Writable({ write (chunk, _enc, cb) { lines.push(String(chunk)); cb() } })
  const logger = createLogger({ level: 'info', name: 't', node: 'n' }, sink)
  const app = createHttpApp(logger)
  app.get('/sse', async (req) => {
    req.log.info({ req }, 'seen')
    throw new Error('boom')
  })
  const res = await app.inject({ url: '/sse?symbols=AAPL&token=secret.jwt.value' })
  assert.equal(res.statusCode, 500)
  await app.close()
  const all = lines.join('')
  assert.match(all, /token=\[redacted\]/)
  assert.doesNotMatch(all, /secret\.jwt\.value/)
})
