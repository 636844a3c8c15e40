// Prometheus text exposition, read the way the tests and the bench compare
// it: one number per series, the per-process `node` label left out.

/**
 * Prometheus text -> {'name{labels}': value}.
 * @param {string} text
 */
export function parseMetrics (text) {
  /** @type {Record<string, number>} */
  const out = {}
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const i = line.lastIndexOf(' ')
    out[line.slice(0, i).replace(/,?node="[^"]*"/, '').replace('{}', '')] = Number(line.slice(i + 1))
  }
  return out
}

/**
 * The sum of the series of parsed metrics whose name and labels start with
 * `prefix` (`'wsps_fetcher_replica_waits_total{result="acked"'`: every
 * series of that name and label, whatever labels follow).
 *
 * @param {Record<string, number>} metrics what parseMetrics returns
 * @param {string} prefix
 */
export function sumMetrics (metrics, prefix) {
  let sum = 0
  for (const [k, v] of Object.entries(metrics)) if (k.startsWith(prefix)) sum += v
  return sum
}
