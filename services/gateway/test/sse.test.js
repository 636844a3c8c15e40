import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ErrorCode } from '@wsps/protocol'
import { SseParser, sseUrlFor } from '@wsps/client/sse'
import { parseSymbols } from '../src/sse-server.js'
import { firstEventId } from '../src/sse-transport.js'

test('SseParser: events across chunk boundaries, CRLF and LF, comments, ids', () => {
  const p = new SseParser()
  /** @type {({event: string, data: string} | null)[]} */
  const out = []
  const emit = (/** @type {{event: string, data: string} | null} */ ev) => out.push(ev)
  p.push('id: 7\nevent: hel', emit)
  p.push('lo\ndata: {"op":"hello"}\n\n:\n\r\nid: 8\r\ndata: a\r\ndata:b\r\n\r\n', emit)
  assert.deepEqual(out, [{ event: 'hello', data: '{"op":"hello"}' }, null, { event: 'message', data: 'a\nb' }])
  assert.equal(p.lastEventId, '8')
})

test('sseUrlFor: /sse beside the WebSocket endpoint, scheme mapped, query dropped', () => {
  assert.equal(sseUrlFor('ws://h:1/ws'), 'http://h:1/sse')
  assert.equal(sseUrlFor('wss://h/quotes/ws?x=1'), 'https://h/quotes/sse')
})

test('firstEventId: Last-Event-ID + 1 for a decimal count, else 1', () => {
  assert.equal(firstEventId('41'), 42)
  for (const bad of [undefined, '', 'x', '-1', '1e3', '9'.repeat(16)]) assert.equal(firstEventId(bad), 1, String(bad))
})

test('parseSymbols: comma-separated, deduplicated; bad symbols, too many and repeats are coded', () => {
  assert.deepEqual(parseSymbols(undefined, 5), { ok: true, symbols: [] })
  assert.deepEqual(parseSymbols('AAPL,MSFT,AAPL', 5), { ok: true, symbols: ['AAPL', 'MSFT'] })
  const bad = parseSymbols('AAPL,,x', 5)
  assert.equal(!bad.ok && bad.error.code, ErrorCode.BAD_SYMBOL)
  assert.deepEqual(!bad.ok && bad.error.symbols, ['', 'x'])
  const many = parseSymbols('A,B,C', 2)
  assert.equal(!many.ok && many.error.code, ErrorCode.TOO_MANY_SUBSCRIPTIONS)
  assert.deepEqual(!many.ok && many.error.symbols, ['C'])
  const twice = parseSymbols(['A', 'B'], 5)
  assert.equal(!twice.ok && twice.error.code, ErrorCode.BAD_REQUEST)
})
