// The reference table of which venue (an exchange's ISO 10383 MIC: XNAS,
// XNYS, ARCX...) lists which symbols, read once from WSPS_VENUES:
//
//   XNAS=AAPL MSFT NV*;XNYS=IBM GE;ARCX=SPY
//
// Venues apart by `;`, each `MIC=` and its symbols apart by spaces, exactly
// or as prefixes ending in `*`. An exact symbol wins over a prefix, a longer
// prefix over a shorter one; a symbol no entry names has no venue (a venue
// grant never covers it; symbol grants still do). A symbol or prefix named
// twice is a mistake, refused at start like every other one.

import { SYMBOL_PATTERN } from '@wsps/protocol'

/** An ISO 10383 market identifier code: four upper-case letters or digits. */
export const MIC_PATTERN = /^[A-Z0-9]{4}$/

/** @typedef {(symbol: string) => string | null} VenueOf a symbol's venue (null: none) */

/**
 * @param {string} text WSPS_VENUES
 * @returns {{ok: true, venueOf: VenueOf, venues: string[]} | {ok: false, problems: string[]}}
 */
export function parseVenues (text) {
  /** @type {Map<string, string>} */
  const exact = new Map()
  /** @type {[prefix: string, venue: string][]} */
  const prefixes = []
  /** @type {string[]} */
  const problems = []
  /** @type {Set<string>} */
  const venues = new Set()
  for (const entry of text.split(';').map((e) => e.trim()).filter(Boolean)) {
    const eq = entry.indexOf('=')
    const mic = eq === -1 ? entry : entry.slice(0, eq).trim()
    if (eq === -1 || !MIC_PATTERN.test(mic)) {
      problems.push(`WSPS_VENUES: "${mic.slice(0, 16)}" is not a MIC (four upper-case letters or digits) followed by =`)
      continue
    }
    venues.add(mic)
    for (const pattern of entry.slice(eq + 1).split(/\s+/).filter(Boolean)) {
      const prefix = pattern.endsWith('*')
      const body = prefix ? pattern.slice(0, -1) : pattern
      if (!(prefix && body === '') && !SYMBOL_PATTERN.test(body)) {
        problems.push(`WSPS_VENUES: "${pattern.slice(0, 32)}" (${mic}) is not a symbol or a prefix ending in *`)
        continue
      }
      const taken = prefix ? prefixes.find(([p]) => p === body)?.[1] : exact.get(body)
      if (taken !== undefined) {
        problems.push(`WSPS_VENUES: "${pattern}" is named twice (${taken} and ${mic})`)
        continue
      }
      if (prefix) prefixes.push([body, mic])
      else exact.set(body, mic)
    }
  }
  if (problems.length) return { ok: false, problems }
  // Longest prefix first: the first that matches is the most specific.
  prefixes.sort((a, b) => b[0].length - a[0].length)
  return {
    ok: true,
    venues: [...venues],
    venueOf: (symbol) => exact.get(symbol) ?? prefixes.find(([p]) => symbol.startsWith(p))?.[1] ?? null
  }
}

/**
 * The table of a configuration that was validated (loadGatewayConfig).
 *
 * @param {string} text WSPS_VENUES
 * @returns {VenueOf}
 */
export function venueTable (text) {
  const table = parseVenues(text)
  if (!table.ok) throw new Error(table.problems.join('; '))
  return table.venueOf
}
