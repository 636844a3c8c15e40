#!/usr/bin/env bash
# Kernel limits for `make capacity`: raise what the run needs, restore it after.
#
#   kernel.sh set STATE NEEDS   raise every limit in NEEDS ("key value" lines,
#                               from capacity.js --kernel-needs) that is lower
#                               now; save the old values in STATE first
#   kernel.sh restore STATE     put back everything STATE lists, then delete it
#
# Only raises, never lowers; only what is saved is restored. A STATE left by a
# run that was killed is restored before anything is set. Conntrack: when the
# table could not hold the run's connections, loopback TCP between 127/8
# addresses is exempted with NOTRACK in a raw-table chain of our own
# (CAPACITY-NOTRACK: not WSPS-*, which the local cluster's cluster-down purges,
# and no sysctl the cluster saves at cluster-up and restores at cluster-down);
# nf_conntrack_max is raised only when iptables is missing.
set -euo pipefail
CHAIN=CAPACITY-NOTRACK
say() { printf '[capacity kernel] %s\n' "$*" >&2; }

# drop_chain: the NOTRACK chain and its jumps gone. The jumps are deleted by
# the spec they were added with (-D matches the whole rule, interface
# included); a jump left behind keeps the chain referenced and -X fails.
drop_chain() {
  while iptables -t raw -D PREROUTING -i lo -j "$CHAIN" 2>/dev/null; do :; done
  while iptables -t raw -D OUTPUT -o lo -j "$CHAIN" 2>/dev/null; do :; done
  iptables -t raw -S "$CHAIN" >/dev/null 2>&1 || return 0
  iptables -t raw -F "$CHAIN"
  if iptables -t raw -X "$CHAIN"; then say "removed raw table chain $CHAIN"; else say "could not remove raw table chain $CHAIN: see iptables -t raw -S"; fi
}

restore() {
  local state=$1 kind key val
  [[ -f $state ]] || return 0
  while IFS=$'\t' read -r kind key val; do
    case $kind in
      sysctl)
        if sysctl -qw "$key=$val" 2>/dev/null; then say "restored $key = $val"; else say "could not restore $key = $val"; fi ;;
      iptables)
        drop_chain ;;
    esac
  done <"$state"
  rm -f "$state"
}

# raise STATE KEY WANT: sets KEY to WANT if it is lower now (for tcp_mem: its max).
raise() {
  local state=$1 key=$2 want=$3 cur new
  cur=$(sysctl -n "$key" 2>/dev/null | tr -s '\t ' ' ') || { say "$key: not on this kernel, skipped"; return 0; }
  if [[ $key == net.ipv4.tcp_mem ]]; then
    local min pressure max cap
    read -r min pressure max <<<"$cur"
    cap=$(( $(awk '/^MemTotal/ {print $2}' /proc/meminfo) / 4 / 2 )) # half of RAM, in 4 KiB pages
    ((want > cap)) && want=$cap
    ((max >= want)) && return 0
    new="$min $(( pressure > want * 3 / 4 ? pressure : want * 3 / 4 )) $want"
  else
    ((cur >= want)) && return 0
    new=$want
  fi
  if ((EUID != 0)); then say "$key = $cur, the run wants $new: not root, left alone"; return 0; fi
  printf 'sysctl\t%s\t%s\n' "$key" "$cur" >>"$state"
  sysctl -qw "$key=$new"
  say "$key: $cur -> $new"
}

set_limits() {
  local state=$1 needs=$2 key want
  restore "$state"
  mkdir -p "$(dirname "$state")"
  while read -r key want; do
    [[ -n $key ]] || continue
    if [[ $key == net.netfilter.nf_conntrack_max ]]; then conntrack "$state" "$want"; continue; fi
    raise "$state" "$key" "$want"
  done <<<"$needs"
  local range
  range=$(sysctl -n net.ipv4.ip_local_port_range | tr -s '\t ' ' ')
  # Not widened: the whole machine would then hand out ports other jobs bind
  # on purpose (8080, 6379...). More source addresses are free instead.
  say "ephemeral ports $range per source address (left as is)"
}

conntrack() {
  local state=$1 want=$2 max count
  max=$(sysctl -n net.netfilter.nf_conntrack_max 2>/dev/null) || { say "conntrack not loaded: nothing to do"; return 0; }
  count=$(sysctl -n net.netfilter.nf_conntrack_count 2>/dev/null || echo 0)
  # want already counts the run's connections plus headroom for the rest.
  ((max - count >= want - 65536)) && { say "conntrack: $count of $max in use, room for the run"; return 0; }
  if command -v iptables >/dev/null && ((EUID == 0)); then
    printf 'iptables\t%s\t-\n' "$CHAIN" >>"$state"
    drop_chain # a run killed before it saved its state may have left one
    iptables -t raw -N "$CHAIN"
    iptables -t raw -A "$CHAIN" -s 127.0.0.0/8 -d 127.0.0.0/8 -p tcp -j CT --notrack
    iptables -t raw -I PREROUTING -i lo -j "$CHAIN"
    iptables -t raw -I OUTPUT -o lo -j "$CHAIN"
    say "conntrack: loopback TCP exempted (raw $CHAIN, NOTRACK)"
  else
    raise "$state" net.netfilter.nf_conntrack_max "$want"
  fi
}

case ${1:-} in
  set) set_limits "$2" "$3" ;;
  restore) restore "$2" ;;
  *) echo "usage: $0 set STATE NEEDS | restore STATE" >&2; exit 2 ;;
esac
