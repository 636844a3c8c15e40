import assert from 'node:assert/strict'
import { test } from 'node:test'
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
