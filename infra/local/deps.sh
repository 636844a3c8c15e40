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
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    die "missing: ${missing[*]}. Install them (e.g. sudo apt-get install -y ${missing[*]}) and run again."
  fi
  say "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
exit 0
