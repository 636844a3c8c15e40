#!/usr/bin/env bash
# tools/apt.sh WHY PACKAGE...: installs the Debian packages that are missing
# (apt-get, as root; otherwise says which to install and fails). WHY names
# who needs them, for the progress line.
set -euo pipefail
why="$1"; shift
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "$why needs ${missing[*]}: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
printf '\033[36m==>\033[0m installing %s for %s (apt-get, once)\n' "${missing[*]}" "$why"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine (or container) may have no package lists yet.
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
