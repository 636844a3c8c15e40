#!/usr/bin/env bash
# `make up`: Redis, the quote-fetcher, two gateways and nginx, all on
# loopback, run files under .run/. Idempotent: what already runs is kept.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
mkdir -p "$LOG_DIR" "$PID_DIR"
# Node flags of both services, as in the image (harness/testkit NODE_FLAGS says why).
NODE_FLAGS=--max-semi-space-size=8

# start NAME CMD...: run in the background, log and pid under .run/.
start() {
  local name=$1; shift
  if alive "$name"; then say "$name already running (pid $(cat "$PID_DIR/$name.pid"))"; return; fi
  say "starting $name"
  nohup "$@" >>"$LOG_DIR/$name.log" 2>&1 &
  echo $! >"$PID_DIR/$name.pid"
}

if alive redis; then
  say "redis already running (pid $(cat "$PID_DIR/redis.pid"))"
else
  say "starting redis on 127.0.0.1:$REDIS_PORT (no persistence)"
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
    --dir "$RUN_DIR" --daemonize yes --pidfile "$PID_DIR/redis.pid" --logfile "$LOG_DIR/redis.log"
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$REDIS_PORT" ping >/dev/null || die "redis did not start; see $LOG_DIR/redis.log"
fi

# Services reject unknown WSPS_* variables; pass them only what is theirs
# (the Makefile exports WSPS_CACHE, for one). A service setting in the
# caller's environment is not passed on either, but said so: the local stack
# is configured here (AUTH=hs256 below), not by the shell it was started from.
unset_wsps=()
for v in $(compgen -e | grep '^WSPS_' || true); do
  unset_wsps+=(-u "$v")
  case $v in
    WSPS_CACHE | WSPS_RUN_DIR | WSPS_LOCAL_* | WSPS_LOG_LEVEL | WSPS_DRAIN_MS) ;;
    *) say "not passed to the services: $v from your environment (the local stack sets its own; auth: make up AUTH=hs256)" ;;
  esac
done
common=(env "${unset_wsps[@]}" WSPS_REDIS_URL="redis://127.0.0.1:$REDIS_PORT" WSPS_HOST=127.0.0.1 WSPS_LOG_LEVEL="${WSPS_LOG_LEVEL:-info}")

# Auth: `make up AUTH=hs256` starts the gateways with HS256 JWT auth, the
# secret made once per .run/ (`wsps token` signs tokens with it).
# The mode is recorded: gateways already running in the other mode are not
# silently kept.
AUTH=${AUTH:-none}
case $AUTH in none | hs256) ;; *) die "AUTH=$AUTH: expected none or hs256" ;; esac
AUTH_FILE=$RUN_DIR/auth-mode
SECRET_FILE=$RUN_DIR/auth-secret
was=$(cat "$AUTH_FILE" 2>/dev/null || echo none)
for i in "${!GATEWAY_PORTS[@]}"; do
  if alive "gateway-$((i + 1))" && [[ $was != "$AUTH" ]]; then
    die "the gateways run with AUTH=$was; run make down first to restart them with AUTH=$AUTH"
  fi
done
echo "$AUTH" >"$AUTH_FILE"
gateway_auth=()
if [[ $AUTH == hs256 ]]; then
  [[ -s $SECRET_FILE ]] || (umask 077 && node -e "process.stdout.write(require('crypto').randomBytes(32).toString('hex'))" >"$SECRET_FILE")
  gateway_auth=(WSPS_AUTH_MODE=hs256 WSPS_AUTH_HS256_SECRET_FILE="$SECRET_FILE" WSPS_PAGE_TOKEN_URL=/local-token)
  start token-server node infra/local/token-server.js --port "$TOKEN_PORT" --secret-file "$SECRET_FILE"
fi
# The publish API (docs/feeding.md) is on, with a token made once per .run/.
TOKEN_FILE=$RUN_DIR/publish-token
[[ -s $TOKEN_FILE ]] || (umask 077 && node -e "process.stdout.write(require('crypto').randomBytes(24).toString('hex'))" >"$TOKEN_FILE")
for i in "${!FETCHER_PORTS[@]}"; do
  start "fetcher-$((i + 1))" "${common[@]}" WSPS_HTTP_PORT="${FETCHER_PORTS[$i]}" WSPS_NODE_NAME="fetcher-$((i + 1))" \
    WSPS_PUBLISH_TOKEN_FILE="$TOKEN_FILE" node "$NODE_FLAGS" services/quote-fetcher/bin/main.js
