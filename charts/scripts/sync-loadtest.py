#!/usr/bin/env python3
"""Link the k6 load test into the chart, or check that the links are current.

Helm's .Files only sees files inside the chart, so the chart holds one
symlink per file of loadtest/ plus every file outside it that those scripts
import or open() by relative path (services/protocol/*.js), under
charts/wsps/files/k6/<path in the repository>, each pointing at its source:
one copy of the code, and helm (template, install, package) reads the link's
target. Only files git tracks count (in a git checkout): local run results
and scratch files stay out, and so do the node unit tests of the helpers
(*.test.js), which k6 never loads. The tree is rebuilt in the k6 pods under
/scripts, so the relative imports resolve unchanged.

  sync-loadtest.py          write the links (make chart-generate)
  sync-loadtest.py --check  exit 1 if a link is missing, stale or not a link (make chart-test)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SRC = 'loadtest'
DEST = os.path.join(ROOT, 'charts', 'wsps', 'files', 'k6')
SKIP_DIRS = {'node_modules', 'results', 'out', '.cache'}
# node:test unit tests of the k6 helpers run on the host, not in k6
SKIP_FILES = re.compile(r'(\.test\.js|\.log|\.tar|\.tgz|\.html|~|\.swp)$')
# import x from './a.js' | import './a.js' | export * from '../b.js' | import('./c.js') | open('./d.json')
SPEC = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\bopen\s*\(\s*)(['"])(\.{1,2}/[^'"]+)\1""")
MAX_BYTES = 900 * 1024  # a ConfigMap holds at most 1 MiB


def listed_by_git():
    """Files under loadtest/ that git tracks, or None outside a git checkout."""
    try:
        out = subprocess.run(['git', '-C', ROOT, 'ls-files', '--cached', '-z', '--', SRC],
                             check=True, capture_output=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return None
    return sorted(p for p in out.split('\0') if p and os.path.isfile(os.path.join(ROOT, p)))


def source_files():
    """Repository-relative paths of everything the chart must carry."""
    wanted, todo = set(), []
    base = os.path.join(ROOT, SRC)
    git = listed_by_git()
    if git is not None:
        todo = [p for p in git if not os.path.basename(p).startswith('.') and not SKIP_FILES.search(p)]
    elif os.path.isdir(base):
        for d, dirs, files in os.walk(base):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith('.'))
            for f in sorted(files):
                if f.startswith('.') or SKIP_FILES.search(f):
                    continue
                todo.append(os.path.relpath(os.path.join(d, f), ROOT))
    while todo:
        rel = todo.pop()
        if rel in wanted:
            continue
        wanted.add(rel)
        if not rel.endswith(('.js', '.mjs')):
            continue
        with open(os.path.join(ROOT, rel), encoding='utf-8') as fh:
            text = fh.read()
        for _, spec in SPEC.findall(text):
            target = os.path.normpath(os.path.join(os.path.dirname(rel), spec))
            if target.startswith('..'):
                sys.exit(f'{rel}: import {spec} points outside the repository')
            if not os.path.isfile(os.path.join(ROOT, target)):
                sys.exit(f'{rel}: imports {spec}, but {target} does not exist')
            todo.append(target)
    return sorted(wanted)


def chart_files():
    out = []
    if os.path.isdir(DEST):
        for d, _, files in os.walk(DEST):
            out += [os.path.relpath(os.path.join(d, f), DEST) for f in files]
    return sorted(out)


def link_target(rel):
    """The relative target of the chart's link for repository path `rel`."""
    return os.path.relpath(os.path.join(ROOT, rel), os.path.dirname(os.path.join(DEST, rel)))


def is_current(rel):
    dst = os.path.join(DEST, rel)
    return os.path.islink(dst) and os.readlink(dst) == link_target(rel)


def main():
    check = '--check' in sys.argv[1:]
    want = source_files()
    size = sum(os.path.getsize(os.path.join(ROOT, p)) for p in want)
    if size > MAX_BYTES:
        sys.exit(f'the k6 scripts take {size} bytes: too much for one ConfigMap (max {MAX_BYTES})')
    have = chart_files()
    stale = sorted(set(have) - set(want))
    missing = sorted(set(want) - set(have))
    changed = [p for p in want if p in have and not is_current(p)]
    if check:
        if stale or missing or changed:
            for p in missing:
                print(f'  missing in the chart: {p}')
            for p in changed:
                print(f'  not a link to its source: {p}')
            for p in stale:
                print(f'  in the chart but not in the sources: {p}')
            print('charts/wsps/files/k6 is out of date: run `make chart-generate` and commit the links')
            return 1
        print(f'charts/wsps/files/k6 links the sources ({len(want)} files: loadtest/ and its imports)')
        return 0
    for p in stale:
        os.remove(os.path.join(DEST, p))
    for p in want:
        if is_current(p):
            continue
        dst = os.path.join(DEST, p)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(link_target(p), dst)
    # drop directories emptied by removals
    for d, dirs, files in sorted(os.walk(DEST, topdown=False), reverse=False):
        if d != DEST and not os.listdir(d):
            os.rmdir(d)
    print(f'charts/wsps/files/k6: {len(want)} files linked, {len(stale)} removed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
