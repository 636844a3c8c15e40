// The book section's pure parts: the publisher's random walk (book-walk.js)
// and the figures and Markdown of its report (sections/books-report.js).

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { OrderBook, bookChecksum, compareDecimal, decimal } from '@wsps/protocol/book'
import { BookWalk, priceOf } from '../src/book-walk.js'
import { bookFigures, booksSection, fmtSpread, spread } from '../src/sections/books-report.js'
import { sortedQuantiles, wsHeader } from '../src/sections/books.js'

test('the walk is seeded, canonical, never crossed, and its updates rebuild its book', () => {
  const a = new BookWalk({ seed: 7, mid: 10_000, levels: 40 })
  const b = new BookWalk({ seed: 7, mid: 10_000, levels: 40 })
  const book = new OrderBook()
  book.reset(a.snapshot())
  assert.equal(a.snapshot().bids.length, 40)
  assert.deepEqual(a.snapshot().bids[0], [priceOf(9999), a.snapshot().bids[0][1]], 'best bid just below the mid')
  for (let i = 0; i < 5000; i++) {
    const u = a.next()
    assert.deepEqual(b.next(), u, 'the same seed walks the same way')
    for (const [p, s] of [...u.bids, ...u.asks]) {
      assert.equal(decimal(p), p, `canonical price ${p}`)
      assert.equal(decimal(s), s, `canonical size ${s}`)
    }
    book.apply(u)
    assert.ok(!book.crossed(), `crossed after update ${i}`)
  }
  const snap = a.snapshot()
  assert.equal(bookChecksum(book.top(Infinity)), bookChecksum(snap), 'the updates applied in order give the walk\'s own book')
  for (let i = 1; i < snap.bids.length; i++) assert.ok(compareDecimal(snap.bids[i - 1][0], snap.bids[i][0]) > 0, 'bids best first')
})

test('the walk\'s updates are near the top: nearly all change one of the best 25 levels', () => {
  const w = new BookWalk({ seed: 3, mid: 50_000, levels: 40 })
  let top = 0
  let deep = 0
  const n = 4000
  for (let i = 0; i < n; i++) {
    const mid = w.mid
    const u = w.next()
    const away = [...u.bids.map(([p]) => mid - Math.round(Number(p) * 100)), ...u.asks.map(([p]) => Math.round(Number(p) * 100) - mid)]
    if (away.some((d) => d <= 25)) top++
    if (away.some((d) => d > 25)) deep++
  }
  assert.ok(top / n > 0.95, `${top} of ${n} updates change the best 25 levels`)
  assert.ok(deep > 0, 'some change deeper levels')
  assert.throws(() => new BookWalk({ seed: 1, mid: 100, levels: 0 }), TypeError)
})

/** @param {Partial<import('../src/sections/books-report.js').BookStep>} s */
const step = (s) => ({ server: 'wsps', subscribers: 1000, framesPerSec: 1000, cores: 0.5, framesPerCore: 2000, p50: 3, p99: 20, bytesPerFrame: 150, mismatches: 0, gaps: 0, pass: true, ...s })

test('a server\'s figure is its best passing step per core; mismatches count from every step', () => {
  const f = bookFigures([
    step({ subscribers: 1000, framesPerCore: 2000 }),
    step({ subscribers: 5000, framesPerCore: 9000 }),
    step({ subscribers: 10_000, framesPerCore: 12_000, p99: 400, pass: false, mismatches: 2 }),
    step({ server: 'naive', framesPerCore: 500, pass: false, gaps: 1 })
  ])
  assert.equal(f.wsps.best?.subscribers, 5000)
  assert.equal(f.wsps.mismatches, 2)
  assert.equal(f.wsps.steps, 3)
  assert.equal(f.naive.best, null)
  assert.equal(f.naive.gaps, 1)
})

test('median and range over runs', () => {
  assert.deepEqual(spread([3, null, 1, 2]), { median: 2, min: 1, max: 3, n: 3 })
  assert.equal(spread([4, 2])?.median, 3)
  assert.equal(spread([null]), null)
  assert.equal(fmtSpread(spread([41_000, 38_500, 45_200])), '41000 (38500-45200)')
  assert.equal(fmtSpread(spread([0.123])), '0.12')
  assert.equal(fmtSpread(null), '-')
})

test('the Markdown table: one row per server, medians over runs, every step listed', () => {
  const run = (/** @type {number} */ perCore) => ({
    params: { booksCount: 50, booksRate: 30, booksMeasureMs: 5000, booksSettleMs: 2000 },
    depth: 25,
    steps: [step({ framesPerCore: perCore }), step({ server: 'naive', subscribers: 400, failed: 600, framesPerCore: 700, bytesPerFrame: 990, p99: 300, pass: false })]
  })
  const failed = run(9000)
  failed.steps[0].pass = false
  assert.match(booksSection([run(2000), failed]).join('\n'), /\| wsps \| 2000 \[1 of 2 runs passed a step\] \|/)
  const md = booksSection([run(2000), run(3000), run(4000)]).join('\n')
  const wsps = md.split('\n').find((l) => l.startsWith('| wsps |'))
  assert.match(String(wsps), /^\| wsps \| 3000 \(2000-4000\) \| 1000 \|/)
  assert.match(md, /\| naive \| no step passed \|/)
  assert.match(md, /\| 1 \| naive \| 400 of 1000 \|/)
  assert.equal(md.split('\n').filter((l) => /^\| \d \| (wsps|naive) \|/.test(l)).length, 6)
  assert.deepEqual(booksSection([{ error: 'boom' }]), ['## Order books (books section)', '', 'Failed: boom', ''])
  assert.deepEqual(booksSection([]), [])
})

test('a server frame\'s header size (RFC 6455): 2, 4 or 10 bytes', () => {
  assert.deepEqual([wsHeader(125), wsHeader(126), wsHeader(65_535), wsHeader(65_536)], [2, 4, 4, 10])
})

test('quantiles of the feed probe\'s lags', () => {
  assert.deepEqual(sortedQuantiles([5, 1, 3, 2, 4], [0.5, 0.99]), [3, 5])
  assert.ok(sortedQuantiles([], [0.5]).every(Number.isNaN))
})
