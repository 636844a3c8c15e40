// The cluster's Prometheus as the e2e sees it (infra/local-cluster/manifests/
// prometheus.yaml): its HTTP API on a loopback NodePort, the rules ConfigMap
// it loads, and the two checks built on them: the chart's alerts and the
// chart's dashboard queries.
import { readFileSync } from 'node:fs'

export class Prometheus {
  /** @param {string} url base URL, e.g. http://127.0.0.1:30090 */
  constructor (url) {
    this.url = url
  }

  /** GET /api/v1/<path>; returns `data`, throws on an API error. */
  async api (path, params = {}) {
    const q = new URLSearchParams(params).toString()
    const res = await fetch(`${this.url}/api/v1/${path}${q ? '?' + q : ''}`, { signal: AbortSignal.timeout(15000) })
    const body = await res.json()
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.errorType} ${body.error}`)
    return body.data
  }

  /** Instant query: the result vector. */
  async query (expr) {
    return (await this.api('query', { query: expr })).result
  }

  /** Active alerts named `name` (pending or firing) with label namespace=`ns`. */
  async alerts (name, ns) {
    const { alerts } = await this.api('alerts')
    return alerts.filter((a) => a.labels.alertname === name && a.labels.namespace === ns)
  }

  /** Names of the rule groups Prometheus has loaded. */
  async ruleGroups () {
    const { groups } = await this.api('rules')
    return groups.map((g) => g.name)
  }

  /** POST /-/reload (--web.enable-lifecycle): re-read config and rule files. */
  async reload () {
    const res = await fetch(`${this.url}/-/reload`, { method: 'POST', signal: AbortSignal.timeout(15000) })
    if (!res.ok) throw new Error(`prometheus reload: HTTP ${res.status}`)
  }
}

/**
 * The panels of a Grafana dashboard JSON that query Prometheus, each with its
 * queries and the dashboard's variables filled in.
 * @returns {{title: string, exprs: string[]}[]}
 */
export function dashboardPanels (file, vars) {
  const dash = JSON.parse(readFileSync(file, 'utf8'))
  const panels = (dash.panels || []).flatMap((p) => [p, ...(p.panels || [])])
  const fill = (p, expr) => expr.replace(/\$(\w+)|\$\{(\w+)\}/g, (m, a, b) => {
    const v = vars[a || b]
    if (v === undefined) throw new Error(`dashboard ${file}: panel "${p.title}" uses $${a || b}, which the e2e does not set`)
    return v
  })
  return panels
    .map((p) => ({ title: p.title, exprs: (p.targets || []).filter((t) => t.expr).map((t) => fill(p, t.expr)) }))
    .filter((p) => p.exprs.length)
}
