#!/usr/bin/env python3
"""Check that kustomize/ builds the same objects as `helm template`.

For every overlay (kustomize/overlays/*) and every test combination
(kustomize/tests/*), `kustomize build` is compared with `helm template` of
charts/wsps given the equivalent values:

  kustomize/base/values.yaml, then, walking the kustomization (its resource
  directories first, then its components, then itself), every `values.yaml`
  of a component (what render-kustomize.py generated it from) and every
  `equivalent-values.yaml` (the chart values that the directory's
  hand-written patches and generators stand for).

So a hand-written patch that says something the chart cannot say, or a
component whose settings are lost (ingress components dropping trustProxy,
an external-redis placeholder beating the overlay's URL), fails here.

Normalised before comparing: Helm-only labels, checksum and hook annotations (and
the version label of generated ConfigMaps), trailing newlines of ConfigMap data,
kustomize's hash suffixes on generated ConfigMaps/Secrets, metadata.namespace,
and the order of list items that are sets (env, envFrom, volumes by name).
Objects only kustomize has are allowed when the chart deliberately leaves
them to the user: Namespaces and the Secret named by redis.auth.existingSecret.

  check-kustomize-equivalence.py            every overlay and test
  check-kustomize-equivalence.py DIR...     only these kustomization dirs

Needs $HELM and $KUSTOMIZE (tools/tools.sh env) and PyYAML.
"""
import difflib
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CHART = os.path.join(ROOT, 'charts', 'wsps')
KUST = os.path.join(ROOT, 'kustomize')
RELEASE = 'wsps'
HASHED = re.compile(r'^(.+)-[a-z0-9]{10}$')


def run(cmd):
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f'{" ".join(cmd)} failed:\n{res.stderr}')
    return res.stdout


def load_kustomization(d):
    with open(os.path.join(d, 'kustomization.yaml')) as f:
        return yaml.safe_load(f) or {}


def values_files(d, seen=None):
    """Values files equivalent to kustomization dir d, in merge order."""
    seen = set() if seen is None else seen
    d = os.path.realpath(d)
    if d in seen:
        return []
    seen.add(d)
    k = load_kustomization(d)
    out = []
    for r in k.get('resources', []):
        p = os.path.join(d, r)
        if os.path.isdir(p):
            out += values_files(p, seen)
    for c in k.get('components', []):
        out += values_files(os.path.join(d, c), seen)
    for name in ('values.yaml', 'equivalent-values.yaml'):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            out.append(p)
    return out


def namespace_of(d):
    """The namespace kustomize sets: the nearest kustomization that sets one."""
    k = load_kustomization(d)
    if k.get('namespace'):
        return k['namespace']
    for r in k.get('resources', []):
        p = os.path.join(d, r)
        if os.path.isdir(p):
            ns = namespace_of(p)
            if ns:
                return ns
    return None


def docs(text):
    return [d for d in yaml.safe_load_all(text) if d]


def merged_values(files):
    """The few merged values the normalisation needs (existingSecret)."""
    out = {}
    for f in files:
        with open(f) as fh:
            v = yaml.safe_load(fh) or {}
        secret = ((v.get('redis') or {}).get('auth') or {}).get('existingSecret')
        if secret is not None:
            out['redisSecret'] = secret
    return out


def unhash(obj, names):
    """Replace kustomize's hashed generator names by the plain ones, anywhere."""
    if isinstance(obj, dict):
        return {k: unhash(v, names) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unhash(v, names) for v in obj]
    if isinstance(obj, str) and obj in names:
        return names[obj]
    return obj


SET_LISTS = {'env': 'name', 'volumes': 'name', 'volumeMounts': 'name', 'ports': 'name'}


def normalise(obj):
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            v = normalise(v)
            if k == 'labels' and isinstance(v, dict):
                # Helm's own labels, wherever a template puts labels (pod
                # templates, the TestRun's runner)
                v = {n: x for n, x in v.items() if n not in ('helm.sh/chart', 'app.kubernetes.io/managed-by')}
            if k in SET_LISTS and isinstance(v, list) and all(isinstance(x, dict) for x in v):
                v = sorted(v, key=lambda x: str(x.get(SET_LISTS[k], x)))
            if k == 'envFrom' and isinstance(v, list):
                v = sorted(v, key=lambda x: yaml.safe_dump(x))
            out[k] = v
        return out
    if isinstance(obj, list):
        return [normalise(v) for v in obj]
    return obj


