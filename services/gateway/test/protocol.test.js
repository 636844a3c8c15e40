import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { ErrorCode, Limits } from '@wsps/protocol'
import { encodeQuotes, parseClientFrame, parseStreamBars, parseStreamBook, parseStreamSub, quotesFrame } from '../src/protocol.js'
import { TextFrame } from '../src/text-frame.js'

const { MAX_SYMBOLS_PER_REQUEST } = Limits

const parse = (/** @type {string} */ text) => parseClientFrame(Buffer.from(text), false)

test('sub, unsub and ping parse with their id', () => {
  assert.deepEqual(parse('{"op":"sub","symbols":["AAPL","MSFT"],"id":1}'), { ok: true, request: { op: 'sub', symbols: ['AAPL', 'MSFT'], id: 1 } })
  assert.deepEqual(parse('{"op":"unsub","symbols":["AAPL"],"id":"x"}'), { ok: true, request: { op: 'unsub', symbols: ['AAPL'], id: 'x' } })
  assert.deepEqual(parse('{"op":"ping"}'), { ok: true, request: { op: 'ping' } })
})

test('a sub carries its mode and maxRate when given', () => {
  assert.deepEqual(parse('{"op":"sub","symbols":["AAPL"],"mode":"distinct","id":1}'), { ok: true, request: { op: 'sub', symbols: ['AAPL'], id: 1, mode: 'distinct' } })
  assert.deepEqual(parse('{"op":"sub","symbols":["AAPL"],"mode":"merge","maxRate":0.1}'), { ok: true, request: { op: 'sub', symbols: ['AAPL'], mode: 'merge', maxRate: 0.1 } })
  assert.deepEqual(parse('{"op":"sub","symbols":["AAPL"],"maxRate":1000}'), { ok: true, request: { op: 'sub', symbols: ['AAPL'], maxRate: 1000 } })
})

test('duplicate symbols in one request collapse', () => {
  const r = parse('{"op":"sub","symbols":["AAPL","AAPL","BRK.B"]}')
  assert.deepEqual(r.ok && r.request, { op: 'sub', symbols: ['AAPL', 'BRK.B'] })
})

const cases = [
  ['not json', '{op', ErrorCode.BAD_JSON],
  ['a JSON array', '[1,2]', ErrorCode.BAD_REQUEST],
  ['JSON null', 'null', ErrorCode.BAD_REQUEST],
  ['no op', '{"symbols":["AAPL"]}', ErrorCode.BAD_OP],
  ['unknown op', '{"op":"subscribe"}', ErrorCode.BAD_OP],
  ['symbols not an array', '{"op":"sub","symbols":"AAPL"}', ErrorCode.BAD_REQUEST],
  ['empty symbols', '{"op":"sub","symbols":[]}', ErrorCode.BAD_REQUEST],
  ['lower-case symbol', '{"op":"sub","symbols":["aapl"]}', ErrorCode.BAD_SYMBOL],
  ['symbol too long', '{"op":"sub","symbols":["ABCDEFGHIJKLMNOPQ"]}', ErrorCode.BAD_SYMBOL],
  ['number as symbol', '{"op":"sub","symbols":[42]}', ErrorCode.BAD_SYMBOL],
  ['unknown mode', '{"op":"sub","symbols":["AAPL"],"mode":"every"}', ErrorCode.BAD_MODE],
  ['non-string mode', '{"op":"sub","symbols":["AAPL"],"mode":1}', ErrorCode.BAD_MODE],
  ['maxRate below the minimum', '{"op":"sub","symbols":["AAPL"],"maxRate":0.05}', ErrorCode.BAD_RATE],
  ['maxRate above the maximum', '{"op":"sub","symbols":["AAPL"],"maxRate":1001}', ErrorCode.BAD_RATE],
  ['maxRate not a number', '{"op":"sub","symbols":["AAPL"],"maxRate":"5"}', ErrorCode.BAD_RATE],
  ['maxRate with distinct', '{"op":"sub","symbols":["AAPL"],"mode":"distinct","maxRate":5}', ErrorCode.BAD_RATE],
  ['object id', '{"op":"ping","id":{}}', ErrorCode.BAD_REQUEST],
  ['long id', `{"op":"ping","id":"${'x'.repeat(65)}"}`, ErrorCode.BAD_REQUEST]
]
for (const [name, text, code] of cases) {
  test(`rejects ${name} with ${code}`, () => {
    const r = parse(text)
    assert.equal(r.ok, false)
    assert.equal(!r.ok && r.error.code, code)
  })
}

