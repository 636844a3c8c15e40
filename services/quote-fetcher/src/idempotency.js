// The publish API's idempotency records (`Idempotency-Key`): a retried
// request must never publish twice, whichever fetcher replica it reaches.
// One record per key in Redis, taken atomically (the ONCE script) before
// anything is published: of two replicas handed the same request at once,
// one takes it and publishes, the other sees it taken. The record holds the
// request's fingerprint (so a key reused for another body is told apart) and,
// once the request is published, its answer, for WSPS_PUBLISH_IDEMPOTENCY_TTL_MS.
// Knows nothing of HTTP: publish-api.js turns its verdicts into answers.

import { createHash } from 'node:crypto'

/** 1-128 printable ASCII characters (space included). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7e]{1,128}$/

/** @param {string} text */
const sha256 = (text) => createHash('sha256').update(text).digest('hex')

/**
 * What a record says about a request (take()):
 * - `taken`: nobody had the key; it is this request's now: publish, then settle() or forget().
 * - `pending`: a request with the key is being published (here or on another replica).
 * - `done`: one with the key was published; `answer` is what it was answered.
 * `same` (pending, done): that request had the same fingerprint (body) as this one.
 * @typedef {{state: 'taken', record: string} | {state: 'pending', same: boolean} | {state: 'done', same: boolean, answer: unknown}} Verdict
 */

export class IdempotencyRecords {
  #redis
  #keys
  #ttlMs

  /**
   * @param {object} options
   * @param {import('@wsps/shared/scripts').ScriptedRedis} options.redis
   * @param {import('@wsps/shared/keys').RedisKeys} options.keys
   * @param {number} options.ttlMs WSPS_PUBLISH_IDEMPOTENCY_TTL_MS
   */
  constructor ({ redis, keys, ttlMs }) {
    this.#redis = redis
    this.#keys = keys
    this.#ttlMs = ttlMs
  }

  /**
   * Takes the key for a request unless a record of it exists.
   * @param {string} key the Idempotency-Key (valid: IDEMPOTENCY_KEY_PATTERN)
   * @param {string} body the request as sent (its fingerprint: its content type and bytes)
   * @returns {Promise<Verdict & {fingerprint: string}>}
   */
  async take (key, body) {
    // Hashed: any printable key becomes a short key name with no braces
    // (which would pick a Cluster slot of their own).
    const record = this.#keys.idempotency(sha256(key))
    const fingerprint = sha256(body)
    const prior = await this.#redis.wspsOnce(record, `pending ${fingerprint}`, this.#ttlMs)
    if (prior === null) return { state: 'taken', record, fingerprint }
    const [state, was, ...answer] = prior.split(' ')
    const same = was === fingerprint
    if (state === 'done') return { state, same, answer: JSON.parse(answer.join(' ')), fingerprint }
    return { state: 'pending', same, fingerprint }
  }

  /**
   * The request published: its answer is what a retry gets, for the window.
   * @param {string} record from take()
   * @param {string} fingerprint from take()
   * @param {unknown} answer JSON-serialisable
   */
  settle (record, fingerprint, answer) {
    return this.#redis.set(record, `done ${fingerprint} ${JSON.stringify(answer)}`, 'PX', this.#ttlMs)
  }

  /**
   * The request was not published (refused by the rate limit, or Redis
   * failed): the key is free again, for the client's retry.
   * @param {string} record from take()
   */
  forget (record) {
    return this.#redis.del(record)
  }
}
