// The merge subscribers of one symbol at one maxRate: their own merged
// update, handed to the fanout at most once per 1/maxRate (conflated on the
// server: what arrives in between merges into it).

import { mergeUpdates } from './delta.js'
import { removeFrom } from './unordered.js'

/**
 * @typedef {import('./delta.js').Update} Update
 * @typedef {import('./connection.js').Connection} Client
 */

export class Lane {
  /** @type {Client[]} */
  #clients = []
  /** @type {Update | null} merged since the lane last went out */
  #update = null
  /** @type {string | null} the full quote `update` leads to */
  #lastRaw = null
  /** @type {string | null} what every subscriber of the lane holds: the base of its next update */
  #sentRaw
  /** Handed to the fanout, or waiting for its time. */
  #queued = false
  /** Earliest time the next update may go out. */
  #nextAt = 0
  /** @type {NodeJS.Timeout | null} */
  #timer = null
  #intervalMs
  #fanout

  /**
   * @param {number} rate updates per second
   * @param {import('./fanout.js').Fanout} fanout
   * @param {string | null} sentRaw the full quote its first subscribers get as snapshot
   */
  constructor (rate, fanout, sentRaw) {
    this.#intervalMs = 1000 / rate
    this.#fanout = fanout
    this.#sentRaw = sentRaw
  }

  /** @returns {readonly Client[]} the subscribers (the fanout reads them) */
  get clients () {
    return this.#clients
  }

  /** @returns {null} lanes have no distinct subscribers */
  get distinct () {
    return null
  }

  /** @returns {string | null} the full quote a subscriber joining now starts from */
  get sentRaw () {
    return this.#sentRaw
  }

  /** @param {Client} client */
  add (client) {
    this.#clients.push(client)
  }

  /**
   * @param {Client} client
   * @returns {boolean} whether it was there
   */
  remove (client) {
    return removeFrom(this.#clients, client)
  }

  /** Subscribers left. */
  get size () {
    return this.#clients.length
  }

  /**
   * A new update of the symbol: merged into what waits, queued for the
   * fanout now or when the interval has passed.
   *
   * @param {Update} update
   * @param {string | null} lastRaw
   */
  offer (update, lastRaw) {
    this.#update = this.#update === null ? update : mergeUpdates(this.#update, update)
    this.#lastRaw = lastRaw
    if (this.#queued) return
    this.#queued = true
    const wait = this.#nextAt - Date.now()
    if (wait <= 0) this.#fanout.queue(this)
    else this.#timer = setTimeout(this.#due, wait).unref()
  }

  #due = () => {
    this.#timer = null
    this.#fanout.queue(this)
  }

  /**
   * Called by the fanout at the start of a pass.
   *
   * @returns {Update | null}
   */
  take () {
    this.#queued = false
    const u = this.#update
    this.#update = null
    if (u !== null) {
      this.#sentRaw = this.#lastRaw
      this.#nextAt = Date.now() + this.#intervalMs
    }
    return u
  }

  /** @returns {null} */
  takeTicks () {
    return null
  }

  /** @param {string | null} raw what every subscriber now holds */
  settle (raw) {
    this.#update = null
    this.#sentRaw = this.#lastRaw = raw
  }

  stop () {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
  }
}
