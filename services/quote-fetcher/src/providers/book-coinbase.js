// A Coinbase-style level2 book (Advanced Trade channel `level2`, messages
// `l2_data`): a snapshot of the whole book, then updates of absolute sizes
// ("0" deletes). It carries no sequence of its own: the connection's
// `sequence_num` (every message of every channel counts) says whether a
// message was lost, and then every book of the connection is (stream-books.js).
// Pure: no I/O, no clock.

import { OrderBook } from '@wsps/protocol/book'

/**
 * @typedef {import('@wsps/protocol/book').Level} Level
 */

export class LevelsBook {
  #book = new OrderBook()
  #synced = false

  get synced () { return this.#synced }

  /** @param {number} depth @returns {{bids: Level[], asks: Level[]}} */
  top (depth) { return this.#book.top(depth) }

  /**
   * @param {{bids: Level[], asks: Level[]}} levels the whole book
   * @returns {'applied'}
   */
  snapshot (levels) {
    this.#book.reset(levels)
    this.#synced = true
    return 'applied'
  }

  /**
   * @param {{bids: Level[], asks: Level[]}} levels
   * @returns {'applied' | 'dropped'} dropped: before any snapshot
   */
  update (levels) {
    if (!this.#synced) return 'dropped'
    this.#book.apply(levels)
    return 'applied'
  }

  /** Not in sync any more (a message lost on the connection, the connection closed). */
  lost () {
    this.#synced = false
    this.#book.reset({})
  }
}
