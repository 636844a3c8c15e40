# shellcheck shell=bash
# Source me (bash): . infra/local-cluster/env.sh
# Exports what scripts need to use the local cluster started by `make cluster-up`:
#   KUBECONFIG        admin kubeconfig (.run/cluster/kubeconfig in this work tree)
#   WSPS_NODE_IP      the node address (pods reach the apiserver, DNS and the kubelet there;
#                     the host uses 127.0.0.1: apiserver, NodePorts, registry)
#   WSPS_INGRESS_URL  Traefik's NodePort on loopback: http://127.0.0.1:30080
#   WSPS_PROMETHEUS_URL  Prometheus' NodePort on loopback: http://127.0.0.1:30090
#   WSPS_IMAGE, K6_IMAGE, TRAEFIK_IMAGE, PAUSE_IMAGE, BASE_IMAGE  local image names
#   WSPS_CLUSTER_DOMAIN, WSPS_DNS_IP, WSPS_POD_CIDR, WSPS_SERVICE_CIDR
# and puts kubectl (the cluster's version) first on PATH.
_wsps_lc_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../tools/versions.env
. "$_wsps_lc_dir/../../tools/versions.env"
set -a
# shellcheck source=images.env
. "$_wsps_lc_dir/images.env"
set +a
# shellcheck source=cluster.env
. "$_wsps_lc_dir/cluster.env"
export WSPS_CACHE="${WSPS_CACHE:-$HOME/.cache/wsps}"
KUBECONFIG="$(cd "$_wsps_lc_dir/../.." && pwd)/.run/cluster/kubeconfig"
export KUBECONFIG
export WSPS_NODE_IP="${WSPS_NODE_IP:-$NODE_IP}"
export WSPS_NODE_NAME="$NODE_NAME"
export WSPS_INGRESS_URL="http://127.0.0.1:$TRAEFIK_NODEPORT"
export WSPS_PROMETHEUS_URL="http://127.0.0.1:$PROMETHEUS_NODEPORT"
export WSPS_CLUSTER_DOMAIN="$CLUSTER_DOMAIN" WSPS_DNS_IP="$DNS_SVC_IP"
export WSPS_POD_CIDR="$POD_CIDR" WSPS_SERVICE_CIDR="$SERVICE_CIDR"
case ":$PATH:" in
  *":$WSPS_CACHE/cluster/kubernetes-$K8S_VERSION/bin:"*) ;;
  *) export PATH="$WSPS_CACHE/cluster/kubernetes-$K8S_VERSION/bin:$PATH" ;;
esac
unset _wsps_lc_dir
