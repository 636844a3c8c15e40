// The campaign's checker on synthetic histories: each rule sees what it
// must and nothing else.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkTicks, covered, emptyTicks, episodes, readiness, untoldStaleness, verdict } from '../checker.js'

/** @typedef {import('../checker.js').Ev} Ev */

/**
 * Quotes of one symbol, one epoch, every 50 ms, ts = arrival - 10 ms.
 *
 * @param {number[]} seqs
 * @param {{s?: string, ep?: string, from?: number, lagMs?: number}} [o]
 * @returns {Ev[]}
 */
const ticks = (seqs, { s = 'A', ep = 'e1', from = 1000, lagMs = 10 } = {}) =>
  seqs.map((seq, i) => ({ k: 'q', s, seq, ep, ts: from + i * 50 - lagMs, at: from + i * 50, snap: false }))

const live = (/** @type {number} */ at) => /** @type {Ev} */ ({ k: 'status', state: 'live', at })

test('an unbroken stream: nothing lost, duplicated, reordered or stale', () => {
  const { figures, findings } = checkTicks([live(0), ...ticks([1, 2, 3, 4, 5])])
  assert.deepEqual(figures, { ...emptyTicks(), got: 5 })
  assert.deepEqual(findings, [])
})

test('a hole in seq: untold, told by recovered: false, or noticed by the client\'s gap event', () => {
  const h = ticks([1, 2, 6, 7])
  assert.equal(checkTicks(h).figures.lostUntold, 3)
  const told = [...h.slice(0, 2), /** @type {Ev} */ ({ k: 'rec', s: 'A', ok: false, at: 1075 }), ...h.slice(2)]
  assert.deepEqual([checkTicks(told).figures.lostTold, checkTicks(told).figures.lostUntold], [3, 0])
  // recovered: true then a hole is a lie: untold.
  const lied = [...h.slice(0, 2), /** @type {Ev} */ ({ k: 'rec', s: 'A', ok: true, at: 1075 }), ...h.slice(2)]
  assert.equal(checkTicks(lied).figures.lostUntold, 3)
  const noticed = [...h.slice(0, 2), /** @type {Ev} */ ({ k: 'gap', s: 'A', at: 1075 }), ...h.slice(2)]
  assert.deepEqual([checkTicks(noticed).figures.lostNoticed, checkTicks(noticed).figures.lostUntold], [3, 0])
  // A telling covers only the next hole.
  const later = [...told, ...ticks([9], { from: 1300 })]
  assert.deepEqual([checkTicks(later).figures.lostTold, checkTicks(later).figures.lostUntold], [3, 1])
})

test('a new epoch restarts the count; an old epoch coming back is out of order', () => {
  const h = [...ticks([40, 41]), ...ticks([1, 2], { ep: 'e2', from: 2000 })]
  assert.deepEqual([checkTicks(h).figures.epochChanges, checkTicks(h).figures.lostUntold, checkTicks(h).figures.outOfOrder], [1, 0, 0])
  const back = [...h, ...ticks([42], { from: 3000 })]
  assert.equal(checkTicks(back).figures.outOfOrder, 1)
})

test('duplicates and reordering are told apart', () => {
  const dup = checkTicks(ticks([1, 2, 3, 3, 4])).figures
  assert.deepEqual([dup.duplicates, dup.outOfOrder, dup.lostUntold], [1, 0, 0])
  const swapped = checkTicks(ticks([1, 3, 2, 4])).figures
  assert.deepEqual([swapped.duplicates, swapped.outOfOrder], [0, 1])
  // The hole 2 is counted when 3 arrives (told by nothing): reordering is also a loss until then.
  assert.equal(swapped.lostUntold, 1)
})

test('stale as news: a newer tick whose ts is older than one delivered; a tick delivered late and untold', () => {
  const h = ticks([1, 2, 3])
  h[2] = { .../** @type {any} */ (h[2]), ts: 900 }
  const f = checkTicks(h).figures
  assert.equal(f.staleAsNews, 1)
  assert.equal(f.staleAsNewsMaxMs, 1040 - 900)
  assert.equal(checkTicks(ticks([1, 2, 3])).figures.staleAsNews, 0)
  // 6 s late: counted, unless told stale or part of a resumption.
  const late = ticks([1, 2, 3], { from: 10_000, lagMs: 6000 })
  assert.equal(checkTicks([live(0), ...late]).figures.lateUntold, 3)
  assert.equal(checkTicks([live(0), { k: 'stale', syms: ['A'], since: 4000, at: 9000, src: 'frame' }, ...late]).figures.lateUntold, 0)
  assert.equal(checkTicks([live(9500), ...late]).figures.lateUntold, 0, 'within 2 s of going live: a backfill')
  assert.equal(checkTicks([live(0), { k: 'stale', syms: ['A'], since: 4000, at: 9000, src: 'frame' }, { k: 'fresh', syms: ['A'], at: 5000, src: 'frame' }, ...ticks([1, 2, 3], { from: 20_000, lagMs: 6000 })]).figures.lateUntold, 3, 'fresh ends the notice')
})

