#!/usr/bin/env bash
# make capacity: kernel limits raised (kernel.sh), the run (capacity.js),
# then, whatever happened (failure, Ctrl-C, SIGTERM, the orchestrator
# killed): every process the run started killed by its pid, and the kernel
# limits restored.
#
#   harness/capacity/run.sh --target=N --hold=S --rate=R [capacity.js options]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
CACHE=${WSPS_CACHE:-$HOME/.cache/wsps}
STATE=$CACHE/capacity/kernel-saved.tsv
OUT=$ROOT/.run/capacity
mkdir -p "$OUT" "$CACHE/capacity"
# One run at a time on the machine: the saved kernel state is shared.
exec 9>/tmp/wsps-capacity.lock
flock -n 9 || { echo "[capacity] another make capacity is running (/tmp/wsps-capacity.lock)" >&2; exit 1; }
PIDS=$OUT/pids
: >"$PIDS"
JS=harness/bench/src/capacity.js

# The plan is checked (and the kernel needs computed) before anything changes.
needs=$(node "$JS" --kernel-needs "$@")

node_pid=
cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM
  [[ -n $node_pid ]] && kill -TERM "$node_pid" 2>/dev/null && wait "$node_pid" 2>/dev/null || true
  # Whatever the orchestrator could not stop (it was killed): only our own
  # pids, and only if they still run one of our programs.
  while read -r pid; do
    [[ $pid =~ ^[0-9]+$ ]] || continue
    if grep -qaE 'loadgen|node|redis-server' "/proc/$pid/cmdline" 2>/dev/null; then
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
      echo "[capacity] killed leftover pid $pid" >&2
    fi
  done <"$PIDS"
  "$ROOT/harness/capacity/kernel.sh" restore "$STATE"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$ROOT/harness/capacity/kernel.sh" set "$STATE" "$needs"
node "$JS" --pids="$PIDS" --out="$OUT" "$@" 9>&- &
node_pid=$!
wait "$node_pid"
rc=$?
node_pid=
exit "$rc"
