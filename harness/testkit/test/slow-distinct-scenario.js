// A distinct-mode reader that stops reading, next to a merge-mode reader
// that stops too (harness/testkit/test/delivery-modes.test.js). Distinct
// updates are never merged nor skipped, so the distinct reader's send
// buffer grows until the hard cap cuts it with 4008; the merge reader is
// conflated, stays under the cap, and catches up when it reads again.
//
// Runs through isolate.js, in a private network namespace with small TCP
// buffers when possible: on the host's loopback a stopped reader absorbs
// tens of MB in the kernel before the gateway's own buffer grows.

import { Redis } from 'ioredis'
import { redisKeys } from '@wsps/shared/keys'
import { TestClient, startGateway, startRedis, waitFor } from '../src/index.js'

const keys = redisKeys('wsps')

/**
 * @typedef {object} SlowDistinctParams
 * @property {number} highWater WSPS_SEND_HIGH_WATER_BYTES
 * @property {number} sendMax WSPS_SEND_MAX_BYTES
 * @property {number} maxQuotes give up after publishing this many per symbol
 */

/**
 * Full quotes of one symbol with every field changing, so each delta is
 * about as large as a full quote.
 *
 * @param {string} symbol
 */
export function quoteStream (symbol) {
  let seq = 0
  return () => {
    seq++
    const p = 100 + (seq % 1000) / 7
    return JSON.stringify({
      seq, symbol, ts: Date.now(), bid: p - 0.013, ask: p + 0.017, last: p, bidSize: 100 + seq, askSize: 200 + seq,
      volume: 1e6 + seq, open: p - 1.1, high: p + 2.3, low: p - 3.7, prevClose: p - 0.5
    })
  }
}

/** @param {TestClient} c the TCP socket under its WebSocket */
const socketOf = (c) => /** @type {import('node:net').Socket} */ (/** @type {any} */ (c.ws)._socket)

/**
 * @param {SlowDistinctParams} p
 * @param {(line: string) => void} log
 */
export async function runSlowDistinct (p, log) {
  const redis = await startRedis()
  const r = new Redis(redis.url)
  const gw = await startGateway(redis.url, {
    WSPS_SEND_HIGH_WATER_BYTES: p.highWater, WSPS_SEND_MAX_BYTES: p.sendMax, WSPS_SLOW_CLOSE_MS: 600_000
  })
  const next = { D: quoteStream('SLOWD'), M: quoteStream('SLOWM') }
  /** @param {number} n quotes of each symbol (the distinct one's stop once it is cut) */
  const publish = async (n) => {
    const pipe = r.pipeline()
    for (let i = 0; i < n; i++) {
      for (const [s, q] of [['SLOWD', next.D()], ['SLOWM', next.M()]]) {
        pipe.set(keys.latest(s), q)
        pipe.publish(keys.channel(s), q)
      }
    }
    await pipe.exec()
  }
  try {
    await publish(1)
    const d = await TestClient.connect(gw.wsUrl)
    const m = await TestClient.connect(gw.wsUrl)
    const dAck = await d.sub(['SLOWD'], { mode: 'distinct' })
    await m.sub(['SLOWM'])
    await waitFor(() => d.quote('SLOWD') && m.quote('SLOWM'), { timeout: 10_000, message: 'snapshots' })
    for (const c of [d, m]) socketOf(c).pause()
    log('both readers paused; publishing until the distinct one is cut')
    let published = 0
    let closes = 0
    while (published < p.maxQuotes) {
      await publish(200)
      published += 200
      closes = (await gw.metrics())['wsps_gateway_closes_total{code="4008"}'] ?? 0
      if (closes > 0) break
    }
    log(`published ${published} quotes of each symbol; 4008 closes: ${closes}`)
    // The merge reader gets one merged delta per pass, so it fills its
    // buffers later: go on until the gateway conflates it.
    let metrics = await gw.metrics()
    while (!(metrics.wsps_gateway_conflated_total > 0) && published < p.maxQuotes) {
      await publish(200)
      published += 200
      metrics = await gw.metrics()
    }
    log(`published ${published}; conflated ${metrics.wsps_gateway_conflated_total}`)
    socketOf(m).resume()
    await publish(1)
    const last = published + 2
    let caughtUp = true
    try {
      await waitFor(() => m.quote('SLOWM')?.seq === last, { timeout: 60_000, message: 'the merge reader to catch up' })
    } catch {
      caughtUp = false
    }
    const result = {
      dAck,
      published,
      closes4008: closes,
      connectionsAfterCut: metrics.wsps_gateway_connections,
      conflated: metrics.wsps_gateway_conflated_total,
      merge: { caughtUp, open: m.closed === null, problems: m.problems, heldSeq: m.quote('SLOWM')?.seq, last },
      distinctBases: d.frames.filter((f) => f.op === 'q').flatMap((f) => f.quotes).filter((q) => q.base !== undefined).length
    }
    d.ws.terminate()
    m.ws.terminate()
    return result
  } finally {
    await gw.stop()
    r.disconnect()
    await redis.close()
  }
}
