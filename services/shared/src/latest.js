// Reading symbols' latest quotes, the one way every reader does it. The
// publish script keeps the latest quote in the symbol's `last` key with
// history off and as its history stream's newest entry with history on
// (scripts.js, PUBLISH): a reader asks the LATEST script, which returns the
// newer of the two, so it needs to know neither the fetcher's setting nor
// whether it changed.

import { Cluster } from 'ioredis'
import { untraced } from './published.js'

/** Symbols per script call: bounds how long one call holds Redis. */
const CHUNK = 500

/**
 * The latest quote (JSON, as published, without a trace) of each symbol, null where none. On
 * a single Redis one round trip, all or nothing; on a Cluster one call per
 * symbol (its keys share its slot), and a symbol whose shard fails (down,
 * failing over) is an Error in its place instead of failing every symbol.
 *
 * @param {import('./scripts.js').ScriptedRedis} client a single Redis or a Cluster (typed as the former), with registerScripts()
 * @param {import('./keys.js').RedisKeys} keys
 * @param {string[]} symbols
 * @param {{waitMs?: number}} [options] on a Cluster, a symbol whose shard has
 *   not answered within waitMs is an Error too (a shard failing over must
 *   not hold back the others' symbols: a fetch job reads before it fetches)
 * @returns {Promise<(string | null | Error)[]>}
 */
export async function latestQuotes (client, keys, symbols, { waitMs } = {}) {
  if (symbols.length === 0) return []
  if (/** @type {unknown} */ (client) instanceof Cluster) {
    // (Typed as the single client, a Cluster narrows to never.)
    const one = /** @type {import('./scripts.js').ScriptedRedis} */ (/** @type {unknown} */ (client))
    /** @type {NodeJS.Timeout | undefined} */
    let timer
    const late = waitMs === undefined
      ? null
      : new Promise((resolve) => { timer = setTimeout(resolve, Math.max(0, waitMs), new Error(`its shard did not answer within ${waitMs} ms`)) })
    const reads = symbols.map((s) => {
      const read = one.wspsLatestOne(keys.history(s), keys.latest(s)).then(([q]) => q === null ? q : untraced(q), (/** @type {Error} */ err) => err)
      return late === null ? read : Promise.race([read, late])
    })
    const out = await Promise.all(reads)
    clearTimeout(timer)
    return /** @type {(string | null | Error)[]} */ (out)
  }
  const pipeline = /** @type {any} */ (client.pipeline())
  for (let i = 0; i < symbols.length; i += CHUNK) {
    const part = symbols.slice(i, i + CHUNK).flatMap((s) => [keys.history(s), keys.latest(s)])
    pipeline.wspsLatest(part.length, ...part)
  }
  const results = /** @type {[Error | null, (string | null)[]][]} */ (await pipeline.exec())
  return results.flatMap(([err, quotes]) => {
    if (err) throw err
    return quotes.map((q) => q === null ? q : untraced(q))
  })
}
