// The WSPS_* environment each wsps pod of a rendered chart would start
// with, rebuilt as the kubelet builds it: the ConfigMaps of envFrom, then
// the container's env ($(NAME) references filled in from the variables
// before it, downward-API fields given stand-in values). What `wsps
// check-config --values/--rendered` hands to the services' own loaders.

import yaml from 'js-yaml'

/** The Deployments' components that run a service, by the service's name in check-config. */
export const COMPONENTS = Object.freeze({ gateway: 'gateway', fetcher: 'fetcher' })

/** What the downward API gives a container, for the fields the chart reads. */
const FIELDS = Object.freeze({ 'status.podIP': '10.1.2.3', 'metadata.name': 'wsps-pod-0' })

/**
 * @typedef {{service: 'gateway' | 'fetcher', deployment: string, env: Record<string, string>}} PodEnv
 */

/**
 * @param {string} text manifests (YAML documents), as `helm template` prints them
 * @returns {PodEnv[]} one per gateway or fetcher Deployment
 */
export function podEnvironments (text) {
  const docs = /** @type {any[]} */ (yaml.loadAll(text)).filter((d) => d && typeof d === 'object')
  /** @type {Map<string, Record<string, unknown>>} */
  const configMaps = new Map(docs.filter((d) => d.kind === 'ConfigMap').map((d) => [d.metadata?.name, d.data ?? {}]))
  /** @type {PodEnv[]} */
  const out = []
  for (const d of docs) {
    if (d.kind !== 'Deployment') continue
    const service = Object.entries(COMPONENTS).find(([, c]) => c === d.metadata?.labels?.['app.kubernetes.io/component'])?.[0]
    if (service === undefined) continue
    const container = d.spec?.template?.spec?.containers?.[0] ?? {}
    /** @type {Record<string, string>} */
    const env = {}
    for (const src of container.envFrom ?? []) {
      for (const [k, v] of Object.entries(configMaps.get(src.configMapRef?.name) ?? {})) env[k] = String(v)
    }
    for (const e of container.env ?? []) {
      env[e.name] = 'value' in e ? expand(String(e.value), env) : fromThePod(e)
    }
    out.push({ service: /** @type {'gateway' | 'fetcher'} */ (service), deployment: d.metadata.name, env })
  }
  return out
}

/**
 * A valueFrom entry's value, as the kubelet would set it.
 *
 * @param {any} entry
 */
function fromThePod (entry) {
  const field = entry.valueFrom?.fieldRef?.fieldPath
  return /** @type {Record<string, string>} */ (FIELDS)[field] ?? 'from-the-pod'
}

/**
 * Kubernetes' $(NAME) expansion of an env value from the variables before it ($$ escapes).
 *
 * @param {string} value
 * @param {Record<string, string>} env
 */
function expand (value, env) {
  return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name) => all === '$$' ? '$' : env[name] ?? all)
}
