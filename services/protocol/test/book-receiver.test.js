// BookReceiver: the client's side of docs/protocol.md "Order books". Frames
// are built by hand, or from a reference book the way the gateway builds
// them (window, windowDelta, bookChecksum), and every rule is broken once.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { OrderBook, bookChecksum, windowDelta } from '../book.js'
import { BookReceiver, BookVerdict } from '../book-receiver.js'

const S = 'BTC-USD'

/** The documented snapshot (its checksum is 764765537). */
const SNAPSHOT = { op: 'book', symbol: S, depth: 10, seq: 41, epoch: 'hohrttbiv1', ts: 1, bids: [['100.5', '2'], ['100.4', '1.25']], asks: [['100.6', '3']], checksum: 764765537 }

/**
 * @param {number} seq
 * @param {number} prev
 * @param {{bids?: [string, string][], asks?: [string, string][]}} levels
 * @param {{bids: [string, string][], asks: [string, string][]}} after the window the frame leads to
 */
const levels = (seq, prev, { bids = [], asks = [] }, after) =>
  /** @type {import('../book-receiver.js').BookFrame} */ ({ op: 'levels', symbol: S, depth: 10, seq, prev, ts: seq, bids, asks, checksum: bookChecksum(after) })

/** The documented snapshot, held. */
function holding () {
  const r = new BookReceiver()
  r.want(S, 10)
  assert.equal(r.frame(/** @type {any} */ (SNAPSHOT)), BookVerdict.APPLIED)
  return r
}

/** After the documented delta (seq 42, prev 41): */
const AFTER_42 = { bids: /** @type {[string, string][]} */ ([['100.4', '1.25'], ['100.3', '4']]), asks: /** @type {[string, string][]} */ ([['100.6', '3']]) }
const DELTA_42 = { bids: /** @type {[string, string][]} */ ([['100.5', '0'], ['100.3', '4']]) }

test('a snapshot replaces what is held; the documented delta applies on it, to the documented checksum', () => {
  const r = holding()
  assert.deepEqual(r.book(S), { symbol: S, depth: 10, seq: 41, epoch: 'hohrttbiv1', sync: true, ts: 1, bids: SNAPSHOT.bids, asks: SNAPSHOT.asks })
  const f = levels(42, 41, DELTA_42, AFTER_42)
  assert.equal(f.checksum, 2463534139, 'the checksum docs/protocol.md gives')
  const before = r.book(S)
  assert.equal(r.frame(f), BookVerdict.APPLIED)
  assert.deepEqual(r.book(S), { symbol: S, depth: 10, seq: 42, epoch: 'hohrttbiv1', sync: true, ts: 42, ...AFTER_42 })
  assert.notEqual(r.book(S), before, 'a new object per change')
  assert.equal(before?.seq, 41, 'the previous view is left as it was')
})

test('levels apply when prev ≤ held < seq: a jump of seq is fine, a skipped prev, a duplicate or an old one is a gap', () => {
  // prev below the held seq (the window did not change for a while): applies.
  assert.equal(holding().frame(levels(50, 30, DELTA_42, AFTER_42)), BookVerdict.APPLIED)
  assert.equal(holding().frame(levels(42, 41, DELTA_42, AFTER_42)), BookVerdict.APPLIED, 'prev equal to held')
  for (const [seq, prev, why] of [[43, 42, 'prev past the held seq: a lost update'], [41, 40, 'seq equal to held: a duplicate'], [40, 39, 'an old frame']]) {
    const r = holding()
    const held = r.book(S)
    assert.equal(r.frame(levels(/** @type {number} */ (seq), /** @type {number} */ (prev), DELTA_42, AFTER_42)), BookVerdict.GAP, /** @type {string} */ (why))
    assert.equal(r.book(S), held, `${why}: nothing changed`)
  }
  const r = holding()
  const noPrev = /** @type {any} */ ({ ...levels(42, 41, DELTA_42, AFTER_42), prev: undefined })
  assert.equal(r.frame(noPrev), BookVerdict.GAP, 'a levels frame without prev')
})

test('a levels frame naming another epoch is a gap; levels before any snapshot are a gap', () => {
  const r = holding()
  assert.equal(r.frame({ ...levels(42, 41, DELTA_42, AFTER_42), epoch: 'other' }), BookVerdict.GAP)
  assert.equal(r.frame({ ...levels(42, 41, DELTA_42, AFTER_42), epoch: 'hohrttbiv1' }), BookVerdict.APPLIED, 'the held epoch applies')
  const fresh = new BookReceiver()
  fresh.want(S, 10)
  assert.equal(fresh.frame(levels(42, 41, DELTA_42, AFTER_42)), BookVerdict.GAP)
  assert.equal(fresh.book(S), undefined)
})

test('a wrong checksum is reported, on a delta and on a snapshot; the frame is applied all the same', () => {
  const r = holding()
  assert.equal(r.frame({ ...levels(42, 41, DELTA_42, AFTER_42), checksum: 2463534138 }), BookVerdict.CHECKSUM_MISMATCH)
  assert.equal(r.book(S)?.seq, 42)
  // A delta that forgets to delete the level leaving the window: the held book differs.
  const r2 = holding()
  assert.equal(r2.frame(levels(42, 41, { bids: [['100.3', '4']] }, AFTER_42)), BookVerdict.CHECKSUM_MISMATCH)
  const r3 = new BookReceiver()
  r3.want(S, 10)
  assert.equal(r3.frame(/** @type {any} */ ({ ...SNAPSHOT, checksum: 1 })), BookVerdict.CHECKSUM_MISMATCH)
})

