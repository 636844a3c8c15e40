#!/usr/bin/env bash
# make cluster-smoke: checks a running local cluster end to end.
#  1. the node is Ready
#  2. a pod from the base image runs; cluster DNS resolves
#     kubernetes.default.svc.cluster.local (and a Service of our own) from it,
#     and answers NXDOMAIN for outside names (CoreDNS forwards nowhere)
#  3. a pod from the wsps image (base image if wsps:dev is not imported) serves
#     HTTP and a WebSocket echo behind an Ingress; Traefik proxies both via its
#     NodePort on the node address
#  4. the egress guard is in place (checked in iptables: no packet is sent out to test it)
# Prints one line per check; exits non-zero with details on the first failure.
. "$(dirname "$0")/lib.sh"

export KUBECONFIG="$STATE_DIR/admin.kubeconfig"
[[ -f "$KUBECONFIG" ]] || die "no cluster running (no $KUBECONFIG): make cluster-up"
K=("$K8S_BIN/kubectl" --request-timeout=20s)
NS=wsps-smoke
PASS=0 FAIL=0

ok()   { PASS=$((PASS + 1)); printf '[smoke] ok    %s\n' "$*" >&2; }
fail() {
  FAIL=$((FAIL + 1)); printf '[smoke] FAIL  %s\n' "$1" >&2
  shift
  if (( $# )); then "$@" 2>&1 | tail -n 40 | sed 's/^/    /' >&2 || true; fi
  finish
}
finish() {
  "${K[@]}" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  printf '%s passed, %s failed\n' "$PASS" "$FAIL"
  (( FAIL == 0 )) || exit 1
  exit 0
}

image_present() { [[ $'\n'"$(ctr --address "$CONTAINERD_SOCK" -n k8s.io images ls -q 2>/dev/null)"$'\n' == *$'\n'"$1"$'\n'* ]]; }

t0=$(date +%s)
[[ "$("${K[@]}" get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]] \
  && ok "node $NODE_NAME Ready ($("${K[@]}" get node "$NODE_NAME" -o jsonpath='{.status.nodeInfo.kubeletVersion}'))" \
  || fail "node $NODE_NAME not Ready" "${K[@]}" describe node "$NODE_NAME"

APP_IMAGE="$WSPS_IMAGE"
image_present "$APP_IMAGE" || APP_IMAGE="$BASE_IMAGE"

"${K[@]}" delete namespace "$NS" --wait=true --timeout=60s >/dev/null 2>&1 || true
"${K[@]}" apply -f - >/dev/null <<EOF || fail "apply smoke manifests"
apiVersion: v1
kind: Namespace
metadata: { name: $NS }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: echo, namespace: $NS }
data:
  echo.js: |
    // HTTP "ok" and a one-frame WebSocket echo, with node's core modules only.
    const http = require('node:http');
    const crypto = require('node:crypto');
    const server = http.createServer((req, res) => { res.end('wsps-smoke ok ' + req.url + '\n'); });
    server.on('upgrade', (req, socket) => {
      const accept = crypto.createHash('sha1')
        .update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Accept: ' + accept + '\r\n\r\n');
      socket.once('data', (buf) => {
        const len = buf[1] & 0x7f, mask = buf.subarray(2, 6), data = Buffer.from(buf.subarray(6, 6 + len));
        for (let i = 0; i < len; i++) data[i] ^= mask[i % 4];
        socket.end(Buffer.concat([Buffer.from([0x81, len]), data]));
      });
    });
    server.listen(8080, () => console.log('echo listening on 8080'));
---
apiVersion: v1
kind: Pod
metadata: { name: echo, namespace: $NS, labels: { app: echo } }
spec:
  securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 }
  containers:
    - name: echo
      image: $APP_IMAGE
      imagePullPolicy: Never
      command: [node, /smoke/echo.js]
      ports: [{ containerPort: 8080 }]
      readinessProbe: { httpGet: { path: /, port: 8080 }, periodSeconds: 1 }
      volumeMounts: [{ name: echo, mountPath: /smoke }]
      securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: [ALL] } }
  volumes: [{ name: echo, configMap: { name: echo } }]
---
apiVersion: v1
kind: Service
metadata: { name: echo, namespace: $NS }
spec:
  selector: { app: echo }
  ports: [{ port: 80, targetPort: 8080 }]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: echo, namespace: $NS }
