#!/usr/bin/env bash
# patch.sh DIR: the two changes build-bins.sh makes to a copy of
# sigs.k8s.io/kube-network-policies (DIR) before building it; fails if
# upstream's code no longer reads as expected.
#  1. nft `queue` -> the xtables NFQUEUE target (queue-xt.go says why).
#  2. With NRI off, a packet whose address is no known pod's made the
#     controller call a method on its nil NRI plugin and crash (v0.8.0,
#     controller.go getPodAssignedToIP -> nri.go GetPodFromIP): the method
#     now answers "no pod" on a nil plugin.
set -euo pipefail
dir="$1"
here="$(cd "$(dirname "$0")" && pwd)"
pkg="$dir/pkg/networkpolicy"
cp "$here/queue-xt.go" "$pkg/"
perl -0pi -e 's/queue := &expr\.Queue\{Num: uint16\(c\.config\.QueueID\)\}\n\tif c\.config\.FailOpen \{\n\t\tqueue\.Flag = expr\.QueueFlagBypass\n\t\}/queue := queueExpr(c.config.QueueID, c.config.FailOpen)/g' "$pkg/controller.go"
n="$(grep -c 'queue := queueExpr(c.config.QueueID' "$pkg/controller.go" || true)"
[[ "$n" == 2 ]] || { echo "patch.sh: expected 2 nft queue expressions in controller.go, patched $n" >&2; exit 1; }
# (dnsagent.go has one more, used only with AdminNetworkPolicies: off here.)
if grep -n 'expr\.Queue{' "$pkg/controller.go"; then echo "patch.sh: an nft queue expression is left in controller.go" >&2; exit 1; fi
perl -0pi -e 's/(func \(p \*nriPlugin\) GetPodFromIP\(ip string\) string \{\n)/$1\tif p == nil { \/\/ NRI disabled: no pod known by that address\n\t\treturn ""\n\t}\n/' "$pkg/nri.go"
grep -q 'if p == nil { // NRI disabled' "$pkg/nri.go" || { echo "patch.sh: nri.go GetPodFromIP not found" >&2; exit 1; }
gofmt -l "$pkg" | grep . && { echo "patch.sh: the patched package is not gofmt-clean" >&2; exit 1; } || true
