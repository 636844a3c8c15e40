# Shared helpers for the local-cluster scripts. Source it; do not run it.
# shellcheck shell=bash
# shellcheck disable=SC2034  # the variables here are used by the scripts sourcing this

set -o errexit -o nounset -o pipefail

LC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$LC_DIR/../.." && pwd)"
# shellcheck source=../../tools/versions.env
. "$REPO_ROOT/tools/versions.env"

export WSPS_CACHE="${WSPS_CACHE:-$HOME/.cache/wsps}"
# Go (the builds, and `go mod download` for the CRDs up.sh applies): the one
# on PATH, else /usr/local/go's, else the pinned toolchain tools/go.sh fetches
# (CI's shell need not have Go on PATH).
command -v go >/dev/null || PATH="$("$REPO_ROOT/tools/go.sh")$PATH"
CACHE_DIR="$WSPS_CACHE/cluster"            # built binaries, rootfs, image archives (kept)
K8S_BIN="$CACHE_DIR/kubernetes-$K8S_VERSION/bin"
ETCD_BIN="$CACHE_DIR/etcd-$ETCD_VERSION/bin"
COREDNS_BIN="$CACHE_DIR/coredns-$COREDNS_VERSION-slim/bin"   # gomod/coredns: only the plugins the Corefile uses
TRAEFIK_BIN="$CACHE_DIR/traefik-$TRAEFIK_VERSION/bin"
K6_BIN="$WSPS_CACHE/tools/k6-$K6_VERSION"     # the one k6 (tools/tools.sh), shared with make loadtest
PAUSE_BIN="$CACHE_DIR/pause-$PAUSE_VERSION/bin"
PROMETHEUS_BIN="$CACHE_DIR/prometheus-$PROMETHEUS_VERSION/bin"   # prometheus + promtool
# The NetworkPolicy enforcer (host process), keyed by its main and patch too.
NETPOL_BIN="$CACHE_DIR/kube-network-policies-$KUBE_NETWORK_POLICIES_VERSION-$(cat "$LC_DIR"/gomod/kube-network-policies/{main.go,queue-xt.go,patch.sh,go.mod,go.sum} | sha256sum | cut -c1-8)/bin"
KEDA_BIN="$CACHE_DIR/keda-$KEDA_VERSION/bin"                     # keda (operator) + keda-adapter (metrics API server)
# The F5 NGINX Ingress Controller: built from a vendored archive (no registry
# serves it), which lives outside the repository (tools/vendor.sh finds it).
# Cached by the archive's checksum: bin/nginx-ingress, templates/ and njs/
# (for the image), chart/.
NGINX_INGRESS_DIR="$CACHE_DIR/nginx-ingress-$NGINX_INGRESS_VERSION-${NGINX_INGRESS_SHA256:0:12}"
IMAGE_DIR="$CACHE_DIR/images"              # image archives (docker-archive), one per image
# containerd's root (content store + unpacked snapshots) is a cache too: images
# imported once stay across cluster-down/up. No mounts live there while stopped.
CONTAINERD_ROOT="$CACHE_DIR/containerd-root"

# The cluster is one per machine (it binds the node address and fixed ports),
# so its state lives in machine-wide folders, not in a work tree. cluster-down
# deletes both.
STATE_DIR="${WSPS_CLUSTER_STATE:-/var/lib/wsps-cluster}"
RUN_DIR="${WSPS_CLUSTER_RUN:-/run/wsps-cluster}"
PID_DIR="$STATE_DIR/pids"
LOG_DIR="$STATE_DIR/logs"
PKI_DIR="$STATE_DIR/pki"
SAVED_DIR="$STATE_DIR/saved"               # what cluster-down restores
CONTAINERD_SOCK="$RUN_DIR/containerd/containerd.sock"
# What other scripts use (env.sh exports these).
KUBECONFIG_OUT="$REPO_ROOT/.run/cluster/kubeconfig"

# shellcheck source=cluster.env
. "$LC_DIR/cluster.env"
NODE_IP="${WSPS_NODE_IP:-$NODE_IP}"

# shellcheck source=images.env
. "$LC_DIR/images.env"

_T0="${_T0:-$(date +%s.%N)}"

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { printf '[cluster] ERROR: %s\n' "$*" >&2; exit 1; }

_elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

# step LABEL LOGFILE CMD...: runs CMD with its output in LOGFILE and prints one
# line with the elapsed time. On failure prints the log's tail and exits 1.
step() {
  local label="$1" logf="$2"; shift 2
  local t0; t0="$(date +%s.%N)"
  mkdir -p "$(dirname "$logf")"
  printf '[cluster] %-52s ' "$label ..." >&2
  # A subshell with errexit of its own: in an `if`, bash would ignore -e
  # inside functions, and a failing middle command would go unnoticed.
  local rc=0
  set +e
  ( set -e; "$@" ) >"$logf" 2>&1
  rc=$?
  set -e
  if (( rc == 0 )); then
    printf 'ok (%s)\n' "$(_elapsed "$t0")" >&2
  else
    printf 'FAILED (%s, exit %s)\n' "$(_elapsed "$t0")" "$rc" >&2
    printf '[cluster] last 40 lines of %s:\n' "$logf" >&2
    tail -n 40 "$logf" | sed 's/^/    /' >&2
    exit 1
  fi
}

# skip LABEL REASON: the one line for a phase that had nothing to do.
skip() { printf '[cluster] %-52s %s\n' "$1 ..." "$2" >&2; }

total_elapsed() { _elapsed "$_T0"; }

# wait_for LABEL TIMEOUT_S LOG CMD...: polls CMD every 0.5s. On a timeout it
# shows LOG: the last lines of a file, or what a shell function of that name
# prints (the evidence of a failure must outlive cluster-down).
wait_for() {
  local label="$1" timeout="$2" logf="$3"; shift 3
  local t0 deadline; t0="$(date +%s.%N)"; deadline=$(( $(date +%s) + timeout ))
  printf '[cluster] %-52s ' "$label ..." >&2
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) > deadline )); then
      printf 'TIMEOUT (%s)\n' "$(_elapsed "$t0")" >&2
      if [[ -n "$logf" ]] && declare -F "$logf" >/dev/null; then
        printf '[cluster] %s:\n' "$logf" >&2
        "$logf" 2>&1 | sed 's/^/    /' >&2
      elif [[ -n "$logf" && -f "$logf" ]]; then
        printf '[cluster] last 40 lines of %s:\n' "$logf" >&2
        tail -n 40 "$logf" | sed 's/^/    /' >&2
      fi
      exit 1
    fi
    sleep 0.5
  done
  printf 'ok (%s)\n' "$(_elapsed "$t0")" >&2
}

need_root() { [[ $(id -u) -eq 0 ]] || die "must run as root (it configures network, mounts and cgroups)"; }

# pid_alive NAME: the process recorded in $PID_DIR/NAME.pid runs and is the one we started.
pid_alive() {
  local f="$PID_DIR/$1.pid" pid state cmd
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f")"
  [[ -n "$pid" && -r "/proc/$pid/stat" ]] || return 1
  # A zombie has exited; the shell that started it just has not reaped it.
  state="$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
  [[ -n "$state" && "$state" != Z && "$state" != X ]] || return 1
  # Guard against PID reuse: the command line must still name our binary.
  # It reads empty for an instant while the process execs: that is alive.
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ -z "$cmd" || "$cmd" == *"$(cat "$PID_DIR/$1.cmd" 2>/dev/null || echo "$1")"* ]]
}
