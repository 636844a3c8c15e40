import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Outcome, QuoteReceiver } from '../index.js'

const snapAAPL = { symbol: 'AAPL', seq: 10, ts: 1, bid: 1.5, ask: 1.6, last: 1.55 }

test('a snapshot is held; a delta on top of seq - 1 merges its fields into a new object', () => {
  const r = new QuoteReceiver()
  r.snap(snapAAPL)
  const before = r.quote('AAPL')
  assert.equal(r.delta({ symbol: 'AAPL', seq: 11, ts: 2, bid: 1.52 }), Outcome.APPLIED)
  assert.deepEqual(r.quote('AAPL'), { ...snapAAPL, seq: 11, ts: 2, bid: 1.52 })
  assert.notEqual(r.quote('AAPL'), before, 'the previous quote object is left as it was')
  assert.equal(before?.seq, 10)
  assert.equal(r.seq('AAPL'), 11)
})

test('a delta with base applies on top of base, and base is not kept as a field', () => {
  const r = new QuoteReceiver()
  r.snap(snapAAPL)
  assert.equal(r.delta({ symbol: 'AAPL', seq: 15, ts: 3, base: 10, last: 2 }), Outcome.APPLIED)
  assert.equal(r.seq('AAPL'), 15)
  assert.equal(r.quote('AAPL')?.base, undefined)
  assert.equal(r.quote('AAPL')?.last, 2)
})

test('gaps, duplicates and deltas before a snapshot are reported and change nothing', () => {
  const r = new QuoteReceiver()
  assert.equal(r.delta({ symbol: 'AAPL', seq: 3 }), Outcome.NO_SNAPSHOT)
  r.snap(snapAAPL)
  assert.equal(r.delta({ symbol: 'AAPL', seq: 12 }), Outcome.GAP)
  assert.equal(r.delta({ symbol: 'AAPL', seq: 14, base: 11 }), Outcome.GAP)
  // seq <= held is never skipped silently: it is a stale delta
  assert.equal(r.delta({ symbol: 'AAPL', seq: 10 }), Outcome.STALE)
  assert.equal(r.delta({ symbol: 'AAPL', seq: 9 }), Outcome.STALE)
  // base before the held seq: its fields are relative to an older quote
  assert.equal(r.delta({ symbol: 'AAPL', seq: 12, base: 9 }), Outcome.STALE)
  assert.equal(r.seq('AAPL'), 10)
  assert.deepEqual(r.quote('AAPL'), snapAAPL)
})

test('resync drops deltas until the next snapshot, keeps the held quote readable, and says since when', () => {
  const r = new QuoteReceiver()
  r.snap(snapAAPL)
  r.resync('AAPL', 1234)
  assert.equal(r.resyncingSince('AAPL'), 1234)
  assert.equal(r.current('AAPL'), false)
  assert.equal(r.delta({ symbol: 'AAPL', seq: 11 }), Outcome.RESYNCING, 'even one that would continue')
  assert.equal(r.quote('AAPL')?.seq, 10)
  r.snap({ ...snapAAPL, seq: 20 })
  assert.equal(r.resyncingSince('AAPL'), undefined)
  assert.equal(r.current('AAPL'), true)
  assert.equal(r.delta({ symbol: 'AAPL', seq: 21 }), Outcome.APPLIED)
})

test('symbols are independent; forget and clear drop quotes and resyncs', () => {
  const r = new QuoteReceiver()
  r.snap(snapAAPL)
  r.snap({ symbol: 'MSFT', seq: 1, ts: 1 })
  r.resync('MSFT')
  assert.equal(r.delta({ symbol: 'AAPL', seq: 11 }), Outcome.APPLIED)
  assert.equal(r.size, 2)
  r.forget('MSFT')
  assert.equal(r.size, 1)
  assert.equal(r.resyncingSince('MSFT'), undefined)
  assert.equal(r.delta({ symbol: 'MSFT', seq: 2 }), Outcome.NO_SNAPSHOT)
  r.clear()
  assert.equal(r.size, 0)
  assert.equal(r.quote('AAPL'), undefined)
})

test('hold: a cursor without its quote resumes with held:false, takes no delta, and a snapshot makes it whole', () => {
  const r = new QuoteReceiver()
  r.hold('AAPL', { seq: 9, epoch: 'e1' })
  assert.deepEqual(r.cursor('AAPL'), { seq: 9, epoch: 'e1', held: false })
  assert.equal(r.current('AAPL'), true, 'it resumes from the cursor, not from a snapshot')
  assert.equal(r.delta({ symbol: 'AAPL', seq: 10, ts: 2, bid: 1 }), Outcome.NO_SNAPSHOT, 'a delta alone would be a partial quote')
  assert.equal(r.quote('AAPL'), undefined)
  r.snap({ ...snapAAPL, seq: 9, epoch: 'e1' })
  assert.deepEqual(r.cursor('AAPL'), { seq: 9, epoch: 'e1' })
  assert.equal(r.delta({ symbol: 'AAPL', seq: 10, ts: 2, bid: 1 }), Outcome.APPLIED)
  const seqsOnly = new QuoteReceiver({ fields: false })
  seqsOnly.hold('AAPL', { seq: 9, epoch: 'e1' })
  assert.deepEqual(seqsOnly.cursor('AAPL'), { seq: 9, epoch: 'e1' }, 'holding seqs only, every cursor is whole')
})

test('{fields: false} holds seqs only', () => {
  const r = new QuoteReceiver({ fields: false })
  r.snap(snapAAPL)
  assert.equal(r.delta({ symbol: 'AAPL', seq: 11, bid: 2 }), Outcome.APPLIED)
  assert.equal(r.seq('AAPL'), 11)
  assert.equal(r.quote('AAPL'), undefined)
  assert.equal(r.delta({ symbol: 'AAPL', seq: 13 }), Outcome.GAP)
})

test('Outcome is frozen and its values are distinct', () => {
  assert.ok(Object.isFrozen(Outcome))
  assert.equal(new Set(Object.values(Outcome)).size, Object.keys(Outcome).length)
})