test('covered: the union of intervals inside [a, b]', () => {
  assert.equal(covered([[0, 10], [5, 15], [20, 30]], 2, 25), 18)
  assert.equal(covered([], 0, 10), 0)
  assert.equal(covered([[0, 100]], 10, 20), 10)
})

test('untold staleness: a quiet stretch minus a stale notice and the client\'s disconnection', () => {
  /** @type {Ev[]} */
  const h = [live(0), ...ticks([1], { from: 1000 }), ...ticks([2], { from: 9000 })]
  assert.equal(untoldStaleness(h, { endAt: 9000 }).worst?.untoldMs, 8000)
  const told = [h[0], h[1], /** @type {Ev} */ ({ k: 'stale', syms: ['A'], since: 1000, at: 4000, src: 'frame' }), h[2]]
  assert.equal(untoldStaleness(told, { endAt: 9000 }).worst?.untoldMs, 3000)
  // A notice for another symbol does not count.
  const other = [h[0], h[1], /** @type {Ev} */ ({ k: 'stale', syms: ['B'], since: 1000, at: 4000, src: 'frame' }), h[2]]
  assert.equal(untoldStaleness(other, { endAt: 9000 }).worst?.untoldMs, 8000)
  const offline = [h[0], h[1], /** @type {Ev} */ ({ k: 'status', state: 'reconnecting', at: 2000 }), live(7000), h[2]]
  assert.equal(untoldStaleness(offline, { endAt: 9000 }).worst?.untoldMs, 3000)
  // The stretch after the last tick runs to the end.
  assert.equal(untoldStaleness([live(0), ...ticks([1, 2], { from: 1000 })], { endAt: 5050 }).worst?.untoldMs, 4000)
  assert.equal(untoldStaleness([live(0), ...ticks([1, 2, 3, 4])], { endAt: 1150 }).worst, null)
})

test('readiness: ready while cut off (past the grace), unready while linked (outside faults and their grace)', () => {
  const cuts = [{ service: 'gw1', from: 10_000, to: 20_000, kind: 'silence' }]
  const own = [{ service: '*', from: 40_000, to: 41_000, kind: 'failover' }]
  const samples = [
    { service: 'gw1', at: 12_000, ready: true }, // within 5 s of the cut: the product may still not know
    { service: 'gw1', at: 16_000, ready: true }, // ready while cut off
    { service: 'gw1', at: 25_000, ready: false }, // recovering
    { service: 'gw1', at: 35_000, ready: false }, // unready while linked
    { service: 'gw1', at: 45_000, ready: false }, // after a Redis-wide fault
    { service: 'gw2', at: 16_000, ready: true }, // not its link
    { service: 'gw2', at: 17_000, ready: null } // not running
  ]
  const r = readiness(samples, cuts, own)
  assert.deepEqual([r.gw1.readyWhileCut, r.gw1.unreadyWhileLinked, r.gw2.readyWhileCut, r.gw2.unreadyWhileLinked], [1, 1, 0, 0])
  assert.equal(r.gw1.readyWhileCutMs, 500)
})

test('verdict: each failure named; a clean campaign passes', () => {
  assert.deepEqual(verdict({ ticks: { ...emptyTicks(), got: 10, lostTold: 3, epochChanges: 1 }, worstUntoldStaleMs: 4000 }), [])
  const v = verdict({ ticks: { ...emptyTicks(), lostUntold: 1, duplicates: 2, outOfOrder: 3, staleAsNews: 4, lateUntold: 5 }, worstUntoldStaleMs: 6000 })
  assert.equal(v.length, 6)
})

test('episodes: findings of one rule close in time make one episode; a pause or another rule starts another', () => {
  /** @type {import('../checker.js').Finding[]} */
  const f = [
    { rule: 'staleAsNews', s: 'A', at: 1000, value: 50, detail: 'x', client: 1 },
    { rule: 'staleAsNews', s: 'B', at: 1500, value: 80, detail: 'y', client: 2 },
    { rule: 'lostUntold', s: 'A', at: 1600, value: 3, detail: 'z', client: 1 },
    { rule: 'staleAsNews', s: 'A', at: 9000, value: 10, detail: 'w', client: 1 }
  ]
  const e = episodes(f)
  assert.deepEqual(e.map((x) => [x.rule, x.from, x.to, x.count, x.clients, x.symbols.join(), x.max, x.total]), [
    ['staleAsNews', 1000, 1500, 2, 2, 'A,B', 80, 130],
    ['lostUntold', 1600, 1600, 1, 1, 'A', 3, 3],
    ['staleAsNews', 9000, 9000, 1, 1, 'A', 10, 10]
  ])
})
