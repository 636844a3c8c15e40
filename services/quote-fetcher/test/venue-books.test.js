// The venue book state machines (book-binance.js, book-kraken.js) and the
// book templates that read the venues' messages (book-templates.js), pure:
// each rule of the venues' "manage a local order book" guides, and each way
// the book goes wrong when a rule is broken.
import assert from 'node:assert/strict'
import { crc32 } from 'node:zlib'
import { test } from 'node:test'
import { DepthBook, DepthStep } from '../src/providers/book-binance.js'
import { KrakenBook, KrakenStep, krakenChecksum } from '../src/providers/book-kraken.js'
import { BOOK_TEMPLATES, numberTextReviver, streamBookProblems } from '../src/providers/book-templates.js'
import { readFileSync } from 'node:fs'
import { loadFetcherConfig } from '../src/config.js'

/** @param {number} U @param {number} u @param {[string, string][]} [bids] @param {[string, string][]} [asks] @param {number} [pu] */
const ev = (U, u, bids = [], asks = [], pu) => ({ U, u, bids, asks, ...(pu === undefined ? {} : { pu }) })
/** @type {import('../src/providers/book-binance.js').DepthSnapshot} */
const snap = { lastUpdateId: 100, bids: [['10', '1'], ['9', '2']], asks: [['11', '1'], ['12', '3']] }

test('binance-depth: events are buffered until the snapshot; those it holds are dropped, the first after it straddles it', () => {
  const b = new DepthBook()
  assert.equal(b.event(ev(95, 99, [['10', '5']])), DepthStep.BUFFERED)
  assert.equal(b.event(ev(100, 102, [['9', '0']], [['11', '4']])), DepthStep.BUFFERED)
  assert.equal(b.event(ev(103, 103, [['8', '1']])), DepthStep.BUFFERED)
  assert.equal(b.synced, false)
  assert.equal(b.snapshot(snap), DepthStep.APPLIED)
  assert.equal(b.synced, true)
  // 95..99 is in the snapshot (its 10 -> 5 is not applied); 100..102 and 103 are.
  assert.deepEqual(b.top(10), { bids: [['10', '1'], ['8', '1']], asks: [['11', '4'], ['12', '3']] })
  assert.equal(b.event(ev(101, 103)), DepthStep.DROPPED, 'an event the book holds')
  assert.equal(b.event(ev(104, 106, [], [['12', '0']])), DepthStep.APPLIED)
  assert.deepEqual(b.top(1), { bids: [['10', '1']], asks: [['11', '4']] })
})

test('binance-depth: a snapshot older than the first buffered event is stale: still buffering, the next snapshot syncs', () => {
  const b = new DepthBook()
  b.event(ev(110, 112, [['10', '7']]))
  assert.equal(b.snapshot(snap), DepthStep.STALE_SNAPSHOT, '101..109 were never received')
  assert.equal(b.synced, false)
  assert.equal(b.snapshot({ ...snap, lastUpdateId: 111 }), DepthStep.APPLIED)
  assert.deepEqual(b.top(1).bids, [['10', '7']])
  // Fetched before anything was buffered: the first event after it does not join it.
  const early = new DepthBook()
  assert.equal(early.snapshot(snap), DepthStep.BUFFERED)
  assert.equal(early.synced, false, 'not in sync before an event joins the snapshot')
  assert.equal(early.event(ev(105, 107)), DepthStep.STALE_SNAPSHOT)
  assert.equal(early.synced, false)
  const joined = new DepthBook()
  joined.snapshot(snap)
  assert.equal(joined.event(ev(100, 101)), DepthStep.APPLIED)
  assert.equal(joined.synced, true)
})

