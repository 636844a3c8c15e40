#!/usr/bin/env bash
# make cluster-status: what runs, and how to reach it.
. "$(dirname "$0")/lib.sh"
n=0
for c in etcd kube-apiserver registry containerd kube-controller-manager kube-scheduler kubelet kube-proxy coredns kube-network-policies; do
  if pid_alive "$c"; then printf '  %-24s running  pid %s\n' "$c" "$(cat "$PID_DIR/$c.pid")"; n=$((n + 1))
  else printf '  %-24s stopped\n' "$c"; fi
done
if (( n == 0 )); then echo "cluster: not running (make cluster-up)"; exit 0; fi
export KUBECONFIG="$STATE_DIR/admin.kubeconfig"
"$K8S_BIN/kubectl" --request-timeout=5s get nodes -o wide || true
"$K8S_BIN/kubectl" --request-timeout=5s get pods -A -o wide || true
echo "KUBECONFIG=$KUBECONFIG_OUT   ingress: http://127.0.0.1:$TRAEFIK_NODEPORT/ (traefik), http://127.0.0.1:$NGINX_NODEPORT/ (nginx)  prometheus: http://127.0.0.1:$PROMETHEUS_NODEPORT/   logs: $LOG_DIR"
