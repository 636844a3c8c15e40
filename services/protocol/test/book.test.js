import { test } from 'node:test'
import assert from 'node:assert/strict'
import { crc32 as zlibCrc32 } from 'node:zlib'
import { OrderBook, bookChecksum, compareDecimal, crc32, decimal, windowDelta } from '../book.js'

test('decimal: the canonical form of what it accepts, null for the rest', () => {
  const ok = { '007.50': '7.5', '0.000': '0', 0: '0', '64000.5': '64000.5', '0.25': '0.25', 3: '3', '123456789012345.0': '123456789012345', '0.00000001': '0.00000001' }
  for (const [text, canonical] of Object.entries(ok)) assert.equal(decimal(text), canonical, text)
  for (const bad of ['1e5', '-1', '+1', '.5', '5.', '', ' 1', '1,5', '1234567890123456', 'NaN', 1.5, null]) assert.equal(decimal(bad), null, String(bad))
})

test('compareDecimal orders exactly, beyond what doubles tell apart', () => {
  const sorted = ['0', '0.00000001', '0.1', '0.25', '1', '9.99', '10', '100.0000000000001', '100.000000000001', '123456789012345']
  for (let i = 0; i < sorted.length; i++) {
    for (let j = 0; j < sorted.length; j++) assert.equal(Math.sign(compareDecimal(sorted[i], sorted[j])), Math.sign(i - j), `${sorted[i]} vs ${sorted[j]}`)
  }
})

test('crc32 is zlib\'s; the checksum of the documented example is 764765537, of an empty book 2343686810', () => {
  for (const s of ['', '|', 'a', '100.5:2,100.4:1.25|100.6:3', 'x'.repeat(1000)]) assert.equal(crc32(s), zlibCrc32(s), s.slice(0, 20))
  assert.equal(bookChecksum({ bids: [['100.5', '2'], ['100.4', '1.25']], asks: [['100.6', '3']] }), 764765537)
  assert.equal(bookChecksum({ bids: [], asks: [] }), 2343686810)
})

test('OrderBook keeps sides sorted best first; windowDelta applied to a window gives the next one exactly', () => {
  const book = new OrderBook()
  let seed = 5
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 }
  for (let i = 0; i < 2000; i++) {
    const depth = [1, 3, 10][i % 3]
    const before = book.top(depth)
    const side = rnd() < 0.5 ? 'bids' : 'asks'
    const price = side === 'bids' ? String(50 - Math.floor(rnd() * 40) / 8) : String(50 + Math.floor(rnd() * 40) / 8)
    book.apply({ [side]: [[price, rnd() < 0.3 ? '0' : String(Math.floor(rnd() * 100) + 1)]] })
    const after = book.top(depth)
    const held = new OrderBook()
    held.reset(before)
    held.apply(windowDelta(before, after))
    assert.deepEqual(held.top(depth), after)
    for (const [s, sign] of /** @type {const} */ ([['bids', -1], ['asks', 1]])) {
      const prices = book.top(1000)[s].map(([p]) => p)
      for (let k = 1; k < prices.length; k++) assert.equal(Math.sign(compareDecimal(prices[k], prices[k - 1])), sign, `${s} sorted`)
    }
  }
  assert.equal(book.crossed(), false)
  book.apply({ bids: [['60', '1']] })
  assert.equal(book.crossed(), true)
})
