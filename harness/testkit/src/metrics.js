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
