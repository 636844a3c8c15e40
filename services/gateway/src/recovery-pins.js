// The recoveries waiting on one feed (feed.js) for a subscriber they will
// add: a recovery's `sub` with `since` (recovery.js) or a bar series'
// backfill (bars/bar-hub.js), through Hub#whenLive() and Hub#unpin(). While
// any is, the feed is pinned: never swept as idle, however long the history
// reads take. And it keeps every quote it holds meanwhile, in seq order: a
// recovery's history read ends at the quote the feed held when it began,
// and what the feed took in during the read is here (Hub#recent()), so the
// recovery need not read again (and chase a symbol that ticks faster than a
// read). A feed holds one only while pinned: it is made by the first pin
// and dropped with the last.

import { seqOf } from '@wsps/shared/published'

export class RecoveryPins {
  /** Recoveries waiting (the first made it). */
  #count = 1
  /** @type {string[]} every quote the feed held since it was first pinned, in seq order */
  #recent = []
  #max

  /** @param {number} max most quotes kept (WSPS_RECOVERY_MAX) */
  constructor (max) {
    this.#max = max
  }

  /** One more recovery waits. */
  pin () {
    this.#count++
  }

  /** @returns {boolean} whether a recovery still waits (false: the last one is done) */
  unpin () {
    return --this.#count > 0
  }

  /**
   * The feed holds a newer quote: kept while fewer than `max` are.
   *
   * @param {string} raw as published
   */
  held (raw) {
    if (this.#recent.length < this.#max) this.#recent.push(raw)
  }

  /**
   * The quotes held since the first pin with seq from..to, in order; null
   * unless every one of them is here.
   *
   * @param {number} from
   * @param {number} to
   * @returns {string[] | null}
   */
  recent (from, to) {
    if (to < from) return []
    const recent = this.#recent
    const first = recent.findIndex((r) => seqOf(r) === from)
    if (first < 0 || first + (to - from) >= recent.length) return null
    const out = recent.slice(first, first + to - from + 1)
    return seqOf(out[out.length - 1]) === to ? out : null
  }
}
