#!/usr/bin/env bash
# Prints what the cluster may change on the machine, in a diffable form:
#   snapshot.sh > before.txt; make cluster-up; make cluster-down; snapshot.sh | diff before.txt -
# Used by check-clean (cluster-down's own test).
set -o errexit -o nounset -o pipefail
export LC_ALL=C
section() { printf '\n## %s\n' "$1"; }

section "sysctl (kernel, vm, net.ipv4/ipv6 all/default, bridge, netfilter)"
sysctl -a 2>/dev/null | grep -E '^(kernel\.(panic|panic_on_oops|keys\.root_max|pid_max)|vm\.(overcommit_memory|panic_on_oom)|net\.ipv4\.(ip_forward|conf\.(all|default|lo)\.)|net\.ipv6\.conf\.(all|default)\.forwarding|net\.bridge\.|net\.netfilter\.nf_conntrack_(max|tcp_timeout_(established|close_wait)))' | sort
section "addresses"
ip -o addr show | awk '{print $2, $3, $4}' | sort
section "links"
ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
section "routes"
ip route show | sort
section "iptables chains (table:chain)"
for t in filter nat mangle raw; do iptables -t "$t" -S 2>/dev/null | awk -v t="$t" '$1=="-N"||$1=="-P"{print t":"$2}'; done | sort
section "iptables rules count"
iptables-save 2>/dev/null | grep -c '^-A' || true
section "ip6tables chains"
for t in filter nat mangle raw; do ip6tables -t "$t" -S 2>/dev/null | awk -v t="$t" '$1=="-N"||$1=="-P"{print t":"$2}'; done | sort
section "nft tables"
(command -v nft >/dev/null && nft list tables 2>/dev/null) | sort || true
section "mounts"
awk '{print $2, $3}' /proc/self/mounts | sort
section "netns"
ls /run/netns 2>/dev/null | sort || true
section "cgroups (top two levels)"
for h in /sys/fs/cgroup/*/; do find "$h" -mindepth 1 -maxdepth 2 -type d 2>/dev/null; done | { grep -v process_api || true; } | sort
section "processes (comm)"
ps -e -o comm= | grep -E 'kube|etcd|containerd|coredns|traefik|pause|runc|prometheus|keda|docker-registry' | sort | uniq -c || true
section "files"
for f in /var/lib/wsps-cluster /run/wsps-cluster /var/lib/kubelet /var/lib/cni /etc/cni /var/log/pods /var/log/containers /run/containerd /var/lib/containerd; do
  [[ -e "$f" ]] && echo "exists $f"
done
true
