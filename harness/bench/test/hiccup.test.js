// The host hiccup meter as the bench reads it: lining its intervals up with
// a window, the run's summary, and the report's columns.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { hiccupSummary, stallIn } from '../src/hiccup.js'
import { renderMarkdown } from '../src/report.js'

/** One interval line: its end, when its latest wake-up was, how late (ms). */
const line = (/** @type {number} */ tMs, /** @type {number} */ atMs, /** @type {number} */ maxMs) => /** @type {import('../src/hiccup.js').HiccupLine} */ ({ type: 'hiccup', core: 0, tUs: tMs * 1000, atUs: atMs * 1000, maxUs: maxMs * 1000, n: 90 })

test('a window gets the longest stall that overlaps it, by where the stall began and ended', () => {
  const lines = [
    line(1000, 950, 80), // [870, 950]: before the window
    line(1100, 1020, 40), // [980, 1020]: began before, ended inside
    line(1200, 1150, 2),
    line(1300, 1290, 300), // [990, 1290]: one long stall reported once
    line(2100, 2050, 60), // [1990, 2050]: began after the window
    line(2200, 2110, 500) // [1610, 2110]: began inside, ended after
  ]
  assert.equal(stallIn(lines, 1000, 1500), 300)
  assert.equal(stallIn(lines.slice(0, 3), 1000, 1500), 40, 'a stall that ends inside counts')
  assert.equal(stallIn(lines.slice(0, 3), 1030, 1500), 2, 'a stall that ended before the window does not')
  assert.equal(stallIn([...lines.slice(0, 3), lines[4]], 1030, 1500), 2, 'nor one that began after it')
  assert.equal(stallIn(lines, 1700, 1800), 500, 'a stall spanning the whole window counts')
  assert.equal(stallIn(lines, 3000, 4000), null, 'no interval ended after the window began: unknown, not 0')
  assert.equal(stallIn([{ type: 'ready' }, ...lines.slice(0, 1)].map((l) => /** @type {any} */ (l)), 900, 1000), 80)
})

test('the run summary takes max and p99 over every interval', () => {
  const lines = Array.from({ length: 200 }, (_, i) => line(i * 100, i * 100 - 50, i === 7 ? 90 : i === 8 ? 30 : i === 9 ? 20 : 0.5))
  assert.deepEqual(hiccupSummary(lines), { intervals: 200, maxMs: 90, p99Ms: 20 }, 'the 198th of 200')
  assert.deepEqual(hiccupSummary([]), { intervals: 0, maxMs: null, p99Ms: null })
})

test('the report shows each step\'s host stall and the run\'s max and p99 per core, and says when the meter was not real-time', () => {
  const step = (/** @type {number} */ delivered, /** @type {any} */ more = {}) => ({ rate: 1, published: 1, expected: delivered, delivered, entries: delivered, frames: delivered, quotesPerFrame: 1, p50: 1, p99: 2, p999: 3, gaps: 0, cpu: { server: 0.5, loadgen: 0.1, redis: 0.1, publisher: 0.1 }, steal: 0.01, hiccup: [1.5, 0.4], hiccupMs: 1.5, rssMiB: 10, perCore: delivered * 2, pass: true, ...more })
  const wMax = step(50_000)
  const nMax = step(3000)
  const md = renderMarkdown({
    profile: 'test',
    startedAt: 'now',
    machine: { cpus: 2, model: 'x', memGiB: 1, node: 'v24', loadavgStart: [1, 1, 1], hiccup: { realtime: true, refusals: [], cores: [{ core: '0', intervals: 10, maxMs: 55, p99Ms: 12 }, { core: '1', intervals: 10, maxMs: 31, p99Ms: 3.5 }] } },
    placement: { serverCore: '1', loadCore: '0' },
    params: { conns: 10, k: 2, symbols: 5, zipf: 1, storm: 10, stormProcs: 1, saturationDeliveries: 1000 },
    fanout: {
      wsps: { label: 'wsps gateway', steps: [wMax], max: wMax, limit: 'p99', at50: null, saturated: null },
      naive: { label: 'naive', steps: [nMax, step(6000, { pass: false, p99: 260, hiccupMs: 4.2 }), step(6000, { pass: false, hiccupMs: null, retry: true })], max: nMax, limit: 'p99', at50: null, saturated: null }
    },
    idle: {},
    nginx: null,
    sim: null
  })
  assert.match(md, /core 0: max 55\.0, p99 12\.0; core 1: max 31\.0, p99 3\.5 ms/)
  assert.match(md, /at real-time priority/)
  assert.match(md, /\| steal % \| others % \| hiccup ms \| RSS MiB \| ok \|\n\| ---(?: \| ---:){20} \| --- \|/, 'a hiccup column, and as many separator cells')
  assert.match(md, /\| 1\.0 \| {2}\| 1\.5 \| 10 \| yes \|/)
  assert.match(md, /\| 260\.0 \| 3\.0 \|.*\| 1\.0 \| {2}\| 4\.2 \| 10 \| no \|/)
  assert.match(md, /\| naive \(again\) \|.*\| 1\.0 \| {2}\| n\/a \| 10 \| no \|/, 'a meter without a reading for the window: n/a, not 0')
  const refused = renderMarkdown({ profile: 't', startedAt: 'now', machine: { cpus: 2, model: 'x', memGiB: 1, node: 'v24', loadavgStart: [1, 1, 1], hiccup: { realtime: false, refusals: ['core 0: operation not permitted'], cores: [] } }, placement: {}, params: {}, idle: {} })
  assert.match(refused, /at NORMAL priority: real-time was refused \(core 0: operation not permitted\)/)
})