test('more levels than the depth never match: the checksum is of everything held', () => {
  const r = new BookReceiver()
  r.want(S, 10)
  const bids = /** @type {[string, string][]} */ (Array.from({ length: 11 }, (_, i) => [String(100 - i), '1']))
  // The checksum of the top 10 only: what a receiver that trimmed would compute.
  const top = { bids: bids.slice(0, 10), asks: [] }
  assert.equal(r.frame({ op: 'book', symbol: S, depth: 10, seq: 1, epoch: 'e', bids, asks: [], checksum: bookChecksum(top) }), BookVerdict.CHECKSUM_MISMATCH)
  assert.equal(r.book(S)?.bids.length, 10, 'the view shows the depth')
})

test('sync:false: held empty and out of sync, levels are gaps, the next snapshot brings it back', () => {
  const r = holding()
  assert.equal(r.frame({ op: 'book', symbol: S, depth: 10, seq: 41, epoch: 'hohrttbiv1', sync: false, bids: [], asks: [], checksum: 2343686810 }), BookVerdict.OUT_OF_SYNC)
  assert.deepEqual(r.book(S), { symbol: S, depth: 10, seq: 41, epoch: 'hohrttbiv1', sync: false, ts: null, bids: [], asks: [] })
  assert.equal(r.frame(levels(42, 41, { bids: [['1', '1']] }, { bids: [['1', '1']], asks: [] })), BookVerdict.GAP, 'no levels while out of sync')
  assert.equal(r.frame(/** @type {any} */ ({ ...SNAPSHOT, seq: 1, epoch: 'new' })), BookVerdict.APPLIED, 'a snapshot of a new epoch, at a lower seq')
  assert.equal(r.book(S)?.epoch, 'new')
  // An out-of-sync snapshot whose checksum is wrong is a mismatch first.
  assert.equal(r.frame({ op: 'book', symbol: S, depth: 10, seq: 2, epoch: 'new', sync: false, bids: [], asks: [], checksum: 1 }), BookVerdict.CHECKSUM_MISMATCH)
})

test('interrupt(): every book in sync is held empty and out of sync (the client\'s link lost or silent); levels are gaps until a snapshot', () => {
  const r = holding()
  r.want('ETH-USD', 25)
  assert.deepEqual(r.interrupt(), [S], 'only a book held in sync flips (ETH-USD has none yet)')
  assert.deepEqual(r.book(S), { symbol: S, depth: 10, seq: 41, epoch: 'hohrttbiv1', sync: false, ts: 1, bids: [], asks: [] })
  assert.deepEqual(r.interrupt(), [], 'once')
  assert.equal(r.frame(levels(42, 41, DELTA_42, AFTER_42)), BookVerdict.GAP, 'the delta that would have continued it')
  assert.equal(r.frame(/** @type {any} */ (SNAPSHOT)), BookVerdict.APPLIED)
  assert.equal(r.book(S)?.sync, true)
})

test('resync(): levels are RESYNCING until the snapshot; frames of another depth or symbol are ignored', () => {
  const r = holding()
  r.resync(S, 123)
  assert.equal(r.resyncingSince(S), 123)
  assert.equal(r.frame(levels(42, 41, DELTA_42, AFTER_42)), BookVerdict.RESYNCING)
  assert.equal(r.book(S)?.seq, 41, 'held stays readable')
  assert.equal(r.frame(/** @type {any} */ ({ ...SNAPSHOT, seq: 60 })), BookVerdict.APPLIED)
  assert.equal(r.resyncingSince(S), undefined)
  assert.equal(r.frame({ ...levels(61, 60, DELTA_42, AFTER_42), depth: 25 }), BookVerdict.IGNORED)
  assert.equal(r.frame({ ...levels(61, 60, DELTA_42, AFTER_42), symbol: 'ETH-USD' }), BookVerdict.IGNORED)
  r.want(S, 25)
  assert.equal(r.book(S), undefined, 'a new depth starts from its own snapshot')
  assert.equal(r.frame(/** @type {any} */ (SNAPSHOT)), BookVerdict.IGNORED, 'the old depth is a late frame now')
  r.forget(S)
  assert.deepEqual(r.symbols, [])
})

test('many random updates through windows built like the gateway\'s: the receiver holds exactly the top N', () => {
  let seed = 11
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 }
  const ref = new OrderBook()
  for (let i = 1; i <= 30; i++) ref.apply({ bids: [[String(100 - i / 4), '1']], asks: [[String(100 + i / 4), '1']] })
  const r = new BookReceiver()
  r.want(S, 10)
  let window = ref.top(10)
  let windowSeq = 1
  assert.equal(r.frame({ op: 'book', symbol: S, depth: 10, seq: 1, epoch: 'e', ...window, checksum: bookChecksum(window) }), BookVerdict.APPLIED)
  let sent = 0
  for (let seq = 2; seq < 800; seq++) {
    const side = rnd() < 0.5 ? 'bids' : 'asks'
    const off = 1 + Math.floor(rnd() * 40) / 4
    ref.apply({ [side]: [[String(side === 'bids' ? 100 - off : 100 + off), rnd() < 0.3 ? '0' : String(1 + Math.floor(rnd() * 100) / 10)]] })
    const next = ref.top(10)
    const delta = windowDelta(window, next)
    if (delta.bids.length + delta.asks.length === 0) continue
    assert.equal(r.frame({ op: 'levels', symbol: S, depth: 10, seq, prev: windowSeq, ...delta, checksum: bookChecksum(next) }), BookVerdict.APPLIED, `seq ${seq}`)
    window = next
    windowSeq = seq
    sent++
    assert.deepEqual({ bids: r.book(S)?.bids, asks: r.book(S)?.asks }, ref.top(10))
  }
  assert.ok(sent > 100, `${sent} frames`)
})
