import assert from 'node:assert/strict'
import { test } from 'node:test'
import { readConfig } from './config.js'
import { buildPlan, popularity, prng, scenarios } from './profiles.js'

test('buildPlan: VUs, stages in VUs, hold window and connect spacing', () => {
  const cfg = readConfig({ TARGET: '5000', RAMP: '30s', HOLD: '1m', CONNS_PER_VU: '10' })
  const plan = buildPlan(cfg)
  assert.equal(plan.vus, 500)
  assert.deepEqual(plan.stages, [{ duration: '30s', target: 500 }, { duration: '1m', target: 500 }])
  assert.equal(plan.endMs, 90000)
  assert.equal(plan.holdStartMs, 30000)
  assert.equal(plan.spacingMs, 6)
  assert.equal(plan.peakConns, 5000)
  assert.equal(plan.holdConns, 5000)
})

test('buildPlan: STAGES that fall end with fewer connections than the peak', () => {
  const plan = buildPlan(readConfig({ STAGES: '5s:200,10s:200,5s:60,12s:60' }))
  assert.equal(plan.peakConns, 200)
  assert.equal(plan.holdConns, 60)
  assert.equal(plan.endMs, 32000)
  assert.equal(plan.holdStartMs, 20000)
})

test('buildPlan: a target that is not a multiple of CONNS_PER_VU rounds up', () => {
  const plan = buildPlan(readConfig({ TARGET: '25', CONNS_PER_VU: '10' }))
  assert.equal(plan.vus, 3)
  assert.equal(plan.peakConns, 30)
})

test('scenarios: one named ramping-vus scenario', () => {
  for (const name of ['smoke', 'ramp', 'soak']) {
    const cfg = readConfig({ SCENARIO: name })
    const sc = scenarios(cfg, buildPlan(cfg))
    assert.deepEqual(Object.keys(sc), [name])
    assert.equal(sc[name].executor, 'ramping-vus')
    assert.equal(sc[name].startVUs, 0)
  }
})

test('prng is deterministic and in [0, 1)', () => {
  const a = prng(42)
  const b = prng(42)
  for (let i = 0; i < 1000; i++) {
    const x = a()
    assert.equal(x, b())
    assert.ok(x >= 0 && x < 1)
  }
})

test('popularity: distinct picks, hot symbols first, exclusions honoured', () => {
  const symbols = Array.from({ length: 200 }, (_, i) => `S${i}`)
  const pop = popularity(symbols, 1)
  const rand = prng(7)
  /** @type {Map<string, number>} */
  const hits = new Map()
  for (let i = 0; i < 2000; i++) {
    const picks = pop.pick(rand, 5)
    assert.equal(picks.length, 5)
    assert.equal(new Set(picks).size, 5)
    for (const s of picks) hits.set(s, (hits.get(s) ?? 0) + 1)
  }
  // The most popular symbol is in far more subscriptions than one in the tail.
  assert.ok((hits.get('S0') ?? 0) > 10 * (hits.get('S150') ?? 1))
  assert.ok(pop.weight(0) > pop.weight(1) && pop.weight(1) > pop.weight(199))
  const ex = new Set(symbols.slice(0, 199))
  assert.deepEqual(pop.pick(rand, 1, ex), ['S199'])
  assert.deepEqual(pop.pick(rand, 3, new Set(symbols)), [])
})

test('popularity: skew 0 is uniform', () => {
  const pop = popularity(['A', 'B', 'C', 'D'], 0)
  for (let i = 0; i < 4; i++) assert.ok(Math.abs(pop.weight(i) - 0.25) < 1e-12)
})
