// The history section's client ledger counts as the Go load generator
// does (loadgen/internal/account): in distinct mode every seq must arrive.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { TickLedger } from '../src/tick-ledger.js'

/** A ledger holding A at seq 5 (epoch e1) and B at seq 9. */
function held () {
  const l = new TickLedger()
  l.snap({ symbol: 'A', seq: 5, epoch: 'e1' })
  l.snap({ symbol: 'B', seq: 9, epoch: 'e1' })
  return l
}

test('one skipped seq is one tick lost and one gap', () => {
  const l = held()
  assert.equal(l.delta({ symbol: 'A', seq: 6 }), true)
  assert.equal(l.delta({ symbol: 'A', seq: 8 }), false)
  assert.deepEqual([l.ticksLost, l.gaps, l.dups], [1, 1, 0])
})

test('every seq in order, across symbols, loses nothing; a duplicate is counted as one', () => {
  const l = held()
  for (const d of [{ symbol: 'A', seq: 6 }, { symbol: 'B', seq: 10 }, { symbol: 'A', seq: 7 }, { symbol: 'A', seq: 7 }, { symbol: 'B', seq: 11 }]) l.delta(d)
  assert.deepEqual([l.ticksLost, l.gaps, l.dups], [0, 0, 1])
  assert.deepEqual(l.cursor('A'), { seq: 7, epoch: 'e1' })
})

test('a base equal to the held seq covers what it merged; a base past it loses the seqs up to it', () => {
  const l = held()
  l.delta({ symbol: 'A', seq: 9, base: 5 })
  assert.equal(l.ticksLost, 0)
  l.delta({ symbol: 'B', seq: 15, base: 12 })
  assert.deepEqual([l.ticksLost, l.gaps], [3, 1])
})

test('a snap jumping over seqs of a held symbol loses them; the first snap and a new epoch\'s cursor', () => {
  const l = new TickLedger()
  l.snap({ symbol: 'A', seq: 5, epoch: 'e1' })
  assert.equal(l.ticksLost, 0)
  l.snap({ symbol: 'A', seq: 9, epoch: 'e1' }) // a `"recovered":false` snap
  assert.equal(l.ticksLost, 3)
  l.snap({ symbol: 'A', seq: 2, epoch: 'e2' })
  assert.deepEqual(l.cursor('A'), { seq: 2, epoch: 'e2' }, 'a new epoch replaces the held seq even when lower')
  assert.equal(l.cursor('C'), undefined)
  const noEpoch = new TickLedger()
  noEpoch.snap({ symbol: 'A', seq: 1 })
  assert.equal(noEpoch.cursor('A'), undefined, 'no epoch (history off): no since')
})