test('binance-depth: a missing event, or two out of order, is a gap: the book is lost until a new snapshot', () => {
  for (const [name, second] of /** @type {const} */ ([['missing', ev(104, 105)], ['out of order', ev(103, 103)]])) {
    const b = new DepthBook()
    assert.equal(b.snapshot(snap), DepthStep.BUFFERED)
    assert.equal(b.event(ev(101, 101)), DepthStep.APPLIED)
    if (name === 'out of order') assert.equal(b.event(ev(104, 105)), DepthStep.GAP, '102..103 not seen yet')
    else {
      assert.equal(b.event(ev(102, 102)), DepthStep.APPLIED)
      assert.equal(b.event(second), DepthStep.GAP, '103 missing')
    }
    assert.equal(b.synced, false, name)
    assert.deepEqual(b.top(10), { bids: [], asks: [] }, 'nothing of a lost book')
    assert.equal(b.event(ev(106, 106)), DepthStep.BUFFERED, 'buffering for the next snapshot')
  }
})

test('binance-depth (futures): each event names the one before (pu), but not the first after the snapshot', () => {
  const b = new DepthBook()
  b.snapshot(snap)
  assert.equal(b.event(ev(99, 104, [], [], 97)), DepthStep.APPLIED, 'the first straddles the snapshot')
  assert.equal(b.event(ev(110, 112, [], [], 104)), DepthStep.APPLIED, 'ids may jump; pu chains them')
  assert.equal(b.event(ev(113, 115, [], [], 111)), DepthStep.GAP)
})

test('kraken-book: the checksum string is the top 10 asks then bids, each number without "." and leading zeros', () => {
  const asks = [{ price: '0.05005', qty: '0.00000500' }, { price: '0.05010', qty: '1.50000000' }]
  const bids = [{ price: '0.05000', qty: '12.00000000' }]
  assert.equal(krakenChecksum({ bids, asks }), crc32('5005500' + '5010150000000' + '50001200000000'))
  const many = Array.from({ length: 12 }, (_, i) => ({ price: `${100 + i}.0`, qty: '1.0' }))
  assert.equal(krakenChecksum({ bids: [], asks: many }), crc32(many.slice(0, 10).map((l) => `${l.price.replace('.', '')}10`).join('')), 'only 10 levels')
})

/**
 * A Kraken message of these levels, checksummed over `reference` (the venue's top, best first).
 * @param {{bids?: [string, string][], asks?: [string, string][]}} levels
 * @param {{bids: [string, string][], asks: [string, string][]}} reference
 */
function kraken ({ bids = [], asks = [] }, reference) {
  const raw = (/** @type {[string, string][]} */ side) => side.map(([price, qty]) => ({ price, qty }))
  return { bids, asks, raw: { bids: raw(bids), asks: raw(asks) }, checksum: krakenChecksum({ bids: raw(reference.bids), asks: raw(reference.asks) }) }
}

test('kraken-book: levels pushed out of the subscribed depth are cut, so one the venue deleted out there never comes back', () => {
  const depth = 10
  const asks = /** @type {[string, string][]} */ (Array.from({ length: 10 }, (_, i) => [String(101 + i), '1']))
  const bids = /** @type {[string, string][]} */ ([['100', '1']])
  const b = new KrakenBook(depth)
  assert.equal(b.update(kraken({ asks }, { bids, asks })), KrakenStep.DROPPED, 'an update before any snapshot')
  assert.equal(b.snapshot(kraken({ bids, asks }, { bids, asks })), KrakenStep.APPLIED)
  // An ask at 100.5 pushes 110 out of the 10 (Kraken sends no delete for it) ...
  const window1 = [['100.5', '2'], ...asks.slice(0, 9)]
  assert.equal(b.update(kraken({ asks: [['100.5', '2']] }, { bids, asks: /** @type {any} */ (window1) })), KrakenStep.APPLIED)
  // ... 110 is then deleted out of the window (no message), 101 in it: 111 enters.
  const window2 = [['100.5', '2'], ...asks.slice(1, 9), ['111', '4']]
  assert.equal(b.update(kraken({ asks: [['101', '0'], ['111', '4']] }, { bids, asks: /** @type {any} */ (window2) })), KrakenStep.APPLIED, 'the checksum matches only with 110 cut')
  assert.deepEqual(b.top(depth).asks, window2)
})

