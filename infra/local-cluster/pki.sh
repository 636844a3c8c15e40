# Certificates and kubeconfigs for the local cluster (openssl, ECDSA P-256;
# the service-account key is RSA). Sourced by up.sh; writes into $PKI_DIR and
# $STATE_DIR. A fresh CA per cluster-up: nothing outlives cluster-down.
# shellcheck shell=bash

_key() { openssl ecparam -name prime256v1 -genkey -noout -out "$PKI_DIR/$1.key" 2>/dev/null; chmod 600 "$PKI_DIR/$1.key"; }

# _cert NAME SUBJECT server|client|both [SANS]
_cert() {
  local name="$1" subj="$2" kind="$3" sans="${4:-}" ext
  _key "$name"
  ext="$(mktemp)"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    case "$kind" in
      server) echo "extendedKeyUsage=serverAuth" ;;
      client) echo "extendedKeyUsage=clientAuth" ;;
      both) echo "extendedKeyUsage=serverAuth,clientAuth" ;;
    esac
    [[ -z "$sans" ]] || echo "subjectAltName=$sans"
  } >"$ext"
  openssl req -new -key "$PKI_DIR/$name.key" -subj "$subj" -out "$PKI_DIR/$name.csr"
  openssl x509 -req -in "$PKI_DIR/$name.csr" -CA "$PKI_DIR/ca.crt" -CAkey "$PKI_DIR/ca.key" \
    -CAcreateserial -days 365 -sha256 -extfile "$ext" -out "$PKI_DIR/$name.crt" 2>/dev/null
  rm -f "$ext" "$PKI_DIR/$name.csr"
}

# _kubeconfig FILE USER CERTNAME: a self-contained kubeconfig (data inlined).
# Every kubeconfig is for a host process (kubectl, helm, the control plane,
# kubelet, kube-proxy, CoreDNS): host-side traffic goes to 127.0.0.1 only, so
# they name the apiserver's loopback address, never the node address.
_kubeconfig() {
  local file="$1" user="$2" cert="$3"
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: wsps-local
    cluster:
      server: https://127.0.0.1:$APISERVER_PORT
      certificate-authority-data: $(base64 -w0 "$PKI_DIR/ca.crt")
users:
  - name: $user
    user:
      client-certificate-data: $(base64 -w0 "$PKI_DIR/$cert.crt")
      client-key-data: $(base64 -w0 "$PKI_DIR/$cert.key")
contexts:
  - name: wsps-local
    context: { cluster: wsps-local, user: $user, namespace: default }
current-context: wsps-local
EOF
  chmod 600 "$file"
}

make_pki() {
  mkdir -p "$PKI_DIR"
  _key ca
  openssl req -x509 -new -key "$PKI_DIR/ca.key" -subj "/CN=wsps-local-cluster-ca" -days 3650 -sha256 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    -out "$PKI_DIR/ca.crt"
  _cert apiserver "/CN=kube-apiserver" server \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN,DNS:localhost,IP:$NODE_IP,IP:$KUBERNETES_SVC_IP,IP:127.0.0.1"
  _cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" client
  _cert admin "/O=system:masters/CN=wsps-admin" client
  _cert controller-manager "/CN=system:kube-controller-manager" client
  _cert scheduler "/CN=system:kube-scheduler" client
  _cert kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" client
  _cert kubelet "/CN=$NODE_NAME" server "DNS:$NODE_NAME,IP:$NODE_IP"
  _cert kube-proxy "/CN=system:kube-proxy" client
  _cert coredns "/CN=wsps:coredns" client
  _cert network-policies "/CN=wsps:kube-network-policies" client
  # The aggregation layer: the apiserver proxies external.metrics.k8s.io to
  # KEDA's metrics API server with this client certificate.
  _cert front-proxy-client "/CN=front-proxy-client" client
  # KEDA: the operator's gRPC metrics service and the metrics API server
  # (served to the apiserver), mutual TLS between the two: one certificate.
  local keda_sans="" svc
  for svc in keda-operator keda-metrics-apiserver; do
    keda_sans+="DNS:$svc,DNS:$svc.keda,DNS:$svc.keda.svc,DNS:$svc.keda.svc.$CLUSTER_DOMAIN,"
  done
  _cert keda "/CN=keda-operator.keda.svc" both "${keda_sans%,}"
  openssl genrsa -out "$PKI_DIR/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI_DIR/sa.key" -pubout -out "$PKI_DIR/sa.pub" 2>/dev/null
  chmod 600 "$PKI_DIR/sa.key"

  _kubeconfig "$STATE_DIR/admin.kubeconfig" wsps-admin admin
  _kubeconfig "$STATE_DIR/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
  _kubeconfig "$STATE_DIR/scheduler.kubeconfig" system:kube-scheduler scheduler
  _kubeconfig "$STATE_DIR/kubelet.kubeconfig" "system:node:$NODE_NAME" kubelet-client
  _kubeconfig "$STATE_DIR/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
  _kubeconfig "$STATE_DIR/coredns.kubeconfig" wsps:coredns coredns
  _kubeconfig "$STATE_DIR/network-policies.kubeconfig" wsps:kube-network-policies network-policies
}
