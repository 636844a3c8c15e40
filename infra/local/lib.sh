# Shared by the local-stack scripts. Sourced, not run.
# Ports and paths of `make up`; override with the environment.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN_DIR=${WSPS_RUN_DIR:-$ROOT/.run}
LOG_DIR=$RUN_DIR/logs
PID_DIR=$RUN_DIR/pids
REDIS_PORT=${WSPS_LOCAL_REDIS_PORT:-6380}
NGINX_PORT=${WSPS_LOCAL_PORT:-8080}
GATEWAY_PORTS=(${WSPS_LOCAL_GATEWAY_PORTS:-8081 8082})
FETCHER_PORTS=(${WSPS_LOCAL_FETCHER_PORTS:-9091})
# AUTH=hs256 only: the page's token server, behind nginx at /local-token.
TOKEN_PORT=${WSPS_LOCAL_TOKEN_PORT:-8088}

say() { printf '\033[36m==>\033[0m %s\n' "$*"; }
die() { printf '\033[31merror:\033[0m %s\n' "$*" >&2; exit 1; }

# alive NAME: the process recorded in NAME's pid file is running.
alive() {
  local f=$PID_DIR/$1.pid
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

# wait_http URL SECONDS NAME: poll until URL answers 2xx.
wait_http() {
  local url=$1 secs=$2 name=$3 i
  for ((i = 0; i < secs * 10; i++)); do
    curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "--- last lines of $LOG_DIR/$name.log" >&2
  tail -n 20 "$LOG_DIR/$name.log" >&2 || true
  die "$name did not become ready at $url within ${secs}s"
}
