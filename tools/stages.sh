#!/usr/bin/env bash
# make test: runs each stage (a make target) in turn, stops at the first that
# fails, and ends with a table of the stages and how long each took, so a slow
# or cold run shows where its time went.
#   tools/stages.sh TARGET...
set -uo pipefail
cd "$(dirname "$0")/.."
# The background builds test-prebuild starts live as long as this run.
export PREBUILD_OWNER=$$
names=() secs=() results=()
t_all=$SECONDS
table() {
  printf '\n%-20s %9s  %s\n' stage time result
  local i
  for i in "${!names[@]}"; do
    printf '%-20s %6dm%02ds  %s\n' "${names[$i]}" $((secs[i] / 60)) $((secs[i] % 60)) "${results[$i]}"
  done
  printf '%-20s %6dm%02ds\n' total $(((SECONDS - t_all) / 60)) $(((SECONDS - t_all) % 60))
}
for t in "$@"; do
  printf '\n\033[1m== %s\033[0m\n' "$t"
  t0=$SECONDS
  make --no-print-directory "$t"
  rc=$?
  names+=("$t"); secs+=($((SECONDS - t0)))
  if ((rc != 0)); then
    results+=("FAILED (exit $rc)")
    table
    echo "make test: FAILED at $t"
    exit 1
  fi
  results+=(ok)
done
table
echo "make test: all passed ($*)"
