#!/usr/bin/env bash
# make cluster-up: builds what is not cached, then starts a single-node
# Kubernetes cluster on this machine (etcd, kube-apiserver, containerd,
# controller-manager, scheduler, kubelet, kube-proxy, CoreDNS on the node,
# Traefik and the F5 NGINX Ingress Controller in pods). Idempotent: a healthy
# running cluster is left alone; a half-started one is torn down first.
# Non-interactive; exits non-zero with the failing log's tail.
. "$(dirname "$0")/lib.sh"
# shellcheck source=pki.sh
. "$LC_DIR/pki.sh"

need_root
mkdir -p "$WSPS_CACHE"
exec 7>"$WSPS_CACHE/.cluster.lock"
exec 6>&2
flock 7

COMPONENTS=(etcd kube-apiserver registry containerd kube-controller-manager kube-scheduler kubelet kube-proxy coredns kube-network-policies)
KUBECTL=("$K8S_BIN/kubectl" --kubeconfig "$STATE_DIR/admin.kubeconfig" --request-timeout=10s)

# render TEMPLATE OUT: replaces @NAME@ with the value of $NAME.
render() {
  local src="$1" out="$2" v
  local sedargs=()
  for v in STATE_DIR RUN_DIR PKI_DIR CONTAINERD_ROOT NODE_IP NODE_NAME POD_CIDR POD_GW SERVICE_CIDR DNS_SVC_IP \
           CLUSTER_DOMAIN CNI_BRIDGE PAUSE_IMAGE TRAEFIK_IMAGE TRAEFIK_VERSION TRAEFIK_NODEPORT \
           PROMETHEUS_IMAGE PROMETHEUS_VERSION PROMETHEUS_NODEPORT KEDA_IMAGE KEDA_VERSION CA_BUNDLE REGISTRY_PORT \
           NGINX_INGRESS_VERSION NGINX_INGRESS_REPOSITORY NGINX_INGRESS_TAG NGINX_NODEPORT; do
    sedargs+=(-e "s|@$v@|${!v}|g")
  done
  sed "${sedargs[@]}" "$src" >"$out"
  if grep -q '@[A-Z_]*@' "$out"; then die "unrendered placeholder in $out: $(grep -o '@[A-Z_]*@' "$out" | head -1)"; fi
}

# The controller image's name in the chart's two values.
NGINX_INGRESS_REPOSITORY="${NGINX_INGRESS_IMAGE%:*}"
NGINX_INGRESS_TAG="${NGINX_INGRESS_IMAGE##*:}"

# The cluster CA, base64 (KEDA's APIService); set once the PKI exists.
CA_BUNDLE=""

