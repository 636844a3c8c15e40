import assert from 'node:assert/strict'
import { test } from 'node:test'
import { wsUrlsFromLocation } from '../public/ws-urls.js'

const at = (/** @type {string} */ href) => ({ href, search: new URL(href).search })

test('default: same-origin /ws, wss behind https', () => {
  assert.deepEqual(wsUrlsFromLocation(at('http://localhost:8080/')), ['ws://localhost:8080/ws'])
  assert.deepEqual(wsUrlsFromLocation(at('https://quotes.example.com/app/')), ['wss://quotes.example.com/ws'])
})

test('?ws= lists gateways of the same host to rotate through', () => {
  const href = `http://127.0.0.1:8081/?ws=${encodeURIComponent('ws://127.0.0.1:8081/ws,ws://127.0.0.1:8082/ws')}`
  assert.deepEqual(wsUrlsFromLocation(at(href)), ['ws://127.0.0.1:8081/ws', 'ws://127.0.0.1:8082/ws'])
})

test('?ws= never points the page at another host or a non-WebSocket scheme', () => {
  const href = `http://localhost:8080/?ws=${encodeURIComponent('wss://evil.example/ws,javascript:alert(1),data:x')}`
  assert.deepEqual(wsUrlsFromLocation(at(href)), ['ws://localhost:8080/ws'])
})
