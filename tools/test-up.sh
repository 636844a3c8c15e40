#!/usr/bin/env bash
# make test-up: the README's quick start, checked as a new user meets it.
#   1. a fresh clone of this repository's HEAD (git clone --local, so only
#      committed files: nothing the working tree happens to have);
#   2. `make up` in it;
#   3. a protocol probe through nginx (:8080): subscribe to AAPL over /ws and
#      wait for a quote (services/gateway/bin/probe.js);
#   4. the docs' shell blocks marked test:up, run as written against it
#      (tools/doc-blocks.js; every block is checked for a mark and parsed
#      first, before anything starts);
#   5. `make down`, `make up AUTH=hs256`, and the blocks marked test:auth;
#   6. `make down`, then proof that nothing is left: every process that ran
#      from the clone (pids recorded by make up, nginx workers, anything whose
#      command line or working directory is in the clone) is gone and the
#      stack's ports are free.
# Holds /tmp/wsps-make-up.lock throughout: the stack binds fixed ports.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PORTS=(8080 8081 8082 9091 6380)   # infra/local/lib.sh defaults
say () { printf '\033[36m[test-up]\033[0m %s\n' "$*"; }
fail () { printf '\033[31m[test-up] FAIL\033[0m %s\n' "$*" >&2; exit 1; }

# What the leftover check below uses: ss (iproute2) and pgrep (procps), not in
# a minimal Debian. Without them it would pass without looking.
missing=()
command -v ss >/dev/null || missing+=(iproute2)
command -v pgrep >/dev/null || missing+=(procps)
((${#missing[@]} == 0)) || "$(dirname "$0")/apt.sh" test-up "${missing[@]}" || fail "needs ${missing[*]}"

exec 9>/tmp/wsps-make-up.lock
say "waiting for /tmp/wsps-make-up.lock (another make up may be running)"
flock 9

for p in "${PORTS[@]}"; do
  if ss -Hltn "sport = :$p" | grep -q .; then fail "port $p is already in use: stop what holds it (make down?) and retry"; fi
done

CLONE=$(mktemp -d /tmp/wsps-test-up.XXXXXX)
cleanup () {
  # a failure in the middle must not leave the stack running either
  if [[ -d $CLONE/.run ]]; then make -C "$CLONE" --no-print-directory down >/dev/null 2>&1 || true; fi
  rm -rf "$CLONE"
}
trap cleanup EXIT

say "fresh clone of $(git -C "$ROOT" rev-parse --short HEAD) in $CLONE"
git clone --quiet --local --no-hardlinks "$ROOT" "$CLONE"
cd "$CLONE"

say "the docs' shell blocks: each marked (test:up, test:auth, test:syntax) and parsed"
node tools/doc-blocks.js check || fail "docs: shell blocks unmarked or not valid shell (tools/doc-blocks.js)"

say "make up (the README's command)"
make up

say "protocol probe through nginx: ws://127.0.0.1:8080/ws, AAPL"
node services/gateway/bin/probe.js --url ws://127.0.0.1:8080/ws --symbol AAPL --timeout-ms 30000 \
  || fail "no quote through nginx"

say "the docs' test:up blocks against make up"
node tools/doc-blocks.js run up || fail "a documented command failed against make up (above)"

say "make down; make up AUTH=hs256 (docs/auth-walkthrough.md)"
make down
make up AUTH=hs256
say "the docs' test:auth blocks against make up AUTH=hs256"
node tools/doc-blocks.js run auth || fail "a documented command failed against make up AUTH=hs256 (above)"

# Every process of the stack, before it is stopped.
pids=()
for f in .run/pids/*.pid .run/nginx/nginx.pid; do
  [[ -f $f ]] && pids+=("$(cat "$f")")
done
nginx_master=$(cat .run/nginx/nginx.pid 2>/dev/null || true)
if [[ -n $nginx_master ]]; then
  while read -r child; do pids+=("$child"); done < <(pgrep -P "$nginx_master" || true)
fi
((${#pids[@]} >= 5)) || fail "expected redis, a fetcher, two gateways and nginx: found pids ${pids[*]}"
say "stack pids: ${pids[*]}"

say "make down"
make down

left=()
for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
  cwd=$(readlink "$d/cwd" 2>/dev/null || true)
  cmd=$(tr '\0' ' ' 2>/dev/null <"$d/cmdline" || true)
  if [[ $cwd == "$CLONE"* || $cmd == *"$CLONE"* ]]; then left+=("$pid:$cmd"); fi
done
((${#left[@]} == 0)) || fail "left behind after make down: ${left[*]}"
for p in "${PORTS[@]}"; do
  if ss -Hltn "sport = :$p" | grep -q .; then fail "port $p still listened on after make down"; fi
done
say "PASS: make up served a quote through nginx; the docs' blocks ran as written (with and without auth); make down left no process and no port behind"
