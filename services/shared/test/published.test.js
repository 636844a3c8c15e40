// The readers of a quote as published agree with the layout the publish
// script writes (checked against the script itself in fencing.test.js and
// the integration tests): seqOf's fast path gives what a full parse gives.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { cursorOf, delayedCopy, entryOf, parsePublished, PREFIX, seqOf, traceOf, untraced } from '../src/published.js'

const LAYOUTS = [
  '{"seq":1,"epoch":"k3x9","symbol":"AAPL","ts":1763800000123,"bid":1.5}',
  '{"seq":42,"symbol":"AAPL","ts":1763800000123}',
  '{"seq":9007199254740991,"epoch":"e","symbol":"S","ts":1,"delayed":true}',
  '{"seq":7}'
]

test('seqOf reads the seq the full parse reads, without parsing the rest', () => {
  for (const raw of LAYOUTS) {
    assert.ok(raw.startsWith(PREFIX))
    assert.equal(seqOf(raw), JSON.parse(raw).seq, raw)
  }
  assert.ok(Number.isNaN(seqOf('{"symbol":"AAPL","seq":1}')), 'seq not first: not a published quote')
  assert.ok(Number.isNaN(seqOf('')))
})

test('parsePublished, cursorOf, entryOf: null for what is not a published quote', () => {
  assert.deepEqual(cursorOf(LAYOUTS[0]), { seq: 1, epoch: 'k3x9' })
  assert.deepEqual(cursorOf(LAYOUTS[1]), { seq: 42, epoch: undefined })
  assert.deepEqual(entryOf(LAYOUTS[0]), { seq: 1, ts: 1763800000123, epoch: 'k3x9', raw: LAYOUTS[0] })
  assert.equal(entryOf(LAYOUTS[3]), null, 'no ts: no entry of a timeline')
  for (const bad of ['not json', 'null', '[1]', '{"seq":"1"}', '{"ts":1}']) {
    assert.equal(parsePublished(bad), null, bad)
    assert.equal(cursorOf(bad), null, bad)
  }
  assert.equal(cursorOf(null), null)
})

test('delayedCopy appends the field to the quote as published', () => {
  assert.deepEqual(JSON.parse(delayedCopy('{"seq":1,"symbol":"A","ts":5}')), { seq: 1, symbol: 'A', ts: 5, delayed: true })
})

test('traceOf and untraced read and cut a traced quote\'s trailing traceparent, and nothing else', () => {
  const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
  const body = '{"seq":3,"epoch":"e","symbol":"A","ts":5,"bid":1}'
  const traced = `${body.slice(0, -1)},"trace":"${tp}"}`
  assert.equal(traceOf(traced), tp)
  assert.deepEqual(JSON.parse(traced).trace, tp, 'the layout the fetcher writes (JSON, its last member)')
  assert.equal(traceOf(body), null)
  assert.equal(untraced(body), body)
  assert.equal(untraced(traced), body)
  // A field of the same length that is not the trace stays.
  const other = `${body.slice(0, -1)},"tracx":"${tp}"}`
  assert.deepEqual([traceOf(other), untraced(other)], [null, other])
  assert.deepEqual([traceOf('{}'), untraced('{}')], [null, '{}'])
})
