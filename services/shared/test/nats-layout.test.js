// Where quotes live on NATS: every symbol the protocol allows maps to one
// subject token and back, so two symbols never share a subject.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SYMBOL_PATTERN } from '@wsps/protocol'
import { natsLayout } from '@wsps/shared/nats-layout'

const layout = natsLayout('wsps')
const symbols = ['AAPL', 'BRK.B', 'BRK-B', '^GSPC', 'EURUSD=X', 'A.B.C', '0.1-2^3=4']

test('a symbol\'s subjects: one token each (no `.` inside), legal, and back to the symbol', () => {
  for (const s of symbols) {
    assert.match(s, SYMBOL_PATTERN)
    const subject = layout.subject(s)
    assert.equal(subject.split('.').length, 3, subject)
    assert.doesNotMatch(subject, /[\s*>]/)
    assert.equal(layout.symbolOfLive(layout.liveSubject(s)), s)
    assert.equal(layout.symbolOfDemand(layout.demandSubject(s, 'gw-0.local')), s)
  }
  assert.equal(new Set(symbols.map(layout.subject)).size, symbols.length, 'no two symbols share a subject')
  assert.equal(layout.subject('BRK.B'), 'wsps.q.BRK_B')
  assert.equal(layout.liveSubject('BRK.B'), 'wsps.live.q.BRK_B')
})

test('the stream takes every stored subject and republishes it to its live subject', () => {
  assert.equal(layout.stream, 'WSPS_QUOTES')
  assert.equal(layout.subjects, 'wsps.q.*')
  assert.deepEqual(layout.republish, { src: 'wsps.q.*', dest: 'wsps.live.q.{{wildcard(1)}}' })
})

test('a prefix names a stream and a token: anything else is refused', () => {
  assert.equal(natsLayout('prod-2').stream, 'PROD-2_QUOTES')
  for (const bad of ['', 'a.b', 'a b', 'a*', 'x>', 'a:b']) assert.throws(() => natsLayout(bad), TypeError, bad)
})
