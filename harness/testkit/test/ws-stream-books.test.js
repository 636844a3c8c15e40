// Order books from a venue stream through the real services: a fake venue
// (fake-book-venue.js, its own process: a Binance-style diff depth stream
// with REST snapshots, a Kraken-style book with CRC32 checksums, a
// Coinbase-style level2 numbered per connection), a
// ws-stream fetcher per venue (WSPS_STREAM_BOOKS) on a real redis-server, a
// gateway and a real JS client holding the books. Every book the client
// showed as in sync must be one the venue really had, in the venue's order
// (its top 10 at some point of its history, never going back), through an
// injected gap, a reordered event, a stale snapshot, a bad checksum, a
// message lost on the connection and a dropped connection, each
// of which is seen: the book goes out of sync, then comes back.

import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { holdBooks, setUp, sleep, startFakeBookVenue, useStack, waitFor } from '../src/index.js'

const DEPTH = 10

/** @type {{close: () => void}[]} */
const closers = []
after(() => { for (const c of closers) c.close() })
after(() => Promise.all([on.binance, on.kraken, on.coinbase].filter(Boolean).map((v) => v.kill())))
const stack = useStack()

/**
 * A ws-stream fetcher with the venue's book template and a gateway, under a
 * key prefix of their own (each venue's symbols are streamed by its fetcher).
 * @param {string} prefix
 * @param {Record<string, string | number>} env
 */
async function streamed (prefix, env) {
  const fetcher = await stack.fetcher({
    WSPS_REDIS_KEY_PREFIX: prefix, WSPS_PROVIDER: 'ws-stream', WSPS_STREAM_TICK_MS: 100, WSPS_STREAM_BACKOFF_MS: 100, ...env
  })
  const gw = await stack.gateway({ WSPS_REDIS_KEY_PREFIX: prefix })
  return { fetcher, gw }
}

const on = setUp(async () => {
  const [binance, kraken, coinbase] = await Promise.all([
    startFakeBookVenue({ dialect: 'binance', seed: 7 }),
    startFakeBookVenue({ dialect: 'kraken', seed: 8, tickMs: 10 }),
    startFakeBookVenue({ dialect: 'coinbase', seed: 9 })
  ])
  const [bn, kr, cb] = await Promise.all([
    streamed('bn', {
      WSPS_STREAM_URL: binance.streamUrl,
      WSPS_STREAM_SUBSCRIBE: '{"method":"SUBSCRIBE","params":{symbols},"id":1}',
      WSPS_STREAM_UNSUBSCRIBE: '{"method":"UNSUBSCRIBE","params":{symbols},"id":2}',
      WSPS_STREAM_BOOKS: 'binance-depth',
      WSPS_STREAM_BOOK_DEPTH: 100,
      WSPS_STREAM_BOOK_SNAPSHOT_URL: binance.snapshotUrl
    }),
    streamed('kr', {
      WSPS_STREAM_URL: kraken.streamUrl,
      WSPS_STREAM_SUBSCRIBE: '{"method":"subscribe","params":{"channel":"ticker","symbol":{symbols}}}',
      WSPS_STREAM_UNSUBSCRIBE: '{"method":"unsubscribe","params":{"channel":"ticker","symbol":{symbols}}}',
      WSPS_STREAM_BOOKS: 'kraken-book',
      WSPS_STREAM_BOOK_DEPTH: DEPTH
    }),
    streamed('cb', {
      WSPS_STREAM_URL: coinbase.streamUrl,
      WSPS_STREAM_SUBSCRIBE: '{"type":"subscribe","product_ids":{symbols},"channel":"ticker"}',
      WSPS_STREAM_UNSUBSCRIBE: '{"type":"unsubscribe","product_ids":{symbols},"channel":"ticker"}',
      WSPS_STREAM_BOOKS: 'coinbase-level2',
      WSPS_STREAM_BOOK_DEPTH: 100
    })
  ])
  return { binance, kraken, coinbase, bn, kr, cb }
})

/** @param {string} url @param {string[]} symbols */
async function holder (url, symbols) {
  const h = await holdBooks(url, symbols, DEPTH, { waitMs: 20_000 })
  closers.push(h.client)
  return h
}

/**
 * Each book the client showed in sync, found in the venue's history at or
 * after the point the one before it was found at.
 * @param {import('../src/book-holders.js').HeldBook[]} held
 * @param {string} symbol
 * @param {string[]} history
 * @returns {{compared: number, wrong: string[], unsynced: number}}
 */
function judge (held, symbol, history) {
  let at = 0
  let compared = 0
  let unsynced = 0
  const wrong = []
  for (const e of held) {
    if (e.symbol !== symbol) continue
    if (!e.sync) {
      unsynced++
      continue
    }
    const i = history.indexOf(e.top, at)
    if (i < 0) wrong.push(e.top)
    else {
      at = i
      compared++
    }
  }
  return { compared, wrong, unsynced }
}

/** @param {{held: unknown[]}} h @param {number} more */
const moving = async (h, more) => {
  const target = h.held.length + more
  await waitFor(() => h.held.length >= target, { timeout: 15_000, message: `${more} more books` })
}

/** @param {import('../src/index.js').ServiceHandle} fetcher @param {string} series */
const counted = async (fetcher, series) => (await fetcher.metrics())[series] ?? 0

/** @param {{client: import('@wsps/client').WspsClient}} h @param {string} symbol */
const inSync = (h, symbol) => waitFor(() => h.client.book(symbol)?.sync === true, { timeout: 15_000, message: `${symbol} in sync again` })

