#!/usr/bin/env python3
"""The services accept every WSPS_* setting the chart renders.

For each rendered manifest file given, the gateway and fetcher environments
are rebuilt as a pod would see them (ConfigMap from envFrom + the container's
env, with downward-API fields and $(NAME) references filled in), secret files
are pointed at a dummy file, and the services' own config loaders
(loadGatewayConfig / loadFetcherConfig, which reject unknown WSPS_* names and
invalid values) are run on them with node. Catches a chart that
renders a setting the services do not know, or a value they refuse.

  check-config-contract.py artifacts/chart-test/render/*.yaml
Needs node and the npm workspaces installed (node_modules/@wsps/shared).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
LOADERS = {
    'gateway': ('services/gateway/src/config.js', 'loadGatewayConfig'),
    'fetcher': ('services/quote-fetcher/src/config.js', 'loadFetcherConfig'),
}

NODE = r'''
const cases = JSON.parse(process.argv[1])
let bad = 0
for (const c of cases) {
  const mod = await import(c.module)
  try {
    mod[c.fn](c.env)
    console.log(`ok    ${c.name}`)
  } catch (err) {
    bad++
    console.log(`FAIL  ${c.name}: ${err.message}`)
  }
}
process.exit(bad ? 1 : 0)
'''


# What the downward API gives a container, for the fields the chart reads.
FIELDS = {'status.podIP': '10.1.2.3', 'metadata.name': 'wsps-gateway-0'}


def from_the_pod(entry):
    """A valueFrom entry's value, as the kubelet would set it."""
    field = entry.get('valueFrom', {}).get('fieldRef', {}).get('fieldPath')
    return FIELDS.get(field, 'from-the-pod')


def expand(value, env):
    """Kubernetes' $(NAME) expansion of an env value from the variables before it ($$ escapes)."""
    return re.sub(r'\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)',
                  lambda m: '$' if m.group(0) == '$$' else str(env.get(m.group(1), m.group(0))), str(value))


def main(files):
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        secret = os.path.join(tmp, 'secret')
        with open(secret, 'w') as f:
            f.write('x' * 48)
        for path in files:
            docs = [d for d in yaml.safe_load_all(open(path)) if d]
            cms = {d['metadata']['name']: d.get('data', {}) for d in docs if d['kind'] == 'ConfigMap'}
            for d in docs:
                if d['kind'] != 'Deployment':
                    continue
                component = d['metadata'].get('labels', {}).get('app.kubernetes.io/component')
                if component not in LOADERS:
                    continue
                ctr = d['spec']['template']['spec']['containers'][0]
                env = {}
                for src in ctr.get('envFrom', []):
                    env.update(cms.get(src.get('configMapRef', {}).get('name'), {}))
                for e in ctr.get('env', []):
                    env[e['name']] = expand(e['value'], env) if 'value' in e else from_the_pod(e)
                env = {k: (secret if k.endswith('_FILE') else str(v)) for k, v in env.items()}
                module, fn = LOADERS[component]
                cases.append({'name': f'{os.path.basename(path)} {component}', 'env': env,
                              'module': 'file://' + os.path.join(ROOT, module), 'fn': fn})
        if not cases:
            print('no gateway/fetcher Deployments found')
            return 1
        return subprocess.run(['node', '--input-type=module', '-e', NODE, json.dumps(cases)], cwd=ROOT).returncode


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
