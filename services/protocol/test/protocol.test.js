import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CloseCode, ErrorCode, Limits, NO_RECONNECT_CODES, SYMBOL_PATTERN, continues } from '../index.js'

test('continues(): a delta applies on top of base, else on top of seq - 1', () => {
  assert.equal(continues({ seq: 5 }, 4), true)
  assert.equal(continues({ seq: 5 }, 3), false)
  assert.equal(continues({ seq: 9, base: 4 }, 4), true)
  assert.equal(continues({ seq: 9, base: 4 }, 8), false)
})

test('SYMBOL_PATTERN accepts tickers and rejects everything else', () => {
  for (const s of ['AAPL', 'BRK.B', '^GSPC', 'EURUSD=X', 'ES-F', 'A'.repeat(16)]) assert.match(s, SYMBOL_PATTERN)
  for (const s of ['', 'aapl', 'A'.repeat(17), 'A B', 'AAPL\n', '../x']) assert.doesNotMatch(s, SYMBOL_PATTERN)
})

test('the contract is frozen and its codes are distinct', () => {
  for (const o of [ErrorCode, CloseCode, Limits, NO_RECONNECT_CODES]) assert.ok(Object.isFrozen(o))
  assert.equal(new Set(Object.values(CloseCode)).size, Object.values(CloseCode).length)
  for (const [k, v] of Object.entries(ErrorCode)) assert.equal(k, v)
  assert.ok(Number.isInteger(Limits.MAX_SYMBOLS_PER_REQUEST) && Limits.MAX_SYMBOLS_PER_REQUEST > 0)
})
