#!/usr/bin/env bash
# make cluster-down: stops what cluster-up started (by PID file) and puts the
# machine back: pods and their netns, containerd's and the kubelet's mounts,
# kube-proxy's/kubelet's/CNI's/our iptables chains, the cni0 bridge, the node
# address on lo, the kubepods cgroups, the sysctls cluster-up saved, and the
# state folders. Safe to run any number of times, with or without a cluster.
. "$(dirname "$0")/lib.sh"

need_root
if [[ "${1:-}" != --locked ]]; then
  mkdir -p "$WSPS_CACHE"
  exec 7>"$WSPS_CACHE/.cluster.lock"
  flock 7
fi

# stop NAME [TIMEOUT]: SIGTERM the recorded PID, SIGKILL after TIMEOUT seconds.
stop() {
  local name="$1" timeout="${2:-15}" pid i
  if pid_alive "$name"; then
    pid="$(cat "$PID_DIR/$name.pid")"
    kill -TERM "$pid" 2>/dev/null || true
    for (( i = 0; i < timeout * 10; i++ )); do
      [[ -d "/proc/$pid" ]] || break
      # A zombie is as good as gone (its parent, a finished up.sh, is not ours to wait).
      [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && break
      sleep 0.1
    done
    if [[ -d "/proc/$pid" ]] && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; then
      echo "$name ($pid) ignored SIGTERM for ${timeout}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "stopped $name ($pid)"
  fi
  rm -f "$PID_DIR/$name.pid" "$PID_DIR/$name.cmd"
}

stop_control() {
  # First: on SIGTERM it deletes its nftables table (pods' packets are no longer queued).
  stop kube-network-policies 10
  stop registry 5
  stop coredns 5
  stop kube-controller-manager
  stop kube-scheduler
}

# Pods go through the runtime so the CNI plugin releases each pod's IP and
# veth and containerd unmounts its netns; then containerd stops.
stop_runtime() {
  stop kubelet 20
  if pid_alive containerd && [[ -S "$CONTAINERD_SOCK" ]]; then
    "$K8S_BIN/wsps-cri" -endpoint "unix://$CONTAINERD_SOCK" -timeout 90s rmp-all || \
      echo "some pods could not be removed through the runtime; their processes are killed below"
  fi
  stop containerd 20
  # containerd-shim-runc-v2 processes outlive containerd by design: end ours
  # (those started for our socket), then anything still in the kubepods cgroups.
  local pid
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" || true); do
    echo "killing shim $pid"; kill -KILL "$pid" 2>/dev/null || true
  done
  local procs f
  for f in /sys/fs/cgroup/*/kubepods/cgroup.procs /sys/fs/cgroup/*/kubepods/*/cgroup.procs /sys/fs/cgroup/*/kubepods/*/*/cgroup.procs \
           /sys/fs/cgroup/*/kubepods/*/*/*/cgroup.procs /sys/fs/cgroup/kubepods*/cgroup.procs; do
    [[ -f "$f" ]] || continue
    procs="$(cat "$f" 2>/dev/null || true)"
    for pid in $procs; do echo "killing container process $pid ($f)"; kill -KILL "$pid" 2>/dev/null || true; done
  done
}

stop_proxy_and_api() {
  stop kube-proxy
  # kube-proxy removes its own iptables chains (both families).
  if [[ -x "$K8S_BIN/kube-proxy" ]]; then "$K8S_BIN/kube-proxy" --cleanup --v=0 || true; fi
  stop kube-apiserver 20
  stop etcd 20
}

# Unmount everything under our folders (deepest first), the CRI's netns
# files, and shim rootfs mounts; lazily if busy.
unmount_all() {
  local m
  local -a mounts
  mapfile -t mounts < <(awk '{print $2}' /proc/self/mounts | sed 's/\\040/ /g' | \
    grep -E "^($STATE_DIR|$RUN_DIR|$CONTAINERD_ROOT|/run/netns/cni-|/var/run/netns/cni-|/run/containerd/)" | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-)
  for m in "${mounts[@]}"; do
    [[ -n "$m" ]] || continue
    if [[ "$m" == /run/netns/* || "$m" == /var/run/netns/* ]] && grep -qxF "$(basename "$m")" "$SAVED_DIR/preexisting-netns" 2>/dev/null; then continue; fi
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "could not unmount $m"
    echo "unmounted $m"
  done
  local ns
  for ns in /run/netns/cni-*; do
    [[ -e "$ns" ]] || continue
    grep -qxF "$(basename "$ns")" "$SAVED_DIR/preexisting-netns" 2>/dev/null && continue
    rm -f "$ns" && echo "removed netns $ns"
  done
}

# purge_chains iptables|ip6tables: drops every KUBE-*, CNI-* and WSPS-* chain
# and every rule that jumps to one, table by table, keeping all other rules.
purge_chains() {
  local cmd="$1" t dump
  command -v "$cmd-save" >/dev/null || return 0
  for t in filter nat mangle raw security; do
    dump="$("$cmd-save" -t "$t" 2>/dev/null)" || continue
    grep -qE '^:(KUBE-|CNI-|WSPS-)|-[jg] (KUBE-|CNI-|WSPS-)' <<<"$dump" || continue
    awk '/^:(KUBE-|CNI-|WSPS-)/ {next}
         /^-A (KUBE-|CNI-|WSPS-)/ {next}
         / -[jg] (KUBE-|CNI-|WSPS-)/ {next}
         {print}' <<<"$dump" | "$cmd-restore" -w 5
    echo "purged $cmd $t"
  done
}

network() {
  if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then ip link del "$CNI_BRIDGE" && echo "deleted bridge $CNI_BRIDGE"; fi
  # veths of pods whose netns is gone vanish with it; any left on the bridge's
  # old master are named veth* with no peer netns: leave unrelated ones alone.
  purge_chains iptables
  purge_chains ip6tables
  # The enforcer's nftables table, if a kill -9 left it (it is no iptables chain).
  if [[ -x "$NETPOL_BIN/kube-network-policies" ]]; then "$NETPOL_BIN/kube-network-policies" --cleanup && echo "removed nftables table inet kube-network-policies"; fi
  if [[ -f "$SAVED_DIR/lo-address-added" ]] || { [[ ! -d "$SAVED_DIR" ]] && ip -o addr show dev lo | grep -q " $NODE_IP/32"; }; then
    ip addr del "$NODE_IP/32" dev lo 2>/dev/null && echo "removed $NODE_IP/32 from lo" || true
  fi
  # conntrack entries of pod/service traffic would only confuse a next cluster.
  if command -v conntrack >/dev/null; then
    conntrack -D -s "$POD_CIDR" >/dev/null 2>&1 || true
    conntrack -D -d "$POD_CIDR" >/dev/null 2>&1 || true
  fi
}

# The kubelet (cgroupfs driver) made kubepods/ in every hierarchy.
cgroups() {
  local h d
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [[ -d "$h/kubepods" ]] || continue
    # Deepest first; rmdir only (a cgroup with a process left in it stays, and says so).
    while read -r d; do
      rmdir "$d" 2>/dev/null || echo "could not remove cgroup $d"
    done < <(find "$h/kubepods" -depth -type d)
  done
  [[ -z "$(ls -d /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods 2>/dev/null)" ]] || echo "some kubepods cgroups remain"
}

restore_sysctls() {
  [[ -f "$SAVED_DIR/sysctl.conf" ]] || return 0
  local k eq v
  while read -r k eq v; do
    [[ -n "$k" && "$eq" == "=" ]] || continue
    if [[ "$(sysctl -n "$k" 2>/dev/null)" != "$v" ]]; then
      if sysctl -qw "$k=$v" 2>/dev/null; then echo "restored $k = $v"; else echo "could not restore $k = $v"; fi
    fi
  done <"$SAVED_DIR/sysctl.conf"
}

# Keep the last run's logs (components and pods) for post-mortems.
keep_logs() {
  [[ -d "$LOG_DIR" ]] || return 0
  local dest="$CACHE_DIR/last-run-logs"
  rm -rf "$dest.tmp"; mkdir -p "$dest.tmp"
  cp -a "$LOG_DIR/." "$dest.tmp/" 2>/dev/null || true
  [[ -d "$STATE_DIR/pod-logs" ]] && cp -rL "$STATE_DIR/pod-logs" "$dest.tmp/pods" 2>/dev/null || true
  rm -rf "$dest"; mv "$dest.tmp" "$dest"
}

remove_files() {
  local p
  if [[ -f "$SAVED_DIR/preexisting-paths" ]]; then
    for p in /run/containerd /run/netns /var/log/containers /var/log/pods /var/lib/cni /etc/cni /opt/cni /opt/containerd /var/lib/kubelet; do
      [[ -e "$p" ]] || continue
      grep -qxF "$p" "$SAVED_DIR/preexisting-paths" && continue
      # Only if nothing but our own leftovers is there (never another tool's mount).
      if [[ "$p" == /run/netns && -n "$(ls -A /run/netns 2>/dev/null)" ]]; then continue; fi
      if mountpoint -q "$p"; then continue; fi
      rm -rf "$p" && echo "removed $p"
    done
  fi
  # Our kubelet's container log symlinks, if /var/log/containers was there before.
  find /var/log/containers -maxdepth 1 -type l -lname "$STATE_DIR/*" -delete 2>/dev/null || true
  rm -rf "$STATE_DIR" "$RUN_DIR"
  rm -f "$KUBECONFIG_OUT"
}

anything_here() {
  [[ -d "$STATE_DIR" || -d "$RUN_DIR" ]] && return 0
  ip link show "$CNI_BRIDGE" >/dev/null 2>&1 && return 0
  iptables-save 2>/dev/null | grep -qE 'KUBE-|CNI-|WSPS-' && return 0
  return 1
}

main() {
  if ! anything_here; then
    skip "cluster-down" "nothing to stop"
    return 0
  fi
  step "stop coredns, controller-manager, scheduler" "$CACHE_DIR/down-logs/1-control.log" stop_control
  step "stop kubelet, remove pods, stop containerd" "$CACHE_DIR/down-logs/2-runtime.log" stop_runtime
  step "stop kube-proxy (+cleanup), apiserver, etcd" "$CACHE_DIR/down-logs/3-api.log" stop_proxy_and_api
  step "unmount" "$CACHE_DIR/down-logs/4-mounts.log" unmount_all
  step "network: bridge, iptables chains, lo address" "$CACHE_DIR/down-logs/5-network.log" network
  step "cgroups" "$CACHE_DIR/down-logs/6-cgroups.log" cgroups
  step "restore sysctls" "$CACHE_DIR/down-logs/7-sysctl.log" restore_sysctls
  step "keep logs in $CACHE_DIR/last-run-logs" "$CACHE_DIR/down-logs/8-logs.log" keep_logs
  step "remove state ($STATE_DIR, $RUN_DIR)" "$CACHE_DIR/down-logs/9-files.log" remove_files
  log "down in $(total_elapsed)"
}

main "$@"; exit $?