done
# The admin API (GET /admin/fleet: `wsps top`), with a token made once per .run/.
ADMIN_FILE=$RUN_DIR/admin-token
[[ -s $ADMIN_FILE ]] || (umask 077 && node -e "process.stdout.write(require('crypto').randomBytes(24).toString('hex'))" >"$ADMIN_FILE")
for i in "${!GATEWAY_PORTS[@]}"; do
  start "gateway-$((i + 1))" "${common[@]}" WSPS_HTTP_PORT="${GATEWAY_PORTS[$i]}" WSPS_NODE_NAME="gateway-$((i + 1))" \
    WSPS_DRAIN_MS="${WSPS_DRAIN_MS:-2000}" WSPS_ADMIN_TOKEN_FILE="$ADMIN_FILE" "${gateway_auth[@]}" node "$NODE_FLAGS" services/gateway/bin/main.js
done

# The one renderer of infra/local/nginx.conf.tmpl (the tests and the bench use it too).
nginx_args=()
for p in "${GATEWAY_PORTS[@]}"; do nginx_args+=(--upstream "127.0.0.1:$p"); done
nginx_args+=(--listen "127.0.0.1:$NGINX_PORT")
[[ $AUTH == hs256 ]] && nginx_args+=(--token "127.0.0.1:$TOKEN_PORT")
# Browsers and k6 may try ::1 first for "localhost".
if [[ -f /proc/net/if_inet6 ]] && ip -6 addr show dev lo 2>/dev/null | grep -q '::1'; then
  nginx_args+=(--listen "[::1]:$NGINX_PORT")
fi
conf=$(node harness/testkit/src/nginx-conf.js "$RUN_DIR" --daemon "${nginx_args[@]}")
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [[ -f $RUN_DIR/nginx/nginx.pid ]] && kill -0 "$(cat "$RUN_DIR/nginx/nginx.pid")" 2>/dev/null; then
  say "nginx already running; reloading its config"
  "$NGINX" -p "$RUN_DIR/nginx" -c "$conf" -t -q && "$NGINX" -p "$RUN_DIR/nginx" -c "$conf" -s reload
else
  say "starting nginx on :$NGINX_PORT"
  "$NGINX" -p "$RUN_DIR/nginx" -c "$conf" -t -q 2>>"$LOG_DIR/nginx.log" || die "bad nginx config; see $LOG_DIR/nginx.log"
  "$NGINX" -p "$RUN_DIR/nginx" -c "$conf" 2>>"$LOG_DIR/nginx.log"
fi

say "waiting for everything to be ready"
for i in "${!FETCHER_PORTS[@]}"; do wait_http "http://127.0.0.1:${FETCHER_PORTS[$i]}/readyz" 30 "fetcher-$((i + 1))"; done
for i in "${!GATEWAY_PORTS[@]}"; do wait_http "http://127.0.0.1:${GATEWAY_PORTS[$i]}/readyz" 30 "gateway-$((i + 1))"; done
wait_http "http://127.0.0.1:$NGINX_PORT/readyz" 10 nginx
[[ $AUTH == hs256 ]] && wait_http "http://127.0.0.1:$NGINX_PORT/local-token" 10 token-server

cat <<MSG

  wsps is up.
    Browser client   http://localhost:$NGINX_PORT/
    WebSocket        ws://localhost:$NGINX_PORT/ws   (try: {"op":"sub","symbols":["AAPL","MSFT"],"id":1})
    Gateways         $(for p in "${GATEWAY_PORTS[@]}"; do printf 'http://127.0.0.1:%s ' "$p"; done)(/healthz /readyz /metrics)
    Quote-fetcher    $(for p in "${FETCHER_PORTS[@]}"; do printf 'http://127.0.0.1:%s ' "$p"; done)(/metrics)
    Publish quotes   POST http://127.0.0.1:${FETCHER_PORTS[0]}/v1/quotes   (Bearer token in .run/publish-token; see docs/feeding.md)
                     or: npx wsps publish quotes.csv
    Watch quotes     npx wsps tail AAPL MSFT
    The fleet        npx wsps top   (GET /admin/fleet, Bearer token in .run/admin-token)
    Redis            redis://127.0.0.1:$REDIS_PORT
    Logs             make logs   (files in .run/logs/)
    Stop             make down

MSG
if [[ $AUTH == hs256 ]]; then
  cat <<MSG
  Auth is on (HS256, secret in .run/auth-secret): every connection needs a token.
    Mint one         npx wsps token AAPL MSFT      (--ttl SECONDS; no symbols: all; npx wsps help token)
    Sample (1 h)     $(node clients/cli/bin/wsps.js token --secret-file "$SECRET_FILE" AAPL MSFT)
    Use it           Authorization: Bearer <token> on /ws or /sse, or {"op":"auth","token":"<token>"} first
    The page         http://localhost:$NGINX_PORT/ gets its tokens from /local-token (infra/local/token-server.js)

MSG
fi
