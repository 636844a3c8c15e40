// The harness's one quote-checking loop (src/quote-reader.js), without a
// gateway: snapshots and deltas through the receiver, stray quotes, and
// rule 3 (resync, resubscribe) as each client configures it.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Outcome, QuoteReceiver } from '@wsps/protocol'
import { QuoteReader } from '../src/quote-reader.js'

/** @param {{wants?: (s: string) => boolean, readStrays?: boolean, resubscribe?: boolean}} [o] */
function reader ({ wants, readStrays, resubscribe = true } = {}) {
  const receiver = new QuoteReceiver({ fields: false })
  /** @type {any[][]} */
  const events = []
  /** @type {any[]} */
  const sent = []
  const r = new QuoteReader(receiver, {
    wants,
    readStrays,
    send: resubscribe ? (frame) => sent.push(JSON.parse(frame)) : null,
    stray: (kind, q) => events.push(['stray', kind, q.symbol]),
    snap: (q, before) => events.push(['snap', q.symbol, q.seq, before]),
    applied: (d) => events.push(['applied', d.symbol, d.seq]),
    broken: (d, outcome, held) => events.push(['broken', d.symbol, outcome, held])
  })
  return { r, receiver, events, sent }
}

test('snapshots and deltas that continue them are read in order; other frames are left to the caller', () => {
  const { r, receiver, events, sent } = reader()
  assert.equal(r.read({ op: 'hello' }), false)
  assert.equal(r.read({ op: 'snap', quotes: [{ symbol: 'A', seq: 5 }] }), true)
  assert.equal(r.read({ op: 'q', quotes: [{ symbol: 'A', seq: 6 }, { symbol: 'A', seq: 9, base: 6 }] }), true)
  r.read({ op: 'snap', quotes: [{ symbol: 'A', seq: 12 }] })
  assert.deepEqual(events, [['snap', 'A', 5, undefined], ['applied', 'A', 6], ['applied', 'A', 9], ['snap', 'A', 12, 9]])
  assert.equal(receiver.seq('A'), 12)
  assert.deepEqual(sent, [])
})

test('a delta that does not apply is reported, resynced and resubscribed; deltas are dropped until the snapshot', () => {
  const { r, receiver, events, sent } = reader()
  r.read({ op: 'snap', quotes: [{ symbol: 'A', seq: 1 }] })
  r.read({ op: 'q', quotes: [{ symbol: 'A', seq: 3 }, { symbol: 'A', seq: 4 }, { symbol: 'B', seq: 1 }] })
  assert.deepEqual(events.slice(1), [['broken', 'A', Outcome.GAP, 1], ['broken', 'B', Outcome.NO_SNAPSHOT, undefined]])
  assert.deepEqual(sent, [{ op: 'unsub', symbols: ['A'] }, { op: 'sub', symbols: ['A'] }, { op: 'unsub', symbols: ['B'] }, { op: 'sub', symbols: ['B'] }])
  assert.equal(receiver.current('A'), false)
  r.read({ op: 'snap', quotes: [{ symbol: 'A', seq: 4 }] })
  r.read({ op: 'q', quotes: [{ symbol: 'A', seq: 5 }] })
  assert.deepEqual(events.slice(-2), [['snap', 'A', 4, 1], ['applied', 'A', 5]])
})

test('without send, rule 3 resyncs without a resubscribe', () => {
  const { r, receiver, events } = reader({ resubscribe: false })
  r.read({ op: 'snap', quotes: [{ symbol: 'A', seq: 2 }] })
  r.read({ op: 'q', quotes: [{ symbol: 'A', seq: 2 }] })
  assert.deepEqual(events.at(-1), ['broken', 'A', Outcome.STALE, 2])
  assert.equal(receiver.resyncingSince('A'), 0)
})

test('a stray quote is reported and skipped, or read too with readStrays', () => {
  const wants = (/** @type {string} */ s) => s === 'A'
  const skip = reader({ wants })
  skip.r.read({ op: 'snap', quotes: [{ symbol: 'Z', seq: 1 }] })
  skip.r.read({ op: 'q', quotes: [{ symbol: 'Z', seq: 2 }] })
  assert.deepEqual(skip.events, [['stray', 'snap', 'Z'], ['stray', 'delta', 'Z']])
  assert.equal(skip.receiver.size, 0)

  const read = reader({ wants, readStrays: true })
  read.r.read({ op: 'snap', quotes: [{ symbol: 'Z', seq: 1 }] })
  read.r.read({ op: 'q', quotes: [{ symbol: 'Z', seq: 2 }] })
  assert.deepEqual(read.events, [['stray', 'snap', 'Z'], ['snap', 'Z', 1, undefined], ['stray', 'delta', 'Z'], ['applied', 'Z', 2]])
})