test('kraken-book: a checksum that does not match loses the book until the next snapshot', () => {
  const ref = { bids: /** @type {[string, string][]} */ ([['100', '1']]), asks: /** @type {[string, string][]} */ ([['101', '1']]) }
  const b = new KrakenBook(10)
  b.snapshot(kraken(ref, ref))
  const bad = kraken({ bids: [['100', '2']] }, { ...ref, bids: [['100', '2']] })
  assert.equal(b.update({ ...bad, checksum: bad.checksum ^ 1 }), KrakenStep.CHECKSUM)
  assert.equal(b.synced, false)
  assert.deepEqual(b.top(10), { bids: [], asks: [] })
  assert.equal(b.update(bad), KrakenStep.DROPPED)
  assert.equal(b.snapshot(kraken(ref, ref)), KrakenStep.APPLIED)
})

test('kraken-book template: the numbers\' text as sent (trailing zeros and all) is what the checksum is over', () => {
  const t = BOOK_TEMPLATES['kraken-book']
  const text = '{"channel":"book","type":"snapshot","data":[{"symbol":"BTC/USD","bids":[{"price":45283.5,"qty":0.10000000}],"asks":[{"price":45285.2,"qty":0.00100000}],"checksum":' +
    crc32('452852' + '100000' + '452835' + '10000000') + '}]}'
  const read = t.read(JSON.parse(text, numberTextReviver(t.textFields)))
  assert.ok(read)
  assert.equal(read.records[0].symbol, 'BTC-USD')
  const b = t.create(10)
  assert.equal(read.records[0].feed(b), 'applied')
  assert.deepEqual(b.top(10), { bids: [['45283.5', '0.1']], asks: [['45285.2', '0.001']] }, 'published canonical')
  assert.deepEqual(t.read(JSON.parse(text)), { records: [], malformed: 1 }, 'numbers parsed as doubles lost the text the checksum is over')
  assert.deepEqual(t.read({ channel: 'heartbeat' }), null, 'not a book message: the quote mapping\'s')
  assert.deepEqual(t.read({ method: 'subscribe', result: { channel: 'book', symbol: 'BTC/USD', depth: 10 }, success: true }), { records: [], malformed: 0 })
  assert.deepEqual(JSON.parse(t.subscribe(['BTC-USD'], 25)[0]), { method: 'subscribe', params: { channel: 'book', symbol: ['BTC/USD'], depth: 25 } })
})

test('binance-depth template: bare and combined-stream events; malformed ones counted; subscriptions in stream names', () => {
  const t = BOOK_TEMPLATES['binance-depth']
  const e = { e: 'depthUpdate', E: 1, s: 'BNBBTC', U: 157, u: 160, b: [['0.0024', '10']], a: [['0.0026', '100']] }
  for (const m of [e, { stream: 'bnbbtc@depth@100ms', data: e }]) {
    const read = t.read(m)
    assert.equal(read?.records[0].symbol, 'BNBBTC')
    const b = t.create(100)
    assert.equal(read?.records[0].feed(b), 'buffered')
  }
  assert.deepEqual(t.read({ ...e, b: [['x', '1']] }), { records: [], malformed: 1 })
  assert.deepEqual(t.read({ ...e, U: '157' }), { records: [], malformed: 1 })
  assert.deepEqual(t.read({ result: null, id: 3 }), { records: [], malformed: 0 }, 'the answer to a subscribe')
  assert.equal(t.read({ T: 'q', S: 'AAPL' }), null)
  assert.deepEqual(JSON.parse(t.subscribe(['BNBBTC'], 100)[0]).params, ['bnbbtc@depth@100ms'])
  assert.deepEqual(t.snapshotOf?.({ lastUpdateId: 5, bids: [['1.50', '2']], asks: [] }), { lastUpdateId: 5, bids: [['1.5', '2']], asks: [] })
  assert.equal(t.snapshotOf?.({ lastUpdateId: 5, bids: [['1', '0']], asks: [] }), null, 'a snapshot holds no empty level')
})