test('a bad symbol error lists the offending symbols and echoes the id', () => {
  const r = parse('{"op":"sub","symbols":["AAPL","bad one"],"id":7}')
  assert.deepEqual(!r.ok && r.error, { code: ErrorCode.BAD_SYMBOL, message: r.ok ? '' : r.error.message, id: 7, symbols: ['bad one'] })
})

test(`more than ${MAX_SYMBOLS_PER_REQUEST} symbols in one request is BAD_REQUEST`, () => {
  const symbols = Array.from({ length: MAX_SYMBOLS_PER_REQUEST + 1 }, (_, i) => `S${i}`)
  const r = parse(JSON.stringify({ op: 'sub', symbols }))
  assert.equal(!r.ok && r.error.code, ErrorCode.BAD_REQUEST)
})

test('auth: a non-empty string token, optional id; anything else is BAD_REQUEST', () => {
  const ok = parseClientFrame(Buffer.from('{"op":"auth","token":"a.b.c","id":7}'), false)
  assert.deepEqual(ok.ok && ok.request, { op: 'auth', token: 'a.b.c', id: 7 })
  for (const bad of ['{"op":"auth"}', '{"op":"auth","token":""}', '{"op":"auth","token":5}', `{"op":"auth","token":"${'x'.repeat(8193)}"}`]) {
    const r = parseClientFrame(Buffer.from(bad), false)
    assert.equal(!r.ok && r.error.code, ErrorCode.BAD_REQUEST, bad.slice(0, 40))
  }
})

test('binary frames are BAD_FRAME', () => {
  const r = parseClientFrame(Buffer.from('{"op":"ping"}'), true)
  assert.equal(!r.ok && r.error.code, ErrorCode.BAD_FRAME)
})

test('property: any input yields a request or a coded error, never a throw', () => {
  const codes = new Set(Object.values(ErrorCode))
  const json = fc.oneof(
    fc.string(),
    fc.json(),
    fc.record({ op: fc.constantFrom('sub', 'unsub', 'ping', 'auth', 'x', 1, null), symbols: fc.anything(), token: fc.anything(), id: fc.anything() }, { requiredKeys: [] }).map((o) => JSON.stringify(o))
  )
  fc.assert(fc.property(json, fc.boolean(), (text, binary) => {
    const r = parseClientFrame(Buffer.from(text), binary)
    if (r.ok) {
      const req = r.request
      assert.ok(['sub', 'unsub', 'ping', 'auth'].includes(req.op))
      if (req.op === 'sub' || req.op === 'unsub') assert.ok(req.symbols.every((s) => /^[A-Z0-9.^=-]{1,16}$/.test(s)))
      if (req.op === 'auth') assert.ok(typeof req.token === 'string' && req.token.length > 0)
    } else {
      assert.ok(codes.has(/** @type {any} */ (r.error.code)), r.error.code)
    }
  }), { numRuns: 3000 })
})

test('GET /sse mode and since: the rules of a WebSocket sub, every mistake coded', () => {
  const ok = parseStreamSub({ mode: 'distinct', since: 'AAPL:1042:hohrttbiv1,MSFT:0:e1' }, ['AAPL', 'MSFT'])
  assert.ok(ok.ok)
  assert.equal(ok.request.mode, 'distinct')
  assert.deepEqual([...(ok.request.since ?? [])], [['AAPL', { seq: 1042, epoch: 'hohrttbiv1' }], ['MSFT', { seq: 0, epoch: 'e1' }]])
  assert.deepEqual(parseStreamSub({}, ['AAPL']), { ok: true, request: { op: 'sub', symbols: ['AAPL'] } })
  const code = (/** @type {{mode?: unknown, since?: unknown}} */ q) => { const r = parseStreamSub(q, ['AAPL']); return r.ok ? 'ok' : r.error.code }
  assert.equal(code({ mode: 'fast' }), 'BAD_MODE')
  assert.equal(code({ mode: ['distinct', 'merge'] }), 'BAD_MODE')
  assert.equal(code({ since: 'AAPL:1' }), 'BAD_SINCE')
  assert.equal(code({ since: 'AAPL:-1:e1' }), 'BAD_SINCE')
  assert.equal(code({ since: 'AAPL:1.5:e1' }), 'BAD_SINCE')
  assert.equal(code({ since: 'AAPL:1:bad epoch' }), 'BAD_SINCE')
  assert.equal(code({ since: 'MSFT:1:e1' }), 'BAD_SINCE')
  assert.equal(code({ since: 'AAPL:1:e1:x' }), 'BAD_SINCE')
  assert.equal(code({ since: ['AAPL:1:e1', 'AAPL:2:e1'] }), 'BAD_SINCE')
})