# start NAME BINARY ARGS...: a detached daemon, logged, with a PID file.
start() {
  local name="$1" bin="$2"; shift 2
  : >>"$LOG_DIR/$name.log"
  # setsid: not in make's process group, so ^C on a later make does not reach it.
  # 7>&-: daemons must not inherit the cluster lock.
  setsid "$bin" "$@" >>"$LOG_DIR/$name.log" 2>&1 </dev/null 6>&- 7>&- &
  local pid=$! i want
  echo "$pid" >"$PID_DIR/$name.pid"
  echo "$bin" >"$PID_DIR/$name.cmd"
  # Return once PID is the daemon itself: first it is a copy of this shell,
  # then setsid, then (after an exec that takes a while for a 100 MB binary
  # on a loaded machine) the daemon. Probing it earlier saw a process that
  # was not (yet) ours and reported a healthy daemon dead (CI, twice).
  want="$(readlink -f "$bin")"
  for ((i = 0; i < 200; i++)); do
    [[ -d "/proc/$pid" ]] || return 0 # exited: wait_up reports it with its log
    [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$want" ]] && return 0
    sleep 0.05
  done
  die "$name: pid $pid is still not $bin after 10 s"
}

alive_or_die() {
  local name="$1"
  pid_alive "$name" && return 0
  # fd 6 is the script's own stderr: wait_for silences the probe's.
  { echo; log "$name exited; last 40 lines of $LOG_DIR/$name.log:"
    tail -n 40 "$LOG_DIR/$name.log" | sed 's/^/    /'; } >&6 2>&6
  exit 1
}

# wait_up NAME TIMEOUT CHECK...: polls CHECK, failing early if NAME died.
wait_up() {
  local name="$1" timeout="$2"; shift 2
  wait_for "$name ready" "$timeout" "$LOG_DIR/$name.log" _probe "$name" "$@"
}
_probe() { local name="$1"; shift; pid_alive "$name" || { alive_or_die "$name"; }; "$@"; }

https_ok() { curl -sf --max-time 2 --cacert "$PKI_DIR/ca.crt" --cert "$PKI_DIR/admin.crt" --key "$PKI_DIR/admin.key" "$1" >/dev/null; }
node_ready() { [[ "$("${KUBECTL[@]}" get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]; }
default_sa() { "${KUBECTL[@]}" -n default get serviceaccount default >/dev/null 2>&1; }

healthy() {
  local c
  for c in "${COMPONENTS[@]}"; do pid_alive "$c" || return 1; done
  https_ok "https://127.0.0.1:$APISERVER_PORT/readyz" && node_ready
}

partial() {
  local c
  for c in "${COMPONENTS[@]}"; do [[ -f "$PID_DIR/$c.pid" ]] && return 0; done
  [[ -d "$STATE_DIR" || -d "$RUN_DIR" ]] || ip -o addr show dev lo | grep -q " $NODE_IP/32" || ip link show "$CNI_BRIDGE" >/dev/null 2>&1
}

# --- host preparation ---------------------------------------------------------

SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory kernel.keys.root_maxkeys
         kernel.keys.root_maxbytes net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables
         net.bridge.bridge-nf-call-ip6tables net.ipv4.conf.all.route_localnet
         net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established
         net.netfilter.nf_conntrack_tcp_timeout_close_wait net.ipv4.vs.conntrack net.ipv4.conf.all.forwarding)
# Paths some component may create outside our own folders; cluster-down removes
# those that did not exist before.
OUTSIDE_PATHS=(/run/containerd /run/netns /var/run/netns /var/log/containers /var/log/pods /var/lib/cni /etc/cni /opt/cni /opt/containerd /var/lib/kubelet)

prepare_host() {
  mkdir -p "$STATE_DIR" "$RUN_DIR" "$PID_DIR" "$LOG_DIR" "$PKI_DIR" "$SAVED_DIR" \
    "$STATE_DIR/cni/net.d" "$STATE_DIR/cni/ipam" "$STATE_DIR/pod-logs" "$STATE_DIR/kubelet" "$STATE_DIR/etcd"
  chmod 700 "$STATE_DIR/etcd"
  # What cluster-down restores: saved once, before anything is changed.
  if [[ ! -f "$SAVED_DIR/sysctl.conf" ]]; then
    local s v
    for s in "${SYSCTLS[@]}"; do
      v="$(sysctl -n "$s" 2>/dev/null)" && printf '%s = %s\n' "$s" "$v"
    done >"$SAVED_DIR/sysctl.conf.tmp"
    mv "$SAVED_DIR/sysctl.conf.tmp" "$SAVED_DIR/sysctl.conf"
    local p
    for p in "${OUTSIDE_PATHS[@]}"; do [[ -e "$p" || -L "$p" ]] && echo "$p"; done >"$SAVED_DIR/preexisting-paths"
    ls /run/netns 2>/dev/null >"$SAVED_DIR/preexisting-netns" || : >"$SAVED_DIR/preexisting-netns"
  fi
  # Modules (built in on some kernels: then modprobe has nothing to do).
  modprobe -q br_netfilter 2>/dev/null || true
  modprobe -q overlay 2>/dev/null || true
  [[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] || die "br_netfilter is missing (no /proc/sys/net/bridge): kube-proxy needs it"
  grep -qw overlay /proc/filesystems || die "overlayfs is missing: containerd's snapshotter needs it"
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
  # The node address: a private /32 on lo.
  if ! ip -o addr show dev lo | grep -q " $NODE_IP/32"; then
    ip addr add "$NODE_IP/32" dev lo
    touch "$SAVED_DIR/lo-address-added"
  fi
  printf 'nameserver %s\n' "$NODE_IP" >"$STATE_DIR/resolv.conf"
  render "$LC_DIR/config/containerd.toml" "$STATE_DIR/containerd.toml"
  render "$LC_DIR/config/cni.conflist" "$STATE_DIR/cni/net.d/10-wsps.conflist"
  render "$LC_DIR/config/kubelet.yaml" "$STATE_DIR/kubelet.yaml"
  render "$LC_DIR/config/kube-proxy.yaml" "$STATE_DIR/kube-proxy.yaml"
  render "$LC_DIR/config/Corefile" "$STATE_DIR/Corefile"
  render "$LC_DIR/config/registry.yml" "$STATE_DIR/registry.yml"
  mkdir -p "$STATE_DIR/registry"
}

preflight() {
  [[ -d /sys/fs/cgroup/memory && -d /sys/fs/cgroup/cpu ]] || \
    [[ -f /sys/fs/cgroup/cgroup.controllers ]] || die "no usable cgroup hierarchy under /sys/fs/cgroup"
  local p busy=()
  for p in "$APISERVER_PORT" 2379 2380 10250 10248 10249 10256 10257 10259 18181 53 "$REGISTRY_PORT" "$NETPOL_PORT"; do
    [[ -z "$(ss -Hltn "sport = :$p")" ]] || busy+=("tcp/$p")
  done
  [[ -z "$(ss -Hlun "sport = :53")" ]] || busy+=("udp/53")
  (( ${#busy[@]} == 0 )) || die "ports in use by something else: ${busy[*]} (ss -ltnup shows who)"
  # Localhost NodePorts (Traefik, Prometheus) are DNATs, which need
  # conntrack: with loopback TCP exempted from it (a raw-table NOTRACK, like
  # the CAPACITY-NOTRACK chain of a capacity run) every one refuses connections.
  if iptables -t raw -S 2>/dev/null | grep -qE -- '-d 127\.0\.0\.0/8 .*--notrack'; then
    die "loopback TCP is exempted from conntrack (iptables -t raw -S: $(iptables -t raw -S | grep -m1 -- '--notrack')): NodePorts on 127.0.0.1 cannot work; a capacity run is active or left it (make capacity-restore)"
  fi
}

# --- iptables: pods get no route off the machine --------------------------------

egress_guard() {
  iptables -t mangle -N WSPS-EGRESS 2>/dev/null || iptables -t mangle -F WSPS-EGRESS
  iptables -t mangle -A WSPS-EGRESS -d "$POD_CIDR" -j RETURN
  iptables -t mangle -A WSPS-EGRESS -d "$SERVICE_CIDR" -j RETURN
  iptables -t mangle -A WSPS-EGRESS -d "$NODE_IP/32" -j RETURN
  iptables -t mangle -A WSPS-EGRESS -m comment --comment "wsps: pods never leave the machine" -j DROP
  iptables -t mangle -C FORWARD -i "$CNI_BRIDGE" -j WSPS-EGRESS 2>/dev/null || \
    iptables -t mangle -I FORWARD 1 -i "$CNI_BRIDGE" -j WSPS-EGRESS
}

# Pods reach the apiserver at the kubernetes Service ($KUBERNETES_SVC_IP:443)
# or at its endpoint ($NODE_IP:$APISERVER_PORT), but it listens on
# 127.0.0.1 only: both are DNATed to 127.0.0.1 as they arrive from the pod
# bridge (route_localnet=1 lets the kernel route them, as for kube-proxy's
# localhost NodePorts). Our jump must be first in nat PREROUTING, ahead of
# kube-proxy's KUBE-SERVICES: the first DNAT ends the chain, and kube-proxy's
# sends them to the node address, where nothing listens (pods then get
# "connection refused" from 10.96.0.1:443). kube-proxy puts its jump first
# (iptables -I) on its first sync, and later only checks that it exists, so
# ours goes in after that sync (start_kube_proxy waits for it) and is then
# checked to be first.
apiserver_for_pods() {
  sysctl -qw net.ipv4.conf.all.route_localnet=1
  iptables -t nat -N WSPS-APISERVER 2>/dev/null || iptables -t nat -F WSPS-APISERVER
  iptables -t nat -A WSPS-APISERVER -d "$KUBERNETES_SVC_IP/32" -p tcp --dport 443 -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT"
  iptables -t nat -A WSPS-APISERVER -d "$NODE_IP/32" -p tcp --dport "$APISERVER_PORT" -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT"
  iptables -t nat -D PREROUTING -i "$CNI_BRIDGE" -j WSPS-APISERVER 2>/dev/null || true
  iptables -t nat -I PREROUTING 1 -i "$CNI_BRIDGE" -j WSPS-APISERVER
  iptables -t nat -S PREROUTING
  local first; first="$(nat_prerouting_rules | head -n 1)"
  [[ "$first" == "-A PREROUTING -i $CNI_BRIDGE -j WSPS-APISERVER" ]] || die "WSPS-APISERVER is not first in nat PREROUTING (first: $first)"
}
# The nat PREROUTING rules, without iptables-nft's warning about legacy tables.
nat_prerouting_rules() { iptables -t nat -S PREROUTING 2>/dev/null | grep '^-A'; }
# kube-proxy has synced once: its KUBE-SERVICES jump is in nat PREROUTING.
kube_proxy_synced() { nat_prerouting_rules | grep -q -- '-j KUBE-SERVICES$'; }

# --- components -----------------------------------------------------------------

start_etcd() {
  start etcd "$ETCD_BIN/etcd" --name "$NODE_NAME" --data-dir "$STATE_DIR/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$NODE_NAME=http://127.0.0.1:2380" --initial-cluster-state new \
    --listen-metrics-urls "" --log-level warn --quota-backend-bytes 2147483648 \
    --snapshot-count 10000 --unsafe-no-fsync
  wait_up etcd 30 curl -sf --max-time 2 http://127.0.0.1:2379/readyz
}

# The apiserver listens on 127.0.0.1 only: every host-side client (kubectl,
# helm, the control plane) talks to loopback. It still advertises the node
# address for the kubernetes Service (it refuses a loopback one); pods reach
# it through apiserver_for_pods.
start_apiserver() {
  start kube-apiserver "$K8S_BIN/kube-apiserver" \
    --advertise-address="$NODE_IP" --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
    --etcd-servers=http://127.0.0.1:2379 \
    --service-cluster-ip-range="$SERVICE_CIDR" --service-node-port-range="$NODEPORT_RANGE" \
    --allow-privileged=true --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --client-ca-file="$PKI_DIR/ca.crt" \
    --tls-cert-file="$PKI_DIR/apiserver.crt" --tls-private-key-file="$PKI_DIR/apiserver.key" \
    --kubelet-client-certificate="$PKI_DIR/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI_DIR/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI_DIR/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --service-account-issuer="https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
    --service-account-key-file="$PKI_DIR/sa.pub" --service-account-signing-key-file="$PKI_DIR/sa.key" \
    --requestheader-client-ca-file="$PKI_DIR/ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$PKI_DIR/front-proxy-client.crt" --proxy-client-key-file="$PKI_DIR/front-proxy-client.key" \
    --enable-aggregator-routing=true \
    --profiling=false --event-ttl=1h --v=1
  wait_up kube-apiserver 90 https_ok "https://127.0.0.1:$APISERVER_PORT/readyz"
}

# The registry `make release` pushes to (REGISTRY=127.0.0.1:5000) and the
# kubelet pulls from (containerd mirror, plain HTTP).
start_registry() {
  start registry /usr/bin/docker-registry serve "$STATE_DIR/registry.yml"
  wait_up registry 30 curl -sf --max-time 2 "http://127.0.0.1:$REGISTRY_PORT/v2/"
}

start_containerd() {
  start containerd /usr/bin/containerd --config "$STATE_DIR/containerd.toml"
  wait_up containerd 30 ctr --address "$CONTAINERD_SOCK" version
  # The CRI plugin initializes after the socket answers; until then every
  # CRI call fails with "server is not initialized yet" (seen in CI).
  wait_for "containerd CRI initialized" 30 "$LOG_DIR/containerd.log" \
    "$K8S_BIN/wsps-cri" -endpoint "unix://$CONTAINERD_SOCK" -timeout 5s pods
}

start_controllers() {
  start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig="$STATE_DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$STATE_DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$STATE_DIR/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --cluster-name=wsps \
    --client-ca-file="$PKI_DIR/ca.crt" --root-ca-file="$PKI_DIR/ca.crt" \
    --cluster-signing-cert-file="$PKI_DIR/ca.crt" --cluster-signing-key-file="$PKI_DIR/ca.key" \
    --service-account-private-key-file="$PKI_DIR/sa.key" --use-service-account-credentials=true \
    --service-cluster-ip-range="$SERVICE_CIDR" --allocate-node-cidrs=false \
    --horizontal-pod-autoscaler-sync-period=5s --v=1
  start kube-scheduler "$K8S_BIN/kube-scheduler" \
    --kubeconfig="$STATE_DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig="$STATE_DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig="$STATE_DIR/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --leader-elect=false --v=1
  wait_up kube-controller-manager 30 curl -skf --max-time 2 https://127.0.0.1:10257/healthz
  wait_up kube-scheduler 30 curl -skf --max-time 2 https://127.0.0.1:10259/healthz
}

start_kubelet() {
  start kubelet "$K8S_BIN/kubelet" --config="$STATE_DIR/kubelet.yaml" \
    --kubeconfig="$STATE_DIR/kubelet.kubeconfig" --root-dir="$STATE_DIR/kubelet" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1
  wait_up kubelet 90 node_ready
}

start_kube_proxy() {
  start kube-proxy "$K8S_BIN/kube-proxy" --config="$STATE_DIR/kube-proxy.yaml" --v=1
  wait_up kube-proxy 30 curl -sf --max-time 2 http://127.0.0.1:10256/healthz
  # Its healthz answers before its first sync has written any rule (seen:
  # the jump came 0.1-2 s later), and apiserver_for_pods must follow that sync.
  wait_for "kube-proxy first sync (KUBE-SERVICES in nat PREROUTING)" 60 "$LOG_DIR/kube-proxy.log" kube_proxy_synced
}

start_dns() {
  render "$LC_DIR/manifests/cluster-dns.yaml" "$STATE_DIR/cluster-dns.yaml"
  "${KUBECTL[@]}" apply -f "$STATE_DIR/cluster-dns.yaml" >>"$LOG_DIR/manifests.log" 2>&1 || {
    tail -n 20 "$LOG_DIR/manifests.log" >&2; die "could not apply cluster-dns.yaml"; }
  start coredns "$COREDNS_BIN/coredns" -conf "$STATE_DIR/Corefile"
  wait_up coredns 30 curl -sf --max-time 2 http://127.0.0.1:18181/ready
}

# NetworkPolicies are enforced by kube-network-policies on the node (the
# bridge CNI has no policy engine): the first packet of every new connection
# from or to a pod goes through nfqueue to it, and it accepts or drops it
# by the policies that select either end (infra/local-cluster/README.md).
# Host-side traffic is not judged: root's own packets (kubelet probes, the
# e2e's NodePort clients, the apiserver) and anything delivered to the node
# itself (CoreDNS, the apiserver DNAT) never pass its postrouting hook.
start_network_policies() {
  _rbac() { "${KUBECTL[@]}" apply -f "$LC_DIR/manifests/network-policies.yaml"; }
  step "network policy enforcer RBAC" "$LOG_DIR/manifests.log" _rbac
  start kube-network-policies "$NETPOL_BIN/kube-network-policies" \
    --kubeconfig="$STATE_DIR/network-policies.kubeconfig" --hostname-override="$NODE_NAME" \
    --listen="127.0.0.1:$NETPOL_PORT" --v=1
  wait_up kube-network-policies 60 curl -sf --max-time 2 "http://127.0.0.1:$NETPOL_PORT/readyz"
}

# module_dir MODULE@VERSION: the module's source in the Go module cache
# (downloaded from the proxy if missing): CRDs and RBAC come from there.
module_dir() {
  local d
  d="$(GOFLAGS=-mod=mod go mod download -json "$1" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$d" ]] || die "go mod download $1 gave no source folder"
  echo "$d"
}

# apply_crds LABEL FILE...: server-side apply (the CRDs are too large for the
# last-applied annotation), then wait until the API serves them.
apply_crds() {
  local label="$1"; shift
  local args=() f
  for f in "$@"; do args+=(-f "$f"); done
  _crds() {
    "${KUBECTL[@]}" apply --server-side --force-conflicts "${args[@]}"
    "${KUBECTL[@]}" wait --for condition=established --timeout=60s "${args[@]}"
  }
  step "$label" "$LOG_DIR/manifests.log" _crds
}

# Gateway API: the standard-channel CRDs of the version Traefik is built with.
GATEWAY_API_VERSION=""
gateway_api_version() {
  local gomod
  gomod="$(GOFLAGS=-mod=mod go mod download -json "github.com/traefik/traefik/v3@$TRAEFIK_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')"
  GATEWAY_API_VERSION="$(awk '$1 == "sigs.k8s.io/gateway-api" { print $2; exit }' "$gomod")"
  [[ -n "$GATEWAY_API_VERSION" ]] || die "traefik $TRAEFIK_VERSION's go.mod names no sigs.k8s.io/gateway-api"
}

start_traefik() {
  gateway_api_version
  local gw; gw="$(module_dir "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")"
  apply_crds "gateway API $GATEWAY_API_VERSION CRDs (standard)" "$gw"/config/crd/standard/*.yaml
  render "$LC_DIR/manifests/traefik.yaml" "$STATE_DIR/traefik.yaml"
  _apply() { "${KUBECTL[@]}" apply -f "$STATE_DIR/traefik.yaml"; }
  step "apply traefik manifests" "$LOG_DIR/manifests.log" _apply
  wait_for "traefik ready" 120 "$LOG_DIR/manifests.log" traefik_ready
  # Traefik answers 404 for a host no Ingress names: the NodePort path works.
  wait_for "traefik via NodePort 127.0.0.1:$TRAEFIK_NODEPORT" 30 "" \
    bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://127.0.0.1:$TRAEFIK_NODEPORT/) == 404 ]]"
}

# The F5 NGINX Ingress Controller (IngressClass "nginx"), from its vendored
# chart with the project's values (infra/nginx-ingress-f5/values.yaml) and
# the local cluster's overrides (manifests/nginx-ingress-values.yaml).
start_nginx_ingress() {
  render "$LC_DIR/manifests/nginx-ingress-values.yaml" "$STATE_DIR/nginx-ingress-values.yaml"
  local helm; helm="$(eval "$("$REPO_ROOT/tools/tools.sh" env)"; echo "$HELM")"
  [[ -x "$helm" ]] || "$REPO_ROOT/tools/tools.sh" helm >>"$LOG_DIR/manifests.log" 2>&1
  _install() {
    "$helm" --kubeconfig "$STATE_DIR/admin.kubeconfig" upgrade --install nginx-ingress "$NGINX_INGRESS_DIR/chart" \
      --namespace nginx-ingress --create-namespace --skip-crds --skip-schema-validation \
      -f "$REPO_ROOT/infra/nginx-ingress-f5/values.yaml" -f "$STATE_DIR/nginx-ingress-values.yaml" \
      --wait --timeout 3m
  }
  step "helm install nginx-ingress $NGINX_INGRESS_VERSION (vendored chart)" "$LOG_DIR/nginx-ingress-install.log" _install
  # nginx answers 404 for a host no Ingress names: the NodePort path works.
  wait_for "nginx-ingress via NodePort 127.0.0.1:$NGINX_NODEPORT" 60 nginx_ingress_evidence \
    bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://127.0.0.1:$NGINX_NODEPORT/) == 404 ]]"
}
nginx_ingress_ready() {
  [[ "$("${KUBECTL[@]}" -n nginx-ingress get deploy nginx-ingress-controller -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" == 1 ]]
}
nginx_ingress_evidence() {
  "${KUBECTL[@]}" -n nginx-ingress get pods,svc -o wide
  "${KUBECTL[@]}" -n nginx-ingress logs deploy/nginx-ingress-controller --tail=30
}

# Prometheus (manifests/prometheus.yaml): kubernetes_sd scraping, API on
# NodePort $PROMETHEUS_NODEPORT at 127.0.0.1.
start_prometheus() {
  render "$LC_DIR/manifests/prometheus.yaml" "$STATE_DIR/prometheus.yaml"
  _apply() { "${KUBECTL[@]}" apply -f "$STATE_DIR/prometheus.yaml"; }
  step "apply prometheus manifests" "$LOG_DIR/manifests.log" _apply
  wait_for "prometheus ready via NodePort 127.0.0.1:$PROMETHEUS_NODEPORT" 120 "$LOG_DIR/manifests.log" \
    curl -sf --max-time 2 "http://127.0.0.1:$PROMETHEUS_NODEPORT/-/ready"
}

# KEDA (manifests/keda.yaml + CRDs and the operator's ClusterRole from the
# module source); ready when the external metrics API answers.
start_keda() {
  local src; src="$(module_dir "github.com/kedacore/keda/v2@$KEDA_VERSION")"
  apply_crds "keda $KEDA_VERSION CRDs" "$src"/config/crd/bases/*.yaml
  _secret() {
    "${KUBECTL[@]}" create namespace keda --dry-run=client -o yaml | "${KUBECTL[@]}" apply -f -
    "${KUBECTL[@]}" -n keda create secret generic kedaorg-certs --dry-run=client -o yaml \
      --from-file=ca.crt="$PKI_DIR/ca.crt" --from-file=tls.crt="$PKI_DIR/keda.crt" --from-file=tls.key="$PKI_DIR/keda.key" |
      "${KUBECTL[@]}" apply -f -
    "${KUBECTL[@]}" apply -f "$src/config/rbac/role.yaml"
  }
  step "keda certificates and RBAC" "$LOG_DIR/manifests.log" _secret
  CA_BUNDLE="$(base64 -w0 "$PKI_DIR/ca.crt")"
  render "$LC_DIR/manifests/keda.yaml" "$STATE_DIR/keda.yaml"
  _apply() { "${KUBECTL[@]}" apply -f "$STATE_DIR/keda.yaml"; }
  step "apply keda manifests" "$LOG_DIR/manifests.log" _apply
  wait_for "keda operator and external metrics API ready" 180 keda_evidence keda_ready
}
# What a KEDA that does not come up says: its pods, the last lines of each
# container's log, and the nat rules pods reach the apiserver through.
keda_evidence() {
  "${KUBECTL[@]}" -n keda get pods -o wide
  local f
  for f in /var/log/pods/keda_*/*/*.log; do
    [[ -f "$f" ]] || continue
    echo "--- $f"; tail -n 8 "$f" | cut -c1-400
  done
  nat_prerouting_rules
}
keda_ready() {
  [[ "$("${KUBECTL[@]}" -n keda get deploy keda-operator -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" == 1 ]] &&
    "${KUBECTL[@]}" get --raw /apis/external.metrics.k8s.io/v1beta1 >/dev/null
}
prometheus_ready() { curl -sf --max-time 2 "http://127.0.0.1:$PROMETHEUS_NODEPORT/-/ready" >/dev/null; }
traefik_ready() {
  [[ "$("${KUBECTL[@]}" -n traefik get deploy traefik -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" == 1 ]]
}

write_kubeconfig() {
  mkdir -p "$(dirname "$KUBECONFIG_OUT")"
  cp "$STATE_DIR/admin.kubeconfig" "$KUBECONFIG_OUT.tmp" && mv "$KUBECONFIG_OUT.tmp" "$KUBECONFIG_OUT"
  # Also at a fixed machine-wide place, for scripts outside this work tree.
  cp "$STATE_DIR/admin.kubeconfig" "$STATE_DIR/kubeconfig"
}

usage() {
  cat >&2 <<EOF
[cluster] up: Kubernetes $K8S_VERSION on node $NODE_NAME ($NODE_IP) in $(total_elapsed)
    export KUBECONFIG=$KUBECONFIG_OUT      # or: . infra/local-cluster/env.sh (apiserver https://127.0.0.1:$APISERVER_PORT)
    kubectl get nodes                            # kubectl is in \$WSPS_CACHE/bin ($K8S_BIN)
    ingress (Traefik: IngressClass "traefik", Gateway traefik/traefik): http://127.0.0.1:$TRAEFIK_NODEPORT/
    ingress (F5 NGINX Ingress Controller $NGINX_INGRESS_VERSION: IngressClass "nginx"): http://127.0.0.1:$NGINX_NODEPORT/
    prometheus: http://127.0.0.1:$PROMETHEUS_NODEPORT/ (monitoring/prometheus-operated:9090); keda in namespace keda
    registry: 127.0.0.1:$REGISTRY_PORT (plain HTTP; pods may pull from it)
    images: $WSPS_IMAGE $REDIS_IMAGE $K6_IMAGE (make images; imagePullPolicy: Never)
    logs:   $LOG_DIR/   stop: make cluster-down
EOF
}

# WSPS_CLUSTER_INGRESS=0: no Traefik (neither built nor installed).
INGRESS="${WSPS_CLUSTER_INGRESS:-1}"
# WSPS_CLUSTER_NGINX=0: no F5 NGINX Ingress Controller (neither built nor installed).
NGINX="${WSPS_CLUSTER_NGINX:-$INGRESS}"
# WSPS_CLUSTER_MONITORING=0: no Prometheus and KEDA (neither built nor installed).
MONITORING="${WSPS_CLUSTER_MONITORING:-1}"

addons() {
  if (( INGRESS )) && ! traefik_ready; then start_traefik; fi
  if (( NGINX )) && ! nginx_ingress_ready; then start_nginx_ingress; fi
  if (( MONITORING )) && ! prometheus_ready; then start_prometheus; fi
  if (( MONITORING )) && ! keda_ready 2>/dev/null; then start_keda; fi
}

main() {
  "$LC_DIR/deps.sh"
  local bins=(kubernetes etcd coredns pause network-policies) imgs=(base pause)
  if (( INGRESS )); then bins+=(traefik); imgs+=(traefik); fi
  if (( NGINX )); then bins+=(nginx-ingress); imgs+=(nginx-ingress); fi
  if (( MONITORING )); then bins+=(prometheus keda); imgs+=(prometheus keda); fi
  "$LC_DIR/build-bins.sh" "${bins[@]}"
  WSPS_IMAGES_QUIET_IMPORT=1 "$LC_DIR/images.sh" "${imgs[@]}"
  if healthy; then
    skip "cluster" "already running"
    "$LC_DIR/images.sh" --import-only
    addons
    write_kubeconfig
    usage
    return 0
  fi
  if partial; then
    log "a stopped or half-started cluster is here: cleaning it up first"
    "$LC_DIR/down.sh" --locked
  fi
  preflight
  step "prepare host (sysctls saved, $NODE_IP on lo, configs)" "$CACHE_DIR/build-logs/prepare.log" prepare_host
  step "certificates and kubeconfigs" "$LOG_DIR/pki.log" make_pki
  start_etcd
  start_apiserver
  start_registry
  start_containerd
  # Sandboxes a crashed earlier run left in containerd's (cached) root.
  step "remove stale pods from an earlier run" "$LOG_DIR/stale-pods.log" \
    "$K8S_BIN/wsps-cri" -endpoint "unix://$CONTAINERD_SOCK" -timeout 60s rmp-all
  "$LC_DIR/images.sh" --import-only
  step "egress guard (iptables mangle WSPS-EGRESS)" "$LOG_DIR/iptables.log" egress_guard
  start_controllers
  start_kubelet
  start_kube_proxy
  step "apiserver for pods (iptables nat WSPS-APISERVER)" "$LOG_DIR/iptables-apiserver.log" apiserver_for_pods
  start_dns
  start_network_policies
  wait_for "default service account" 30 "$LOG_DIR/kube-controller-manager.log" default_sa
  addons
  write_kubeconfig
  usage
}

main "$@"; exit $?