def clean_meta(doc, generated=False):
    if doc.get('kind') == 'ConfigMap':
        # a file read by a generator and a template's block scalar differ in
        # trailing newlines only
        doc['data'] = {k: v.rstrip() for k, v in (doc.get('data') or {}).items()}
    if generated:
        # generator labels are hand-written in kustomize/base: the chart's
        # version label would go stale there on every release
        doc['metadata'].get('labels', {}).pop('app.kubernetes.io/version', None)
    for meta in (doc.get('metadata', {}), doc.get('spec', {}).get('template', {}).get('metadata', {})):
        meta.pop('namespace', None)
        ann = meta.get('annotations') or {}
        for k in [k for k in ann if k.startswith(('checksum/', 'helm.sh/hook'))]:
            del ann[k]
        if 'annotations' in meta and not ann:
            del meta['annotations']
    return doc


def keyed(objs):
    return {(o['kind'], o['metadata']['name']): o for o in objs}


def compare(d):
    rel = os.path.relpath(d, ROOT)
    files = values_files(d)
    ns = namespace_of(d) or RELEASE
    kdocs = docs(run([os.environ.get('KUSTOMIZE', 'kustomize'), 'build', d]))
    cmd = [os.environ.get('HELM', 'helm'), 'template', RELEASE, CHART, '--namespace', ns]
    for f in files:
        cmd += ['-f', f]
    hdocs = docs(run(cmd))

    # kustomize's generated names: wsps-gateway-<hash> -> wsps-gateway
    names = {}
    for o in kdocs:
        if o['kind'] in ('ConfigMap', 'Secret'):
            m = HASHED.match(o['metadata']['name'])
            if m:
                names[o['metadata']['name']] = m.group(1)
    k = keyed(normalise(clean_meta(unhash(o, names), o['metadata']['name'] in names)) for o in kdocs)
    h = keyed(normalise(clean_meta(o, (o['kind'], o['metadata']['name']) in
                                   {(x['kind'], names[x['metadata']['name']]) for x in kdocs
                                    if x['metadata']['name'] in names})) for o in hdocs)

    allowed_extra = {('Secret', merged_values(files).get('redisSecret'))}
    problems = []
    for key in sorted(set(k) | set(h)):
        if key not in h:
            if key[0] == 'Namespace' or key in allowed_extra:
                continue
            problems.append(f'{key[0]}/{key[1]}: only in the kustomize build')
        elif key not in k:
            problems.append(f'{key[0]}/{key[1]}: only in helm template')
        elif k[key] != h[key]:
            a = yaml.safe_dump(h[key], sort_keys=True).splitlines(True)
            b = yaml.safe_dump(k[key], sort_keys=True).splitlines(True)
            diff = ''.join(difflib.unified_diff(a, b, 'helm template', 'kustomize build', n=2))
            problems.append(f'{key[0]}/{key[1]} differs:\n{diff}')
    shown = ' + '.join(os.path.relpath(f, KUST) for f in files)
    if problems:
        print(f'FAIL {rel}  (values: {shown})')
        for p in problems:
            print('  ' + p.replace('\n', '\n    '))
        return False
    print(f'ok   {rel}: {len(k)} objects == helm template ({shown})')
    return True


def main(argv):
    dirs = argv or sorted(
        os.path.join(KUST, group, n)
        for group in ('overlays', 'tests')
        for n in os.listdir(os.path.join(KUST, group))
        if os.path.isfile(os.path.join(KUST, group, n, 'kustomization.yaml')))
    ok = True
    for d in dirs:
        try:
            ok = compare(os.path.abspath(d)) and ok
        except RuntimeError as e:
            print(f'FAIL {os.path.relpath(d, ROOT)}: {e}')
            ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
