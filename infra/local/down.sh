#!/usr/bin/env bash
# `make down`: stops exactly what `make up` started, by the pids it recorded.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# stop_pid NAME PIDFILE: SIGTERM, wait for the drain, then SIGKILL.
stop_pid() {
  local name=$1 f=$2 pid i
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      say "$name did not stop in 15s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$f"
}

[[ -d $RUN_DIR ]] || { say "nothing to stop"; exit 0; }
stop_pid nginx "$RUN_DIR/nginx/nginx.pid"
shopt -s nullglob
for f in "$PID_DIR"/gateway-*.pid "$PID_DIR"/fetcher-*.pid "$PID_DIR"/token-server.pid "$PID_DIR"/redis.pid; do
  stop_pid "$(basename "$f" .pid)" "$f"
done
say "stopped"