spec:
  ingressClassName: traefik
  rules:
    - http:
        paths:
          - path: /wsps-smoke
            pathType: Prefix
            backend: { service: { name: echo, port: { number: 80 } } }
---
apiVersion: v1
kind: Pod
metadata: { name: dns, namespace: $NS }
spec:
  restartPolicy: Never
  containers:
    - name: dns
      image: $BASE_IMAGE
      imagePullPolicy: Never
      command:
        - bash
        - -c
        - |
          set -u
          cat /etc/resolv.conf
          getent hosts kubernetes.default.svc.$CLUSTER_DOMAIN || { echo "FAIL kubernetes.default"; exit 1; }
          getent hosts echo.$NS.svc.$CLUSTER_DOMAIN || { echo "FAIL echo service"; exit 1; }
          getent hosts kubernetes.default || { echo "FAIL search path"; exit 1; }
          if getent hosts registry.npmjs.org; then echo "FAIL outside name resolved"; exit 1; fi
          echo "outside name: not resolved (ok)"
          # the kubernetes Service answers TLS through kube-proxy
          node -e "require('tls').connect({host:'kubernetes.default.svc',port:443,rejectUnauthorized:false},function(){console.log('tls to kubernetes.default ok');this.end()}).on('error',e=>{console.log('FAIL tls',e.message);process.exit(1)})"
EOF
ok "smoke manifests applied (app image: $APP_IMAGE)"

"${K[@]}" -n "$NS" wait pod/echo --for=condition=Ready --timeout=90s >/dev/null 2>&1 \
  && ok "pod from $APP_IMAGE Ready" \
  || fail "pod echo not Ready" "${K[@]}" -n "$NS" describe pod echo

if "${K[@]}" -n "$NS" wait pod/dns --for=jsonpath='{.status.phase}'=Succeeded --timeout=90s >/dev/null 2>&1; then
  ok "DNS from a pod: kubernetes.default.svc.$CLUSTER_DOMAIN -> $("${K[@]}" -n "$NS" logs dns | awk '/kubernetes.default.svc/ {print $1; exit}'), outside names NXDOMAIN, TLS to the kubernetes Service"
else
  fail "DNS pod failed" bash -c "'${K[0]}' -n $NS logs dns; '${K[0]}' -n $NS describe pod dns | tail -20"
fi

url="http://127.0.0.1:$TRAEFIK_NODEPORT/wsps-smoke"
body=""
for _ in $(seq 1 40); do
  body="$(curl -s --max-time 2 "$url" || true)"
  [[ "$body" == "wsps-smoke ok"* ]] && break
  sleep 0.5
done
[[ "$body" == "wsps-smoke ok"* ]] && ok "Ingress via Traefik NodePort: GET $url" \
  || fail "GET $url gave: ${body:-nothing}" "${K[@]}" -n traefik logs deploy/traefik --tail=20

ws="$(node -e '
const http = require("node:http"), crypto = require("node:crypto");
const key = crypto.randomBytes(16).toString("base64");
const req = http.request(process.argv[1], { headers: { Connection: "Upgrade", Upgrade: "websocket",
  "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13" } });
const t = setTimeout(() => { console.log("timeout"); process.exit(1); }, 5000);
req.on("response", (r) => { console.log("no upgrade: HTTP " + r.statusCode); process.exit(1); });
req.on("upgrade", (res, socket) => {
  const msg = Buffer.from("ping-wsps"), mask = crypto.randomBytes(4), data = Buffer.from(msg);
  for (let i = 0; i < data.length; i++) data[i] ^= mask[i % 4];
  socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | data.length]), mask, data]));
  socket.once("data", (b) => { clearTimeout(t); console.log(b.subarray(2, 2 + (b[1] & 0x7f)).toString()); socket.destroy(); });
});
req.end();' "$url/ws" 2>&1 || true)"
[[ "$ws" == ping-wsps ]] && ok "WebSocket through Traefik (no annotations): echo ok" || fail "WebSocket through Traefik: $ws"

[[ "$(iptables -t mangle -S WSPS-EGRESS 2>/dev/null)" == *"-j DROP"* ]] && iptables -t mangle -C FORWARD -i "$CNI_BRIDGE" -j WSPS-EGRESS 2>/dev/null \
  && ok "egress guard: pods' traffic off the machine is dropped (mangle FORWARD -> WSPS-EGRESS)" \
  || fail "egress guard missing" iptables -t mangle -S

ok "smoke done in $(( $(date +%s) - t0 ))s"
finish