test('binance-depth: every book shown in sync is the venue\'s, in order; a dropped event, a reordered one and a stale snapshot each resync', async (t) => {
  const { binance, bn } = on
  const symbols = ['BK1USDT', 'BK2USDT']
  const h = await holder(bn.gw.wsUrl, symbols)
  await moving(h, 40)
  const gap = 'wsps_fetcher_stream_book_resyncs_total{reason="gap"}'
  assert.equal(await counted(bn.fetcher, gap), 0, 'no gap on a clean stream')

  await binance.fault('gap', 'BK1USDT')
  await waitFor(async () => await counted(bn.fetcher, gap) >= 1, { message: 'the dropped event seen as a gap' })
  await inSync(h, 'BK1USDT')
  await moving(h, 20)

  await binance.fault('reorder', 'BK2USDT')
  await waitFor(async () => await counted(bn.fetcher, gap) >= 2, { message: 'the reordered event seen as a gap' })
  await inSync(h, 'BK2USDT')

  // The snapshot after the next gap is from 100 events back: fetched again.
  await binance.fault('stale', 'BK1USDT')
  await binance.fault('gap', 'BK1USDT')
  await waitFor(async () => await counted(bn.fetcher, 'wsps_fetcher_stream_book_resyncs_total{reason="stale_snapshot"}') >= 1, { message: 'the stale snapshot refused' })
  await inSync(h, 'BK1USDT')
  await moving(h, 20)
  await sleep(100)

  for (const s of symbols) {
    const { compared, wrong, unsynced } = judge(h.held, s, await binance.history(s))
    t.diagnostic(`${s}: ${compared} books compared, ${unsynced} shown out of sync`)
    assert.deepEqual(wrong, [], `${s}: no book shown in sync that the venue did not have`)
    assert.ok(compared >= 20, `${s}: books compared: ${compared}`)
    assert.ok(unsynced >= 1, `${s}: the resync seen by the client`)
  }
  assert.ok((await binance.state()).snapshots >= 5, 'REST snapshots: one per book and one per resync')
})

test('kraken-book: every book shown in sync is the venue\'s top 10, in order (levels pushed out cut); a bad checksum resyncs', async (t) => {
  const { kraken, kr } = on
  const symbols = ['BK1-USD', 'BK2-USD']
  const h = await holder(kr.gw.wsUrl, symbols)
  // Long enough for a level pushed out of the depth to be deleted out there and the window to reach it (~80 updates a symbol).
  await moving(h, 400)
  const checksum = 'wsps_fetcher_stream_book_resyncs_total{reason="checksum"}'
  assert.equal(await counted(kr.fetcher, checksum), 0, 'every checksum matched on a clean stream: the book is cut to its depth')

  await kraken.fault('checksum', 'BK1-USD')
  await waitFor(async () => await counted(kr.fetcher, checksum) >= 1, { message: 'the bad checksum seen' })
  await inSync(h, 'BK1-USD')
  await moving(h, 30)
  await sleep(100)
  assert.equal(await counted(kr.fetcher, checksum), 1, 'one resync, then every checksum matched again')

  for (const s of symbols) {
    const { compared, wrong, unsynced } = judge(h.held, s, await kraken.history(s))
    t.diagnostic(`${s}: ${compared} books compared, ${unsynced} shown out of sync`)
    assert.deepEqual(wrong, [], `${s}: no book shown in sync that the venue did not have`)
    assert.ok(compared >= 20, `${s}: books compared: ${compared}`)
  }
  assert.ok(judge(h.held, 'BK1-USD', await kraken.history('BK1-USD')).unsynced >= 1, 'the resync seen by the client')
})

test('coinbase-level2: every book shown in sync is the venue\'s, in order; a message lost on the connection resyncs every book of it, a dropped connection too', async (t) => {
  const { coinbase, cb } = on
  const symbols = ['BK1-USD', 'BK2-USD']
  const h = await holder(cb.gw.wsUrl, symbols)
  await moving(h, 40)
  const gap = 'wsps_fetcher_stream_book_resyncs_total{reason="gap"}'
  assert.equal(await counted(cb.fetcher, gap), 0, 'no message lost on a clean stream (the ticker\'s answer counts too)')

  await coinbase.fault('gap', 'BK1-USD')
  await waitFor(async () => await counted(cb.fetcher, gap) >= 2, { message: 'both books of the connection resynced' })
  await inSync(h, 'BK1-USD')
  await inSync(h, 'BK2-USD')
  await moving(h, 30)

  // The connection dropped: every book it carried out of sync, then in sync again on the next one.
  const before = h.held.filter((e) => !e.sync).length
  await coinbase.drop()
  await waitFor(() => h.held.filter((e) => !e.sync).length >= before + 2, { message: 'both books out of sync when the connection dropped' })
  await inSync(h, 'BK1-USD')
  await inSync(h, 'BK2-USD')
  await moving(h, 30)
  await sleep(100)

  for (const s of symbols) {
    const { compared, wrong, unsynced } = judge(h.held, s, await coinbase.history(s))
    t.diagnostic(`${s}: ${compared} books compared, ${unsynced} shown out of sync`)
    assert.deepEqual(wrong, [], `${s}: no book shown in sync that the venue did not have`)
    assert.ok(compared >= 20, `${s}: books compared: ${compared}`)
    assert.ok(unsynced >= 1, `${s}: the resync seen by the client`)
  }
})
