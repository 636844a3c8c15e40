#!/usr/bin/env bash
# Everything `make bench` needs, installed only when missing and cached
# under $WSPS_CACHE/bench: the bench's Go programs (loadgen, floor, hiccup;
# rebuilt when their source changes), redis-server, nginx, HAProxy and pushpin (Debian packages, as
# root; HAProxy's series checked against tools/versions.env), and a venv with the pinned plotting stack.
#
#   setup.sh           everything
#   setup.sh loadgen   only what `make capacity` needs: redis-server, Go, the Go programs
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
  # The proxy section's second proxy (sections/proxy.js).
  command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
  command -v taskset >/dev/null || missing+=(util-linux)
fi
if ((${#missing[@]})); then
  [[ $(id -u) -eq 0 ]] || { echo "missing: ${missing[*]} (install them, e.g. sudo apt-get install -y ${missing[*]})" >&2; exit 1; }
  say "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # apt's own progress lines: a first install fetches a few MB.
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
. "$ROOT/tools/versions.env"
if [[ $ONLY == all ]]; then
  # The bench compares proxies by version: the series Debian's suite ships
  # (tools/versions.env HAPROXY_SERIES), refused when another one is found.
  have=$(/usr/sbin/haproxy -v 2>/dev/null | sed -n 's/^HAProxy version \([0-9]*\.[0-9]*\)\..*/\1/p')
  [[ $have == "$HAPROXY_SERIES" ]] || { echo "haproxy ${have:-not found}: the bench expects the $HAPROXY_SERIES series (Debian $DEBIAN_SUITE, tools/versions.env HAPROXY_SERIES)" >&2; exit 1; }
fi
# Go as the rest of the suite gets it (Debian's golang-go is too old for the
# load generator's go.mod): an installed one recent enough, else the pinned
# toolchain from the module proxy.
PATH="$("$ROOT/tools/go.sh")$PATH"
export PATH

# The Go programs (harness/bench/loadgen/cmd/{loadgen,floor,hiccup}) in one
# directory named by a hash of the module's files, names and contents:
# rebuilt when any of them changed, and linked as $CACHE/bin
# (harness/bench/src/go-bin.js). Built aside and moved in whole, so a
# directory that exists holds all three.
src=$ROOT/harness/bench/loadgen
sum=$(cd "$src" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
if [[ ! -d $CACHE/bin-$sum ]]; then
  say "building the load generator, the floor and the hiccup meter ($sum)"
  tmp=$(mktemp -d "$CACHE/bin-$sum.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT # a failed build leaves nothing behind
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$tmp/" ./cmd/...)
  chmod 755 "$tmp"
  mv -T "$tmp" "$CACHE/bin-$sum"
fi
ln -sfn "bin-$sum" "$CACHE/bin"
[[ $ONLY == all ]] || exit 0

# Centrifugo (a peer in the fan-out): `go install` of the pinned release from
# the module proxy, version stamped as its own release build does, linked as
# $CACHE/centrifugo (harness/bench/src/go-bin.js).
cf=$CACHE/centrifugo-$CENTRIFUGO_VERSION
if [[ ! -x $cf/centrifugo ]]; then
  say "building Centrifugo $CENTRIFUGO_VERSION from the Go module proxy (about 3 min, once)"
  tmp=$(mktemp -d "$cf.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  GOBIN=$tmp CGO_ENABLED=0 go install -trimpath \
    -ldflags "-X github.com/centrifugal/centrifugo/v6/internal/build.Version=${CENTRIFUGO_VERSION#v}" \
    "github.com/centrifugal/centrifugo/v6@$CENTRIFUGO_VERSION"
  chmod 755 "$tmp"
  mv -T "$tmp" "$cf"
fi
ln -sfn "centrifugo-$CENTRIFUGO_VERSION/centrifugo" "$CACHE/centrifugo"

# Plotting: matplotlib pinned (with its dependencies) in a venv of its own.
venv=$CACHE/venv-plot-1
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
  say "creating the plotting venv ($venv)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/harness/bench/scripts/plot-requirements.txt"
fi
ln -sfn "$venv" "$CACHE/venv-plot"