test('coinbase-level2 template: snapshot and updates by side; an update before the snapshot is not applied; sequence_num read', () => {
  const t = BOOK_TEMPLATES['coinbase-level2']
  const u = (/** @type {string} */ side, /** @type {string} */ price_level, /** @type {string} */ new_quantity) => ({ side, event_time: '2023-02-09T20:32:50Z', price_level, new_quantity })
  const message = (/** @type {string} */ type, /** @type {unknown[]} */ updates) => ({ channel: 'l2_data', timestamp: '2023-02-09T20:32:50.714964855Z', sequence_num: 7, events: [{ type, product_id: 'BTC-USD', updates }] })
  const b = t.create(100)
  const update = t.read(message('update', [u('bid', '21921.5', '1')]))
  assert.equal(update?.records[0].feed(b), 'dropped')
  const snap = t.read(message('snapshot', [u('bid', '21921.73', '0.06317902'), u('offer', '21921.74', '1.50')]))
  assert.equal(snap?.records[0].symbol, 'BTC-USD')
  assert.equal(snap?.records[0].feed(b), 'applied')
  t.read(message('update', [u('bid', '21921.73', '0'), u('bid', '21920', '2')]))?.records[0].feed(b)
  assert.deepEqual(b.top(10), { bids: [['21920', '2']], asks: [['21921.74', '1.5']] })
  assert.equal(t.sequence?.(message('update', [])), 7)
  assert.deepEqual(t.read({ channel: 'subscriptions', sequence_num: 1, events: [{ subscriptions: { level2: ['BTC-USD'] } }] }), { records: [], malformed: 0 })
  assert.deepEqual(t.read(message('update', [u('ask', '1', '1')])), { records: [], malformed: 1 }, 'a side is bid or offer')
  assert.equal(t.read({ channel: 'ticker', sequence_num: 8, events: [] }), null, 'the quote mapping\'s (its sequence_num counts all the same)')
})

test('book settings are checked at start-up with what to set', () => {
  assert.deepEqual(streamBookProblems({ streamBooks: 'none', streamBookDepth: 7, streamBookSnapshotUrl: '' }), [])
  assert.match(streamBookProblems({ streamBooks: 'kraken-book', streamBookDepth: 20, streamBookSnapshotUrl: '' })[0], /WSPS_STREAM_BOOK_DEPTH must be one of 10, 25/)
  assert.match(streamBookProblems({ streamBooks: 'binance-depth', streamBookDepth: 100, streamBookSnapshotUrl: 'ftp://x' })[0], /WSPS_STREAM_BOOK_SNAPSHOT_URL must be an http\(s\) URL with \{symbol\}/)
  assert.deepEqual(streamBookProblems({ streamBooks: 'binance-depth', streamBookDepth: 100, streamBookSnapshotUrl: 'https://api.binance.com/api/v3/depth?symbol={symbol}&limit={depth}' }), [])
  assert.deepEqual(streamBookProblems({ streamBooks: 'coinbase-level2', streamBookDepth: 37, streamBookSnapshotUrl: '' }), [], 'the whole book: any depth')
})

test('docs/feeding.md\'s book configurations, as a reader copies them, start a fetcher', () => {
  const doc = readFileSync(new URL('../../../docs/feeding.md', import.meta.url), 'utf8')
  const blocks = [...doc.matchAll(/```sh test:syntax\n([^`]*)```/g)].map((m) => m[1]).filter((b) => b.includes('WSPS_STREAM_BOOKS='))
  assert.equal(blocks.length, 3, 'a Binance, a Kraken and a Coinbase block')
  const seen = []
  for (const block of blocks) {
    const env = Object.fromEntries(block.trim().split('\n').map((line) => {
      const [, k, v] = /^(\w+)=(.*)$/.exec(line) ?? []
      return [k, v.replace(/^'(.*)'$/, '$1')]
    }))
    seen.push(loadFetcherConfig(env).streamBooks)
  }
  assert.deepEqual(seen.sort(), ['binance-depth', 'coinbase-level2', 'kraken-book'])
})
