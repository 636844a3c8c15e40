#!/usr/bin/env python3
"""Every value in charts/wsps/values.yaml is documented, and known to the schema.

  check-values-docs.py         check (make chart-test)
  check-values-docs.py --fix   copy the `# --` texts into the schema's descriptions (make chart-generate)


A key passes when it has a `# --` comment (helm-docs), or when it is a
section (a non-empty mapping) all of whose keys pass. A documented mapping or
list (resources, probes, ...) documents its content too. helm-docs' own strict
mode wants a comment on every nested leaf of such defaults, which is noise.
Every key must also appear in values.schema.json (which sets
additionalProperties: false on sections, so a typo in user values fails too).
"""
import json
import os
import re
import sys

import yaml

CHART = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'wsps')


def documented_paths(text):
    """{dotted key path: its `# --` text} of values.yaml."""
    doc, stack, pending = {}, [], None
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r'^# -- (.*)$', s)
        if m:
            pending = m.group(1)
            continue
        if not s or s.startswith('#'):
            continue
        m = re.match(r'^(\s*)([A-Za-z0-9_.-]+):', line)
        if m and not s.startswith('-'):
            depth = len(m.group(1)) // 2
            stack = stack[:depth] + [m.group(2)]
            if pending is not None:
                doc['.'.join(stack)] = pending
        pending = None
    return doc


def schema_node(schema, path):
    node = schema
    for key in path.split('.'):
        node = (node or {}).get('properties', {}).get(key)
    return node


def main():
    fix = '--fix' in sys.argv[1:]
    text = open(os.path.join(CHART, 'values.yaml'), encoding='utf-8').read()
    values = yaml.safe_load(text)
    schema = json.load(open(os.path.join(CHART, 'values.schema.json'), encoding='utf-8'))
    doc = documented_paths(text)
    problems = []

    def walk(node, sch, path):
        for key, val in node.items():
            p = f'{path}.{key}' if path else key
            props = (sch or {}).get('properties')
            if props is not None and key not in props:
                problems.append(f'{p}: not in values.schema.json')
            sub = (props or {}).get(key)
            if p in doc:
                continue
            if isinstance(val, dict) and val:
                walk(val, sub, p)
            else:
                problems.append(f'{p}: no `# --` comment (helm-docs)')

    walk(values, schema, '')
    # the schema's descriptions are the `# --` texts (editor tooltips)
    stale = 0
    for path, comment in doc.items():
        node = schema_node(schema, path)
        if node is not None and node.get("description") != comment:
            if fix:
                node["description"] = comment
            else:
                stale += 1
                problems.append(f'{path}: description in values.schema.json differs from its `# --` comment')
    if fix:
        with open(os.path.join(CHART, 'values.schema.json'), 'w', encoding='utf-8') as f:
            json.dump(schema, f, indent=2)
            f.write('\n')
    if not text.startswith('# yaml-language-server: $schema=values.schema.json'):
        problems.append('values.yaml must start with `# yaml-language-server: $schema=values.schema.json`')
    if problems:
        print('values.yaml documentation problems:')
        for p in problems:
            print('  ' + p)
        print('(`make chart-generate` copies the comments into values.schema.json; the rest needs an edit)')
        return 1
    print(f'values.yaml: {len(doc)} documented values, all in values.schema.json')
    return 0


if __name__ == '__main__':
    sys.exit(main())
