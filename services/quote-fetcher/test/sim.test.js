import assert from 'node:assert/strict'
import { test } from 'node:test'
import { compareDecimal, decimal } from '@wsps/protocol/book'
import { SIM_BOOK_LEVELS, simBook } from '../src/providers/sim-book.js'
import { createSimProvider } from '../src/providers/sim.js'

/** Runs `steps` ticks of one symbol, threading seq like the publish script does. */
async function path (seed, symbol, steps) {
  const sim = createSimProvider({ seed, volatility: 0.001, now: () => 0 })
  const out = []
  /** @type {any} */
  let prev
  for (let seq = 1; seq <= steps; seq++) {
    const [q] = await sim.fetch([symbol], new Map(prev ? [[symbol, prev]] : []), Infinity)
    prev = { ...q, seq }
    out.push(prev)
  }
  return out
}

test('the same seed replays the same market; another seed does not', async () => {
  assert.deepEqual(await path(7, 'AAPL', 50), await path(7, 'AAPL', 50))
  assert.notDeepEqual(await path(7, 'AAPL', 50), await path(8, 'AAPL', 50))
})

test('quotes are sane for many symbols and steps', async () => {
  for (const symbol of ['AAPL', 'BRK.B', 'X', '^GSPC', 'EURUSD=X']) {
    for (const q of await path(42, symbol, 300)) {
      assert.ok(q.bid > 0 && q.ask > q.bid, `${symbol} seq ${q.seq}: bid ${q.bid} < ask ${q.ask}`)
      assert.ok(q.low <= q.last && q.last <= q.high, `${symbol}: low <= last <= high`)
      assert.ok(q.bidSize >= 100 && q.askSize >= 100 && q.volume >= 0)
      for (const f of ['bid', 'ask', 'last', 'open', 'high', 'low', 'prevClose']) assert.ok(Number.isFinite(q[f]), f)
    }
  }
})

test('not every tick changes every field (deltas stay small)', async () => {
  const quotes = await path(1, 'MSFT', 100)
  const unchangedLast = quotes.slice(1).filter((q, i) => q.last === quotes[i].last).length
  assert.ok(unchangedLast > 10 && unchangedLast < 90, `last unchanged in ${unchangedLast} of 99 ticks`)
})

test('sim books: each quote moves its book; the best levels are the quote\'s; sorted, uncrossed, canonical, and the same on every replica', async () => {
  const provider = createSimProvider({ seed: 11, volatility: 0.002, now: () => 1 })
  /** @type {Map<string, any>} */
  const previous = new Map()
  /** @type {import('../src/providers/sim-book.js').Levels | null} */
  let book = null
  let changed = 0
  for (let seq = 1; seq <= 300; seq++) {
    const [q] = await provider.fetch(['SIMB'], previous, Infinity)
    previous.set('SIMB', { ...q, seq })
    const next = simBook({ seed: 11, symbol: 'SIMB', seq, quote: q, previous: book })
    assert.ok(next)
    assert.deepEqual(simBook({ seed: 11, symbol: 'SIMB', seq, quote: q, previous: book }), next, 'a pure function of its inputs')
    assert.deepEqual(next.bids[0], [decimal(String(q.bid)), String(q.bidSize)])
    assert.deepEqual(next.asks[0], [decimal(String(q.ask)), String(q.askSize)])
    for (const [side, sign] of /** @type {const} */ ([['bids', -1], ['asks', 1]])) {
      const levels = next[side]
      assert.ok(levels.length > 10 && levels.length <= SIM_BOOK_LEVELS)
      for (const [p, s] of levels) assert.ok(decimal(p) === p && decimal(s) === s && s !== '0', `${p} ${s} canonical`)
      for (let k = 1; k < levels.length; k++) assert.equal(Math.sign(compareDecimal(levels[k][0], levels[k - 1][0])), sign)
    }
    assert.equal(compareDecimal(next.bids[0][0], next.asks[0][0]) < 0, true, 'not crossed')
    if (book !== null && JSON.stringify(book) !== JSON.stringify(next)) changed++
    book = next
  }
  assert.ok(changed > 250, 'the book moves with nearly every quote')
})