test('bars: a sub and unsub name an interval; backfill defaults to 50; every mistake is BAD_INTERVAL or BAD_BARS', () => {
  assert.deepEqual(parse('{"op":"sub","symbols":["AAPL"],"bars":"1m","backfill":0,"id":5}'), { ok: true, request: { op: 'sub', symbols: ['AAPL'], id: 5, bars: '1m', backfill: 0 } })
  assert.deepEqual(parse('{"op":"sub","symbols":["AAPL"],"bars":"5m","delayed":true}'), { ok: true, request: { op: 'sub', symbols: ['AAPL'], bars: '5m', backfill: 50, delayed: true } })
  assert.deepEqual(parse('{"op":"unsub","symbols":["AAPL"],"bars":"1s"}'), { ok: true, request: { op: 'unsub', symbols: ['AAPL'], bars: '1s' } })
  /** @type {[string, string][]} */
  const bad = [
    ['{"op":"sub","symbols":["AAPL"],"bars":"2m"}', ErrorCode.BAD_INTERVAL],
    ['{"op":"sub","symbols":["AAPL"],"bars":60}', ErrorCode.BAD_INTERVAL],
    ['{"op":"unsub","symbols":["AAPL"],"bars":"1h"}', ErrorCode.BAD_INTERVAL],
    ['{"op":"sub","symbols":["AAPL"],"bars":"1m","mode":"distinct"}', ErrorCode.BAD_BARS],
    ['{"op":"sub","symbols":["AAPL"],"bars":"1m","maxRate":2}', ErrorCode.BAD_BARS],
    ['{"op":"sub","symbols":["AAPL"],"bars":"1m","since":{}}', ErrorCode.BAD_BARS],
    ['{"op":"sub","symbols":["AAPL"],"bars":"1m","backfill":501}', ErrorCode.BAD_BARS],
    ['{"op":"sub","symbols":["AAPL"],"bars":"1m","backfill":-1}', ErrorCode.BAD_BARS],
    ['{"op":"sub","symbols":["AAPL"],"bars":"1m","backfill":1.5}', ErrorCode.BAD_BARS],
    ['{"op":"sub","symbols":["AAPL"],"bars":"1m","backfill":"9"}', ErrorCode.BAD_BARS],
    ['{"op":"sub","symbols":["AAPL"],"backfill":9}', ErrorCode.BAD_BARS],
    ['{"op":"unsub","symbols":["AAPL"],"bars":"1m","backfill":9}', ErrorCode.BAD_BARS],
    ['{"op":"sub","symbols":["AAPL"],"bars":"1m","delayed":"yes"}', ErrorCode.BAD_REQUEST]
  ]
  for (const [text, code] of bad) {
    const r = parse(text)
    assert.equal(r.ok, false, text)
    if (!r.ok) assert.equal(r.error.code, code, text)
  }
})

test('parseStreamBars: a GET /sse\'s bars, barSymbols, backfill and barDelayed, by the rules of a bars sub', () => {
  assert.deepEqual(parseStreamBars({}, []), { ok: true, request: null })
  assert.deepEqual(parseStreamBars({ bars: '1m' }, ['AAPL']), { ok: true, request: { op: 'sub', symbols: ['AAPL'], bars: '1m', backfill: 50 } })
  assert.deepEqual(parseStreamBars({ bars: '5m', backfill: '0', barDelayed: 'true' }, ['A', 'B']),
    { ok: true, request: { op: 'sub', symbols: ['A', 'B'], bars: '5m', backfill: 0, delayed: true } })
  const code = (/** @type {Record<string, unknown>} */ q, symbols = ['AAPL']) => { const r = parseStreamBars(q, symbols); return r.ok ? 'ok' : r.error.code }
  assert.equal(code({ bars: '500' }), ErrorCode.BAD_INTERVAL)
  assert.equal(code({ bars: ['1m', '1m'] }), ErrorCode.BAD_INTERVAL)
  assert.equal(code({ bars: '1m' }, []), ErrorCode.BAD_BARS, 'bars without barSymbols')
  assert.equal(code({}), ErrorCode.BAD_BARS, 'barSymbols without bars')
  assert.equal(code({ backfill: '5' }, []), ErrorCode.BAD_BARS, 'backfill without bars')
  assert.equal(code({ barDelayed: 'true' }, []), ErrorCode.BAD_BARS, 'barDelayed without bars')
  for (const backfill of ['501', '-1', '2.5', '', 'x', ['1', '2']]) assert.equal(code({ bars: '1m', backfill }), ErrorCode.BAD_BARS, String(backfill))
  assert.equal(code({ bars: '1m', backfill: '500' }), 'ok')
  assert.equal(code({ bars: '1m', barDelayed: 'yes' }), ErrorCode.BAD_REQUEST)
})

