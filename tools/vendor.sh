#!/usr/bin/env bash
# Prints the path of a checked copy of a vendored release archive: third-party
# sources no registry reachable here serves (today the F5 NGINX Ingress
# Controller), kept unmodified outside the repository with their checksums
# (the shared vendor folder's README).
#
#   tgz=$(tools/vendor.sh kubernetes-ingress-5.5.4.tar.gz "$NGINX_INGRESS_SHA256")
#   tools/vendor.sh --seed   # make up: copy what is found into the cache, quietly
#
# The archive is looked for, in order, in:
#   1. $WSPS_VENDOR_DIR (set it by hand; nothing here exports it);
#   2. the shared vendor folder beside this work tree (<repo>/../shared/vendor);
#   3. the one beside the work tree this clone was made from (its origin, when
#      that is a local path): a clean clone anywhere, e.g. under mktemp -d,
#      still finds the folder beside the tree it came from;
#   4. $WSPS_CACHE/vendor/, where every archive found in 1-3 is copied once.
# The copy is why a clone on this machine works after any work tree has seen
# the folder once (make up seeds it). The checksum is checked on every use,
# so a wrong or truncated file is refused wherever it was found.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${WSPS_CACHE:-$HOME/.cache/wsps}/vendor

log () { printf '\033[36m[vendor]\033[0m %s\n' "$*" >&2; }
die () { printf '\033[31m[vendor] error:\033[0m %s\n' "$*" >&2; exit 1; }

# The folders to look in, in order (those that exist).
candidates () {
  [[ -n ${WSPS_VENDOR_DIR:-} ]] && echo "$WSPS_VENDOR_DIR"
  echo "$(dirname "$ROOT")/shared/vendor"
  local origin
  origin=$(git -C "$ROOT" config --get remote.origin.url 2>/dev/null || true)
  origin=${origin#file://}
  if [[ $origin == /* && -d $origin ]]; then
    origin=$(cd "$origin" && git rev-parse --show-toplevel 2>/dev/null || pwd)
    echo "$(dirname "$origin")/shared/vendor"
  fi
  echo "$CACHE"
}

# checked FILE SHA256: the file exists and has that checksum.
checked () { [[ -f $1 ]] && [[ $(sha256sum "$1" | cut -d' ' -f1) == "$2" ]]; }

# cache FILE: a copy in $CACHE (written whole, then renamed into place).
cache () {
  local name; name=$(basename "$1")
  [[ $1 == "$CACHE/$name" ]] && return
  mkdir -p "$CACHE"
  cp "$1" "$CACHE/.$name.$$" && mv -f "$CACHE/.$name.$$" "$CACHE/$name"
}

if [[ ${1:-} == --seed ]]; then
  # Every archive the versions pin (NAME_SHA256 beside NAME_VERSION), quietly:
  # a machine without the folder simply has nothing to seed.
  # shellcheck source=versions.env
  . "$ROOT/tools/versions.env"
  [[ -n ${NGINX_INGRESS_VERSION:-} ]] || exit 0
  name=kubernetes-ingress-$NGINX_INGRESS_VERSION.tar.gz
  checked "$CACHE/$name" "$NGINX_INGRESS_SHA256" && exit 0
  while read -r dir; do
    if checked "$dir/$name" "$NGINX_INGRESS_SHA256"; then cache "$dir/$name"; log "cached $name (from $dir)"; exit 0; fi
  done < <(candidates)
  exit 0
fi

[[ $# -eq 2 ]] || die "usage: tools/vendor.sh ARCHIVE SHA256 | --seed"
name=$1 sum=$2
tried=()
while read -r dir; do
  tried+=("$dir")
  [[ -f $dir/$name ]] || continue
  checked "$dir/$name" "$sum" || die "$dir/$name: sha256 $(sha256sum "$dir/$name" | cut -d' ' -f1), tools/versions.env wants $sum"
  cache "$dir/$name"
  echo "$CACHE/$name"; exit 0
done < <(candidates)
die "no $name in ${tried[*]} (put the shared vendor folder there, or set WSPS_VENDOR_DIR to its folder)"
