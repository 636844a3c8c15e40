// The bar rules of docs/protocol.md (Bars), on the pure builder: buckets,
// o/h/l/c/n, volume from the cumulative field, clock skew, closing by a
// later tick and by the clock.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BarBuilder, barsOf } from '../src/bars/bar-builder.js'

const S = 1000

test('a bar per bucket: t floored to the interval, o/h/l/c of last, n ticks; a later tick closes it', () => {
  const { closed, open } = barsOf(S, [
    { ts: 10_050, last: 5, volume: 100 },
    { ts: 10_300, last: 7, volume: 100 },
    { ts: 10_999, last: 4, volume: 100 },
    { ts: 11_000, last: 6, volume: 100 },
    { ts: 13_500, last: 6.5, volume: 100 }
  ])
  assert.deepEqual(closed, [
    { t: 10_000, o: 5, h: 7, l: 4, c: 4, v: 0, n: 3 },
    { t: 11_000, o: 6, h: 6, l: 6, c: 6, v: 0, n: 1 }
  ])
  // No ticks in 12 000..12 999: no bar for it.
  assert.deepEqual(open, { t: 13_000, o: 6.5, h: 6.5, l: 6.5, c: 6.5, v: 0, n: 1 })
})

test('volume: the rises of the cumulative field; the first tick without a known predecessor adds 0, a fall adds 0', () => {
  const ticks = [
    { ts: 1000, last: 1, volume: 500 },
    { ts: 1100, last: 1, volume: 700 },
    { ts: 1200, last: 1, volume: 650 }, // a new trading day: starts over
    { ts: 1300, last: 1, volume: 900 },
    { ts: 1400, last: 1 }, // no volume: counts nothing, changes no base
    { ts: 2000, last: 1, volume: 1000 }
  ]
  const unknown = barsOf(S, ticks)
  assert.equal(unknown.closed[0].v, 200 + 0 + 250)
  assert.equal(unknown.open?.v, 100)
  const primed = barsOf(S, ticks, { ts: 900, last: 1, volume: 450 })
  assert.equal(primed.closed[0].v, 50 + 200 + 250, 'a known predecessor: its rise counts')
})

test('skew: a tick stamped before the open bar goes into it; closed bars never reopen', () => {
  const { closed, open } = barsOf(S, [
    { ts: 1500, last: 10, volume: 0 },
    { ts: 2100, last: 11, volume: 10 },
    { ts: 1900, last: 9, volume: 20 }, // another fetcher replica's clock is behind
    { ts: 2500, last: 12, volume: 30 }
  ])
  assert.deepEqual(closed, [{ t: 1000, o: 10, h: 10, l: 10, c: 10, v: 0, n: 1 }])
  assert.deepEqual(open, { t: 2000, o: 11, h: 12, l: 9, c: 12, v: 30, n: 3 })
})

test('closeDue: the clock closes a quiet bar at its end, once; a late tick of it goes into the next bar', () => {
  const b = new BarBuilder(S)
  b.tick({ ts: 5200, last: 3, volume: 1 })
  assert.equal(b.closeDue(5999), null, 'not over yet')
  assert.deepEqual(b.closeDue(6000), { t: 5000, o: 3, h: 3, l: 3, c: 3, v: 0, n: 1 })
  assert.equal(b.closeDue(9000), null, 'closed once')
  assert.equal(b.open, null)
  // A tick of the closed bucket that came too late: the bar after it.
  assert.equal(b.tick({ ts: 5900, last: 4, volume: 2 }), null)
  assert.deepEqual(b.open, { t: 6000, o: 4, h: 4, l: 4, c: 4, v: 1, n: 1 })
  // A tick of a later bucket closes it and opens its own.
  assert.deepEqual(b.tick({ ts: 8100, last: 5, volume: 2 }), { t: 6000, o: 4, h: 4, l: 4, c: 4, v: 1, n: 1 })
  assert.deepEqual(b.open, { t: 8000, o: 5, h: 5, l: 5, c: 5, v: 0, n: 1 })
})

test('ticks without a numeric last are skipped; their volume counts with the next rise', () => {
  const { open } = barsOf(60_000, [
    { ts: 60_000, last: 2, volume: 10 },
    { ts: 60_001, last: null, volume: 15 },
    { ts: 60_002, last: 3, volume: 20 }
  ])
  assert.deepEqual(open, { t: 60_000, o: 2, h: 3, l: 2, c: 3, v: 10, n: 2 })
})

test('the same ticks make the same closed bars whatever bar a builder starts at (pods starting apart)', () => {
  /** @type {{ts: number, last: number, volume: number}[]} */
  const ticks = []
  let v = 0
  for (let i = 0; i < 200; i++) ticks.push({ ts: 100_000 + i * 137, last: 100 + (i % 7), volume: (v += 10 * (i % 3)) })
  const all = barsOf(S, ticks).closed
  // A builder that starts at the first tick of a bar, primed with the tick before.
  const from = ticks.findIndex((t) => t.ts >= 110_000)
  const late = barsOf(S, ticks.slice(from), ticks[from - 1]).closed
  assert.deepEqual(late, all.filter((b) => b.t >= 110_000))
})