test('parseStreamBook: a GET /sse\'s book, bookSymbols and bookMode, by the rules of a book sub', () => {
  assert.deepEqual(parseStreamBook({}, []), { ok: true, request: null })
  assert.deepEqual(parseStreamBook({ book: '10' }, ['BTC-USD']), { ok: true, request: { op: 'sub', symbols: ['BTC-USD'], book: 10 } })
  assert.deepEqual(parseStreamBook({ book: '25', bookMode: 'distinct' }, ['A']), { ok: true, request: { op: 'sub', symbols: ['A'], book: 25, mode: 'distinct' } })
  const code = (/** @type {Record<string, unknown>} */ q, symbols = ['A']) => { const r = parseStreamBook(q, symbols); return r.ok ? 'ok' : r.error.code }
  for (const book of ['7', '', '10.0', 'ten', ['10', '10'], '1000']) assert.equal(code({ book }), ErrorCode.BAD_BOOK, String(book))
  assert.equal(code({ book: '10' }, []), ErrorCode.BAD_BOOK, 'book without bookSymbols')
  assert.equal(code({}), ErrorCode.BAD_BOOK, 'bookSymbols without book')
  assert.equal(code({ bookMode: 'merge' }, []), ErrorCode.BAD_BOOK, 'bookMode without book')
  assert.equal(code({ book: '10', bookMode: 'fast' }), ErrorCode.BAD_BOOK)
  assert.deepEqual(parseStreamBook({ book: '10', bookMaxRate: '2.5' }, ['A']), { ok: true, request: { op: 'sub', symbols: ['A'], book: 10, maxRate: 2.5 } })
  for (const bookMaxRate of ['0', '5000', 'x', '']) assert.equal(code({ book: '10', bookMaxRate }), ErrorCode.BAD_BOOK, bookMaxRate)
  assert.equal(code({ book: '10', bookMode: 'distinct', bookMaxRate: '2' }), ErrorCode.BAD_BOOK, 'a rate with distinct')
  assert.equal(code({ bookMaxRate: '2' }, []), ErrorCode.BAD_BOOK, 'bookMaxRate without book')
})

test('property: a reader\'s q frame is byte for byte the frame of its joined strings, at every header size; a string when every delta is ASCII', () => {
  // Lengths that put the payload on each side of the 126 and 65,536-byte
  // header boundaries; non-ASCII text, where string and byte lengths differ.
  const long = fc.constantFrom('a'.repeat(70_000), 'é'.repeat(70_000), 'b'.repeat(200))
  const delta = fc.record({ symbol: fc.stringMatching(/^[A-Z]{1,5}$/), seq: fc.nat(), x: fc.oneof(fc.string({ maxLength: 40 }), long) })
  fc.assert(fc.property(fc.array(delta, { minLength: 1, maxLength: 8 }), (deltas) => {
    const json = deltas.map((d) => JSON.stringify(d))
    const ascii = json.every((j) => [...j].every((c) => c.charCodeAt(0) < 0x80))
    const joined = quotesFrame(json.map((j) => ({ json: j, bytes: Buffer.from(j), ascii: Buffer.byteLength(j) === j.length })))
    const whole = new TextFrame(encodeQuotes(json))
    assert.equal(typeof joined.wire === 'string', ascii)
    const wire = typeof joined.wire === 'string' ? Buffer.from(joined.wire, 'latin1') : joined.wire
    assert.deepEqual(wire, whole.wire)
    assert.equal(joined.length, whole.length)
    assert.equal(joined.payload.toString(), encodeQuotes(json))
  }), { numRuns: 300 })
})
