// The ws-stream settings docs/feeding.md shows, so the tests run the exact
// configurations a reader copies.
import { readFileSync } from 'node:fs'

const DOC = new URL('../../../docs/feeding.md', import.meta.url)

/**
 * @param {string} name e.g. WSPS_STREAM_MAPPING
 * @returns {string[]} every value the page gives it (`NAME='value'` lines)
 */
export function documented (name) {
  const line = new RegExp(`^${name}='(.*)'$`, 'gm')
  return [...readFileSync(DOC, 'utf8').matchAll(line)].map((m) => m[1])
}
