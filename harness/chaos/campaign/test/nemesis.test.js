// The nemesis's schedule: replayable from its seed, within its bounds.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { FAULTS, plan } from '../nemesis.js'
import { mulberry32 } from '../prng.js'

const services = { gateway: ['gw1', 'gw2'], fetcher: ['f1', 'f2'] }

test('mulberry32: the same seed, the same sequence; another seed, another', () => {
  const a = mulberry32(7)
  const b = mulberry32(7)
  const c = mulberry32(8)
  const xs = Array.from({ length: 5 }, a)
  assert.deepEqual(xs, Array.from({ length: 5 }, b))
  assert.notDeepEqual(xs, Array.from({ length: 5 }, c))
  assert.ok(xs.every((x) => x >= 0 && x < 1))
})

test('plan: replayable, bounded, never two on one role, at most two at once, healed before the cooldown', () => {
  for (const variant of /** @type {const} */ (['links', 'sentinel'])) {
    const o = { seed: 42, durationMs: 30 * 60_000, variant, services }
    const p = plan(o)
    assert.deepEqual(p, plan(o))
    assert.notDeepEqual(p, plan({ ...o, seed: 43 }))
    assert.ok(p.length > 50, `${p.length} faults in 30 min`)
    for (const f of p) {
      const k = FAULTS[f.kind]
      assert.ok(k.variants.includes(variant), `${f.kind} in ${variant}`)
      assert.ok(f.durationMs >= k.durationMs[0] && f.durationMs <= k.durationMs[1])
      assert.ok(f.at >= 15_000 && f.at + f.durationMs + (k.settleMs ?? 0) <= o.durationMs - 20_000)
      const overlapping = p.filter((g) => g !== f && g.at <= f.at && f.at < g.at + g.durationMs + (FAULTS[g.kind].settleMs ?? 0))
      assert.ok(overlapping.length <= 1, `fault ${f.id} starts with ${overlapping.length} others in force`)
      assert.ok(overlapping.every((g) => g.lane !== f.lane), `fault ${f.id} in a busy lane`)
      assert.ok(overlapping.every((g) => g.target !== f.target), `fault ${f.id} on a busy target`)
      assert.equal(f.lane, f.kind === 'skew' ? 'clock' : f.role)
    }
    const kinds = new Set(p.map((f) => f.kind))
    for (const k of Object.keys(FAULTS).filter((x) => FAULTS[x].variants.includes(variant))) assert.ok(kinds.has(k), `${variant} plans ${k}`)
  }
})

test('plan: a kind that does not apply to the variant is refused', () => {
  assert.throws(() => plan({ seed: 1, durationMs: 60_000, variant: 'sentinel', services, kinds: ['silence'] }), TypeError)
})
