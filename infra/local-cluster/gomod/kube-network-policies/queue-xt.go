package networkpolicy

// Copied into sigs.k8s.io/kube-network-policies/pkg/networkpolicy by
// infra/local-cluster/build-bins.sh, which replaces the controller's two
// `&expr.Queue{...}` with queueExpr. nft's queue expression needs the
// kernel's nft_queue (CONFIG_NFT_QUEUE), which this VM's kernel lacks; the
// xtables NFQUEUE target through nft_compat (CONFIG_NFT_COMPAT,
// CONFIG_NETFILTER_XT_TARGET_NFQUEUE) hands the packet to the same queue.

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// queueExpr: `-j NFQUEUE --queue-num num [--queue-bypass]` as an nft
// expression (struct xt_NFQ_info_v3 {u16 queuenum, queues_total, flags},
// host byte order; NFQ_FLAG_BYPASS = 1 accepts packets while nobody listens).
func queueExpr(num int, failOpen bool) expr.Any {
	info := make(xt.Unknown, 6)
	binary.NativeEndian.PutUint16(info[0:], uint16(num))
	binary.NativeEndian.PutUint16(info[2:], 1)
	if failOpen {
		binary.NativeEndian.PutUint16(info[4:], 1)
	}
	return &expr.Target{Name: "NFQUEUE", Rev: 3, Info: &info}
}
