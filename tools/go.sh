#!/usr/bin/env bash
# Makes a Go toolchain available (the load generator's tests, and
# tools/tools.sh's builds of helm, k6, ... need one) and prints the directory
# to put first on PATH (nothing when the go already found is good enough).
#
# A go on PATH or in /usr/local/go whose version is at least GO_VERSION's
# major.minor (tools/versions.env) is used as it is. Otherwise the pinned
# toolchain is fetched from the Go module proxy, which serves every Go release
# as the module golang.org/toolchain@v0.0.1-go<version>.linux-amd64 (what
# `go` itself downloads for GOTOOLCHAIN switching). A plain HTTPS GET of the
# module's zip works without any Go installed; the zip is checked against
# GO_TOOLCHAIN_SHA256 before it is used, unpacked into
# $WSPS_CACHE/tools/go-<version>/ and linked as $WSPS_CACHE/bin/go (the
# Makefile puts $WSPS_CACHE/bin first on PATH, so later steps find it).
#
#   PATH="$(tools/go.sh)$PATH"
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
. "$ROOT/tools/versions.env"
CACHE=${WSPS_CACHE:-$HOME/.cache/wsps}
DIR=$CACHE/tools/go-$GO_VERSION
BIN=$CACHE/bin
MODULE=golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-amd64

log () { printf '\033[36m[go]\033[0m %s\n' "$*" >&2; }
die () { printf '\033[31m[go] error:\033[0m %s\n' "$*" >&2; exit 1; }

# version GO: "1.26.8" of `go version`, or nothing
version () { "$1" env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9][0-9.]*\).*/\1/p'; }
# at_least A B: version A >= version B
at_least () { [[ $(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1) == "$2" ]]; }
want=${GO_VERSION%.*}

if [[ -x $DIR/bin/go ]]; then
  mkdir -p "$BIN"; ln -sfn "$DIR/bin/go" "$BIN/go"; ln -sfn "$DIR/bin/gofmt" "$BIN/gofmt"
  echo "$BIN:"; exit 0
fi
for go in "$(command -v go || true)" /usr/local/go/bin/go; do
  [[ -n $go && -x $go ]] || continue
  have=$(version "$go")
  if [[ -n $have ]] && at_least "$have" "$want"; then
    [[ $go == "$(command -v go || true)" ]] || echo "$(dirname "$go"):"
    exit 0
  fi
  log "found go $have at $go, older than $want"
done

# curl and unzip: installed from Debian when root, named otherwise.
missing=()
command -v curl >/dev/null || missing+=(curl)
command -v unzip >/dev/null || missing+=(unzip)
((${#missing[@]} == 0)) || "$(dirname "$0")/apt.sh" "fetching Go" "${missing[@]}" >&2 || exit 1

# The first proxy URL of GOPROXY (as `go env` has it, else the default);
# "direct" and "off" are not proxies.
proxy=https://proxy.golang.org
IFS=',|' read -r -a proxies <<<"${GOPROXY:-$( (go env GOPROXY 2>/dev/null) || true)}"
for p in "${proxies[@]}"; do
  if [[ $p == http*://* ]]; then proxy=${p%/}; break; fi
done
url=$proxy/${MODULE%@*}/@v/${MODULE#*@}.zip

log "fetching Go $GO_VERSION from the Go module proxy ($url, ~70 MB, once)"
mkdir -p "$CACHE/tools" "$BIN"
tmp=$(mktemp -d "$CACHE/tools/.go.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
curl -fSL --retry 3 --progress-bar -o "$tmp/go.zip" "$url" || die "could not download $url"
got=$(sha256sum "$tmp/go.zip" | cut -d' ' -f1)
[[ $got == "$GO_TOOLCHAIN_SHA256" ]] || die "$MODULE: sha256 $got, expected $GO_TOOLCHAIN_SHA256 (tools/versions.env)"
log "checksum ok; unpacking"
unzip -q "$tmp/go.zip" -d "$tmp/unpacked"
rm "$tmp/go.zip"
# Module zips keep no file modes: the executables get theirs back as `go`
# does after a toolchain download (bin/ and pkg/tool/).
find "$tmp/unpacked/$MODULE/bin" "$tmp/unpacked/$MODULE/pkg/tool" -type f -exec chmod 0755 {} +
[[ $(version "$tmp/unpacked/$MODULE/bin/go") == "$GO_VERSION" ]] || die "the fetched go does not run here"
rm -rf "$DIR"; mv "$tmp/unpacked/$MODULE" "$DIR"
ln -sfn "$DIR/bin/go" "$BIN/go"; ln -sfn "$DIR/bin/gofmt" "$BIN/gofmt"
log "go $GO_VERSION in $DIR (checksum checked), linked as $BIN/go"
echo "$BIN:"
