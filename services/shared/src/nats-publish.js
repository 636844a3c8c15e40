// The NATS JetStream writer of quotes: what the Redis publish script
// (scripts.js, PUBLISH) does for a provider's quote, on the quote stream
// (nats-layout.js). Per symbol:
//
//   - seq: the symbol's newest stored quote's seq + 1, never at or below
//     the caller's floor (the last seq it knows); epoch: that quote's. A
//     new epoch when there is none (first quote, or all of them aged out
//     past MaxAge: the count lives as long as the newest quote, unlike the
//     Redis counter, which never expires) or when the floor is above it.
//   - fence: a quote whose token is below the newest quote's (`fenced`) or
//     whose ts is below it (`old`) is refused, nothing stored. The newest
//     quote carries the fence in its headers (HEADER), so it lives as long
//     as that quote; its ts is capped at FENCE_FUTURE_MS ahead of this
//     writer's clock, as the script caps it ahead of Redis'.
//
// Atomicity comes from the stream, not from a script: every publish names
// the stream sequence of the symbol's newest quote it read
// (Nats-Expected-Last-Subject-Sequence), and the stream leader refuses it
// when another quote of that symbol was stored since. The writer then reads
// again and retries with the next seq (choosing to retry, not to refuse:
// two fetchers racing on one symbol both publish, one after the other, as
// two quotes do through the Redis script; the fence still refuses the older
// ts), up to ATTEMPTS times (NatsContendedError). So two writers never
// store one seq twice, nor interleave a seq out of order.
//
// The writer remembers what it stored last per symbol and expects that: a
// symbol written by one writer costs one round trip per quote; the read
// (from the stream leader, exact) happens only when the expectation failed.
// While the connection is down a publish is refused at once
// (NatsDownError), not held by the client until it reconnects and stored
// late as the newest (what the script's `late` deadline prevents on
// Redis). One already sent when the link went may still be stored on
// reconnect, but only if no other writer stored a quote of its symbol
// meanwhile. Not done here (the Redis script does them): the publish API's
// `pushed` lease, history pins, retiring.

import { setTimeout as sleep } from 'node:timers/promises'
import { headers } from '@nats-io/transport-node'
import { jetstream, jetstreamManager, JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream'
import { NatsContendedError, NatsDownError } from './errors.js'
import { HEADER } from './nats-layout.js'
import { composePublished, cursorOf } from './published.js'
import { FENCE_FUTURE_MS } from './scripts.js'

/**
 * The stream refused a publish because the symbol's newest quote is not
 * the one it expected: another writer's is stored (10071), or, on a
 * cluster, still being replicated (10164).
 *
 * @param {unknown} err
 */
const contended = (err) => err instanceof JetStreamApiError &&
  (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)

/** Tries of one quote against other writers before it fails. */
const ATTEMPTS = 10

/** What the publish script replies for a refused quote (scripts.js, REFUSED). */
const FENCED = -1
const OLD = -2

/**
 * A new epoch: this writer's clock in microseconds, in base 36 (the
 * script's newEpoch draws it from Redis' clock the same way).
 */
function newEpoch () {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)).toString(36)
}

/**
 * @typedef {object} Newest what a symbol's newest stored quote says
 * @property {number} at its stream sequence (0: none stored)
 * @property {number} seq
 * @property {string} epoch
 * @property {number} token
 * @property {number} ts
 *
 * @typedef {object} NatsQuote one quote, as publishArgs (scripts.js) takes it
 * @property {string} symbol
 * @property {string} body the quote's JSON without seq and epoch, starting `{"symbol":`
 * @property {number} floor the last seq the caller knows of the symbol
 * @property {number} [token] the fencing token of the claim it was fetched under (0: none)
 * @property {number} ts
 */

/** @type {Newest} */
const NONE = Object.freeze({ at: 0, seq: 0, epoch: '', token: 0, ts: -Infinity })

/**
 * @param {import('@nats-io/transport-node').NatsConnection} nc
 * @param {import('./nats-layout.js').NatsLayout} layout
 */
export async function natsPublisher (nc, layout) {
  const js = jetstream(nc)
  const jsm = await jetstreamManager(nc)
  /** @type {Map<string, Newest>} what this writer stored last, per symbol */
  const known = new Map()
  let up = true
  ;(async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'staleConnection') up = false
      else if (s.type === 'reconnect') up = true
    }
  })().catch(() => {})

  /** @param {string} symbol @returns {Promise<Newest>} */
  const readNewest = async (symbol) => {
    const m = await jsm.streams.getMessage(layout.stream, { last_by_subj: layout.subject(symbol) })
    if (!m) return NONE
    const cursor = cursorOf(m.string())
    return {
      at: m.seq,
      seq: cursor?.seq ?? 0,
      epoch: typeof cursor?.epoch === 'string' ? cursor.epoch : '',
      token: Number(m.header?.get(HEADER.token)) || 0,
      ts: Number(m.header?.get(HEADER.ts) || -Infinity)
    }
  }

  /** @type {Map<string, Promise<unknown>>} the last publish queued per symbol */
  const tails = new Map()

  /**
   * @param {NatsQuote} q
   * @returns {Promise<number>} its seq (> 0), or why it was refused (-1 fenced, -2 old)
   */
  const publishNow = async ({ symbol, body, floor, token = 0, ts }) => {
    if (!up) throw new NatsDownError('publish')
    const subject = layout.subject(symbol)
    let last = known.get(symbol) ?? await readNewest(symbol)
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (token < last.token) return FENCED
      if (ts < last.ts) return OLD
      const continues = last.at > 0 && last.epoch !== '' && last.seq >= floor
      const seq = continues ? last.seq + 1 : Math.max(floor, last.seq) + 1
      const epoch = continues ? last.epoch : newEpoch()
      const keepTs = Math.max(Math.min(ts, Date.now() + FENCE_FUTURE_MS), last.ts)
      const h = headers()
      h.set(HEADER.token, String(token))
      h.set(HEADER.ts, String(keepTs))
      try {
        const ack = await js.publish(subject, composePublished(seq, epoch, body.slice(1)), { headers: h, expect: { lastSubjectSequence: last.at } })
        known.set(symbol, { at: ack.seq, seq, epoch, token, ts: keepTs })
        return seq
      } catch (err) {
        if (!contended(err)) {
          known.delete(symbol)
          throw err
        }
        // Another writer stored a quote of it first (or it aged out): read
        // again, after a moment that grows (a cluster's leader refuses
        // while the other write is still being replicated, and the read
        // may not see it yet).
        await sleep(attempt)
        last = await readNewest(symbol)
      }
    }
    known.delete(symbol)
    throw new NatsContendedError(symbol, ATTEMPTS)
  }

  /**
   * Publishes a quote after this writer's earlier quotes of its symbol
   * (one at a time per symbol, in call order: the order a Redis pipeline
   * keeps), so only other writers contend for its seq.
   *
   * @param {NatsQuote} q
   * @returns {Promise<number>} its seq (> 0), or why it was refused (-1 fenced, -2 old)
   */
  const publish = (q) => {
    const run = (tails.get(q.symbol) ?? Promise.resolve()).then(() => publishNow(q))
    const tail = run.catch(() => {})
    tails.set(q.symbol, tail)
    tail.then(() => { if (tails.get(q.symbol) === tail) tails.delete(q.symbol) })
    return run
  }

  return { publish }
}
