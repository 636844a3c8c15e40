#!/usr/bin/env bash
# make test's first and last word on the slow builds (test-prebuild, then
# test-e2e). A cold machine compiles ~30 min of pinned tools, the local
# cluster's binaries and its images (infra/local-cluster); the targets before
# the e2e leave a core idle most of the time. So:
#
#   prebuild.sh start OWNER_PID   installs the Debian packages those builds use
#                                 (in the foreground: dpkg has one lock), then
#                                 starts the builds in the background at the
#                                 lowest CPU and I/O priority and returns. They
#                                 stop when OWNER_PID (the make running the
#                                 suite) is gone.
#   prebuild.sh wait              waits for them, with a line per finished
#                                 build, and prints how it went. It never fails:
#                                 whoever needs a binary builds what is still
#                                 missing itself and reports its own error.
#
# Every build takes the per-binary lock its own script takes (build-bins.sh,
# tools.sh, images.sh), so a target that needs a binary the background is
# still compiling waits for it instead of compiling it twice; warm, every
# build is a cache hit and the whole thing takes seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${WSPS_CACHE:-$HOME/.cache/wsps}"
DIR="$CACHE/prebuild"
say() { printf '\033[36m[prebuild]\033[0m %s\n' "$*"; }

# What the background builds, in the order the suite needs them: the
# OpenTelemetry Collector and nats-server (test-integration; the collector
# then goes in the e2e's image), promtool
# (test-alerts), the chart's tools (chart-test), k6 (test-loadtest), then the
# cluster (test-e2e, last).
background() {
  local owner="$1"
  # The builds run in a process group of their own: it goes when the owner does.
  ( while sleep 5; do
      kill -0 "$owner" 2>/dev/null && continue
      echo "[prebuild] the suite ($owner) ended: stopping"
      kill -- -"$$" 2>/dev/null; exit 0
    done ) &
  local watchdog=$! rc=0 images
  export PATH="$("$ROOT/tools/go.sh")$PATH"
  # Beside the compiles: the images that need no compiled binary (debootstrap,
  # apt and npm inside: mostly network and disk), in a log of their own.
  "$ROOT/infra/local-cluster/images.sh" base redis wsps >"$DIR/images.log" 2>&1 &
  images=$!
  {
    "$ROOT/tools/tools.sh" otelcol nats-server &&
    "$ROOT/infra/local-cluster/build-bins.sh" prometheus &&
    "$ROOT/tools/tools.sh" helm kustomize kubeconform helm-unittest kube-score helm-docs k6 &&
    "$ROOT/infra/local-cluster/build-bins.sh"
  } || rc=$?
  wait "$images" || rc=$?
  # The rest: each a compiled binary copied onto the base image.
  ((rc)) || "$ROOT/infra/local-cluster/images.sh" || rc=$?
  echo "$rc" >"$DIR/rc"
  kill "$watchdog" 2>/dev/null || true
}

start() {
  local owner="${1:?usage: prebuild.sh start OWNER_PID}"
  mkdir -p "$DIR"
  if [[ -f "$DIR/pid" ]] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
    say "already running (pid $(cat "$DIR/pid"), log $DIR/log)"; return
  fi
  if [[ $(id -u) -ne 0 ]]; then
    say "not root: nothing to start (the cluster builds need root; test-e2e says it skips)"; return
  fi
  "$ROOT/infra/local-cluster/deps.sh"
  rm -f "$DIR/rc"
  : >"$DIR/log"
  : >"$DIR/images.log"
  # setsid: its own process group (the watchdog ends it as one); fds closed so
  # make does not wait for it.
  setsid nice -n 19 ionice -c 3 "$0" _background "$owner" >"$DIR/log" 2>&1 </dev/null &
  echo $! >"$DIR/pid"
  say "cluster binaries, images and tools building in the background (nice 19; log $DIR/log)"
}

# The lines build-bins.sh, images.sh and tools.sh print when a build ends.
DONE=' \.\.\. *\(ok\|cached\|FAILED\|present\)\|built .* in [0-9]*s$'

wait_done() {
  [[ -f "$DIR/pid" ]] || { say "nothing was started"; return 0; }
  local pid t0=$SECONDS
  pid="$(cat "$DIR/pid")"
  if kill -0 "$pid" 2>/dev/null; then say "waiting for the background builds (pid $pid)"; fi
  # A line per build that finished or was found cached, as it happens.
  local -A seen=()
  local f n
  while :; do
    for f in "$DIR/log" "$DIR/images.log"; do
      n=$(grep -c "$DONE" "$f" 2>/dev/null || true)
      if (( n > ${seen[$f]:-0} )); then
        grep "$DONE" "$f" | sed -n "$((${seen[$f]:-0} + 1)),${n}p" | sed 's/^/  /'
        seen[$f]=$n
      fi
    done
    kill -0 "$pid" 2>/dev/null || break
    sleep 2
  done
  rm -f "$DIR/pid"
  if [[ "$(cat "$DIR/rc" 2>/dev/null)" == 0 ]]; then
    say "background builds done (waited $((SECONDS - t0))s)"
  else
    say "background builds did not finish (exit $(cat "$DIR/rc" 2>/dev/null || echo '?')): the e2e builds what is missing; tail of $DIR/log:"
    tail -n 20 "$DIR/log" | sed 's/^/  /'
    tail -n 10 "$DIR/images.log" 2>/dev/null | sed 's/^/  (images) /'
  fi
}

case "${1:-}" in
  start) start "${2:-}" ;;
  wait) wait_done ;;
  _background) background "$2" ;;
  *) echo "usage: prebuild.sh start OWNER_PID | wait" >&2; exit 2 ;;
esac
