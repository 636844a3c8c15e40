// Reading a venue's price levels into the canonical form of
// @wsps/protocol/book, once for every venue book.

import { decimal } from '@wsps/protocol/book'

/**
 * @typedef {import('@wsps/protocol/book').Level} Level
 */

/**
 * @param {unknown} price
 * @param {unknown} size
 * @returns {Level | null} null: not a positive price and a size as decimals
 */
export function venueLevel (price, size) {
  const p = decimal(typeof price === 'number' ? String(price) : price)
  const s = decimal(typeof size === 'number' ? String(size) : size)
  if (p === null || p === '0' || s === null) return null
  return [p, s]
}

/**
 * Binance-style levels: `[["0.0024","10"], ...]`.
 * @param {unknown} side
 * @returns {Level[] | null} null: something in it is not a level
 */
export function pairLevels (side) {
  if (side === undefined) return []
  if (!Array.isArray(side)) return null
  /** @type {Level[]} */
  const out = []
  for (const l of side) {
    const level = Array.isArray(l) ? venueLevel(l[0], l[1]) : null
    if (level === null) return null
    out.push(level)
  }
  return out
}
