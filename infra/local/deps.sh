#!/usr/bin/env bash
# Installs what the local stack and tests need, only what is missing:
# npm packages (npm ci), redis-server and nginx (apt-get, when root).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# Node: the pinned LTS (tools/versions.env); an older node on PATH makes
# tools/node.sh fetch the pinned one into $WSPS_CACHE/bin (first on make's PATH).
node_bin=$("$ROOT/tools/node.sh") || die "could not provide Node (tools/versions.env)"
export PATH="$node_bin$PATH"

# npm ci when node_modules is missing or older than the lockfile.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  say "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The vendored archives (tools/vendor.sh): copied into the cache when this
# work tree sees them, so that clean clones elsewhere on the machine find them.
"$ROOT/tools/vendor.sh" --seed

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v curl >/dev/null || missing+=(curl)
((${#missing[@]} == 0)) || "$ROOT/tools/apt.sh" "the local stack" "${missing[@]}" || die "missing: ${missing[*]}"

exit 0
