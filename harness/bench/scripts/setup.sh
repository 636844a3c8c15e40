#!/usr/bin/env bash
# Everything `make bench` needs, installed only when missing and cached
# under $WSPS_CACHE/bench: the Go load generator (rebuilt when its source
# changes), redis-server, nginx and pushpin (Debian packages, as root), and a
# venv with the pinned plotting stack.
#
#   setup.sh           everything
#   setup.sh loadgen   only what `make capacity` needs: redis-server, Go, the load generator
set -euo pipefail
ONLY=${1:-all}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
CACHE=${WSPS_CACHE:-$HOME/.cache/wsps}/bench
mkdir -p "$CACHE"
say() { printf '\033[36m==>\033[0m %s\n' "$*" >&2; }

# Debian packages: the servers under test and their helpers.
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
if [[ $ONLY == all ]]; then
  command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
  command -v pushpin >/dev/null || missing+=(pushpin)
  command -v taskset >/dev/null || missing+=(util-linux)
fi
command -v go >/dev/null || [[ -x /usr/local/go/bin/go ]] || missing+=(golang-go)
if ((${#missing[@]})); then
  [[ $(id -u) -eq 0 ]] || { echo "missing: ${missing[*]} (install them, e.g. sudo apt-get install -y ${missing[*]})" >&2; exit 1; }
  say "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
export PATH=$PATH:/usr/local/go/bin

# The load generator: rebuilt when any of its sources changed.
src=$ROOT/harness/bench/loadgen
sum=$(cat "$src"/go.mod "$src"/go.sum "$src"/*.go | sha256sum | cut -c1-16)
if [[ ! -x $CACHE/loadgen-$sum ]]; then
  say "building the load generator ($sum)"
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$CACHE/loadgen-$sum" .)
fi
ln -sfn "loadgen-$sum" "$CACHE/loadgen"
[[ $ONLY == all ]] || exit 0

# Plotting: matplotlib pinned (with its dependencies) in a venv of its own.
venv=$CACHE/venv-plot-1
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
  say "creating the plotting venv ($venv)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/harness/bench/scripts/plot-requirements.txt"
fi
ln -sfn "$venv" "$CACHE/venv-plot"
