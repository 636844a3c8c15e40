{{/* vim: set filetype=mustache: */}}

{{/* Chart name, truncated to 63 characters (DNS label). */}}
{{- define "wsps.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Full name: the release name, or <release>-<chart> when the release name does
not contain the chart name. Component names append "-gateway", "-redis", ...,
so it is truncated to leave room for them.
*/}}
{{- define "wsps.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "wsps.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels shared by every resource. */}}
{{- define "wsps.labels" -}}
helm.sh/chart: {{ include "wsps.chart" . }}
app.kubernetes.io/name: {{ include "wsps.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: wsps
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of a component: include "wsps.selectorLabels" (dict "ctx" $ "component" "gateway") */}}
{{- define "wsps.selectorLabels" -}}
app.kubernetes.io/name: {{ include "wsps.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* All labels of a component's resources. */}}
{{- define "wsps.componentLabels" -}}
{{ include "wsps.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Resource name of a component: <fullname>-<component>. */}}
{{- define "wsps.componentName" -}}
{{- printf "%s-%s" (include "wsps.fullname" .ctx) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "wsps.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "wsps.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* An image reference from {repository, tag, digest}; tag defaults to .default. */}}
{{- define "wsps.imageRef" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (toString (default .default .image.tag)) -}}
{{- end -}}
{{- end -}}

{{- define "wsps.image" -}}
{{- include "wsps.imageRef" (dict "image" .Values.image "default" .Chart.AppVersion) -}}
{{- end -}}

{{- define "wsps.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* ---------- Redis ---------- */}}

{{- define "wsps.redis.name" -}}
{{- include "wsps.componentName" (dict "ctx" . "component" "redis") -}}
{{- end -}}

{{/* Secret holding the Redis password (generated/given by the chart, or existing). */}}
{{- define "wsps.redis.secretName" -}}
{{- if .Values.redis.auth.existingSecret -}}
{{- .Values.redis.auth.existingSecret -}}
{{- else -}}
{{- printf "%s-auth" (include "wsps.redis.name" .) -}}
{{- end -}}
{{- end -}}

{{- define "wsps.redis.secretKey" -}}
{{- if .Values.redis.auth.existingSecret -}}
{{- .Values.redis.auth.existingSecretKey -}}
{{- else -}}
redis-password
{{- end -}}
{{- end -}}

{{/* True ("true") when the chart runs Redis itself: `builtin` (one pod) or `sentinel` (nodes + Sentinels). */}}
{{- define "wsps.redis.inRelease" -}}
{{- if has .Values.redis.mode (list "builtin" "sentinel") -}}
true
{{- end -}}
{{- end -}}

{{/* True ("true") when the services find the primary through Sentinels (built-in or external). */}}
{{- define "wsps.redis.viaSentinel" -}}
{{- if or (eq .Values.redis.mode "sentinel") (and (eq .Values.redis.mode "external") .Values.redis.external.sentinels) -}}
true
{{- end -}}
{{- end -}}

{{/* True ("true") when the services get a Redis password. */}}
{{- define "wsps.redis.hasPassword" -}}
{{- if or (include "wsps.redis.inRelease" .) .Values.redis.auth.existingSecret .Values.redis.auth.password -}}
true
{{- end -}}
{{- end -}}

{{/* The chart creates the password Secret unless an existing one is named. */}}
{{- define "wsps.redis.createSecret" -}}
{{- if and (not .Values.redis.auth.existingSecret) (or (include "wsps.redis.inRelease" .) .Values.redis.auth.password) -}}
true
{{- end -}}
{{- end -}}

{{/* ---------- TLS of the Redis in the release (redis.tls) ---------- */}}

{{/* True ("true") when the Redis in the release (builtin or sentinel) serves TLS only. */}}
{{- define "wsps.redisTls.enabled" -}}
{{- if and .Values.redis.tls.enabled (include "wsps.redis.inRelease" .) -}}
true
{{- end -}}
{{- end -}}

{{/* Secret with tls.crt, tls.key and ca.crt mounted by Redis (and ca.crt by the services). */}}
{{- define "wsps.redisTls.secretName" -}}
{{- .Values.redis.tls.existingSecret | default (printf "%s-tls" (include "wsps.redis.name" .)) -}}
{{- end -}}

{{/* Where the Redis containers find tls.crt, tls.key and ca.crt. */}}
{{- /* Not under /etc/redis: that is a ConfigMap volume, and a mount point cannot be made inside it. */ -}}
{{- define "wsps.redisTls.dir" -}}/etc/redis-tls{{- end -}}

{{/*
Every name the services and the Redis pods dial Redis and the Sentinels by,
each also namespace-qualified: the Services and every pod's stable name
(the Sentinels announce and hand out those). JSON list.
*/}}
{{- define "wsps.redisTls.dnsNames" -}}
{{- $names := list -}}
{{- $sets := list -}}
{{- if eq .Values.redis.mode "sentinel" -}}
{{- $node := include "wsps.redisNode.name" . -}}
{{- $sentinel := include "wsps.redisSentinel.name" . -}}
{{- $names = list (printf "%s-headless" $node) (printf "%s-headless" $sentinel) $sentinel -}}
{{- $sets = list (list $node .Values.redis.sentinel.nodes) (list $sentinel .Values.redis.sentinel.replicas) -}}
{{- else -}}
{{- $r := include "wsps.redis.name" . -}}
{{- $names = list $r (printf "%s-headless" $r) -}}
{{- $sets = list (list $r 1) -}}
{{- end -}}
{{- range $sets -}}
{{- $set := index . 0 -}}
{{- range $i := until (int (index . 1)) -}}
{{- $names = append $names (include "wsps.podHost" (dict "set" $set "i" $i)) -}}
{{- end -}}
{{- end -}}
{{- $out := list "localhost" -}}
{{- range $names -}}
{{- $out = concat $out (list . (printf "%s.%s" . $.Release.Namespace) (printf "%s.%s.svc" . $.Release.Namespace) (printf "%s.%s.svc.cluster.local" . $.Release.Namespace)) -}}
{{- end -}}
{{- $out | toJson -}}
{{- end -}}

{{/*
The chart-made CA and server certificate, computed once per render and kept
on the root context (the Secret's template is also included for the pods'
checksum annotations: every include must see the same certificate).
The CA is read back from its live Secret (`lookup`) and reused for ever; the
server certificate too, unless the names it must carry changed, it was not
signed by that CA, or it is in the last third of its validity: then a new
one is signed by the same CA, which the services keep trusting. (`helm
template` cannot look up and prints a fresh CA.)
*/}}
{{- define "wsps.redisTls.material" -}}
{{- if not (hasKey . "wspsRedisTls") -}}
{{- $t := .Values.redis.tls -}}
{{- $redis := include "wsps.redis.name" . -}}
{{- $names := include "wsps.redisTls.dnsNames" . | fromJsonArray -}}
{{- $namesSum := $names | toJson | sha256sum | trunc 16 -}}
{{- $ca := dict -}}
{{- $liveCa := lookup "v1" "Secret" .Release.Namespace (printf "%s-tls-ca" $redis) -}}
{{- if and $liveCa $liveCa.data (hasKey $liveCa.data "tls.crt") (hasKey $liveCa.data "tls.key") -}}
{{- $ca = buildCustomCert (index $liveCa.data "tls.crt") (index $liveCa.data "tls.key") -}}
{{- else -}}
{{- $ca = genCA (printf "%s Redis CA" (include "wsps.fullname" .)) (int $t.caDays) -}}
{{- end -}}
{{- $now := now | unixEpoch | int64 -}}
{{- $cert := dict -}}
{{- $renewAfter := 0 -}}
{{- $live := lookup "v1" "Secret" .Release.Namespace (printf "%s-tls" $redis) -}}
{{- $a := dict -}}
{{- if and $live $live.metadata -}}{{- $a = $live.metadata.annotations | default dict -}}{{- end -}}
{{- if and $live $live.data (hasKey $live.data "tls.crt") (eq (index $live.data "ca.crt" | default "") ($ca.Cert | b64enc)) (eq (index $a "wsps.io/tls-names" | default "") $namesSum) (lt $now (index $a "wsps.io/tls-renew-after" | default "0" | int64)) -}}
{{- $cert = dict "Cert" (index $live.data "tls.crt" | b64dec) "Key" (index $live.data "tls.key" | b64dec) -}}
{{- $renewAfter = index $a "wsps.io/tls-renew-after" | int64 -}}
{{- else -}}
{{- $cert = genSignedCert $redis (list "127.0.0.1") $names (int $t.certDays) $ca -}}
{{- $renewAfter = add $now (mul (div (mul (int $t.certDays) 2) 3) 86400) -}}
{{- end -}}
{{- $_ := set . "wspsRedisTls" (dict "caCert" $ca.Cert "caKey" $ca.Key "cert" $cert.Cert "key" $cert.Key "namesSum" $namesSum "renewAfter" (toString $renewAfter)) -}}
{{- end -}}
{{- end -}}

{{/*
redis.conf lines of a TLS-only Redis node or Sentinel on `port`: no plain
port; replication, and a Sentinel's connections to the nodes and the other
Sentinels, over TLS; no client certificate asked for (the password is).
include "wsps.redisTls.conf" (dict "ctx" . "port" 6379)
*/}}
{{- define "wsps.redisTls.conf" -}}
{{- $dir := include "wsps.redisTls.dir" .ctx -}}
port 0
tls-port {{ .port }}
tls-cert-file {{ $dir }}/tls.crt
tls-key-file {{ $dir }}/tls.key
tls-ca-cert-file {{ $dir }}/ca.crt
tls-auth-clients no
tls-replication yes
tls-protocols {{ .ctx.Values.redis.tls.protocols | quote }}
{{- end -}}

{{/* redis-cli's options to reach the Redis in the release ("" without TLS). */}}
{{- define "wsps.redisTls.cliArgs" -}}
{{- if include "wsps.redisTls.enabled" . -}}
--tls --cacert {{ include "wsps.redisTls.dir" . }}/ca.crt
{{- end -}}
{{- end -}}

{{/*
The readiness probe's command: PING answered (-e: a non-zero exit on an error
reply such as NOAUTH or LOADING, not only when the connection fails), over
TLS when redis.tls is on.
include "wsps.redis.pingCommand" (dict "ctx" . "port" 6379)
*/}}
{{- define "wsps.redis.pingCommand" -}}
{{- $args := list "redis-cli" -}}
{{- if include "wsps.redisTls.enabled" .ctx -}}
{{- $args = concat $args (list "--tls" "--cacert" (printf "%s/ca.crt" (include "wsps.redisTls.dir" .ctx))) -}}
{{- end -}}
{{- concat $args (list "-e" "-h" "127.0.0.1" "-p" (toString .port) "ping") | toJson -}}
{{- end -}}

{{/*
The startup and liveness probe's check: the port accepts connections
(tcpSocket); with redis.tls, a PING over TLS answered at all (an error reply
such as LOADING counts: no -e), since a bare TCP connect to a TLS port makes
Redis log a failed handshake at every probe.
include "wsps.redis.aliveCheck" (dict "ctx" . "port" 6379 "portName" "redis")
*/}}
{{- define "wsps.redis.aliveCheck" -}}
{{- if include "wsps.redisTls.enabled" .ctx -}}
exec:
  command: {{ list "redis-cli" "--tls" "--cacert" (printf "%s/ca.crt" (include "wsps.redisTls.dir" .ctx)) "-h" "127.0.0.1" "-p" (toString .port) "ping" | toJson }}
{{- else -}}
tcpSocket:
  port: {{ .portName }}
{{- end -}}
{{- end -}}

{{/* Volume of a Redis pod with its certificate, key and CA. */}}
{{- define "wsps.redisTls.volume" -}}
{{- if include "wsps.redisTls.enabled" . }}
- name: tls
  secret:
    secretName: {{ include "wsps.redisTls.secretName" . }}
    defaultMode: 0440
    items:
      - {key: tls.crt, path: tls.crt}
      - {key: tls.key, path: tls.key}
      - {key: ca.crt, path: ca.crt}
{{- end }}
{{- end -}}

{{- define "wsps.redisTls.mount" -}}
{{- if include "wsps.redisTls.enabled" . }}
- name: tls
  mountPath: {{ include "wsps.redisTls.dir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* ---------- Redis with Sentinel (redis.mode=sentinel) ---------- */}}

{{/* The Redis pods: <fullname>-redis-node-0..N-1. */}}
{{- define "wsps.redisNode.name" -}}
{{- include "wsps.componentName" (dict "ctx" . "component" "redis-node") -}}
{{- end -}}

{{/* The Sentinel pods: <fullname>-redis-sentinel-0..N-1. */}}
{{- define "wsps.redisSentinel.name" -}}
{{- include "wsps.componentName" (dict "ctx" . "component" "redis-sentinel") -}}
{{- end -}}

{{/*
Stable DNS name of one pod of a set through its headless Service, short
(namespace-relative) like every address the chart renders:
include "wsps.podHost" (dict "set" "wsps-redis-node" "i" 0)
*/}}
{{- define "wsps.podHost" -}}
{{- printf "%s-%d.%s-headless" .set (int .i) .set -}}
{{- end -}}

{{/* `host:port,...` of every built-in Sentinel (WSPS_REDIS_SENTINELS). */}}
{{- define "wsps.redisSentinel.addresses" -}}
{{- $set := include "wsps.redisSentinel.name" . -}}
{{- $out := list -}}
{{- range $i := until (int .Values.redis.sentinel.replicas) -}}
{{- $out = append $out (printf "%s:26379" (include "wsps.podHost" (dict "set" $set "i" $i))) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/* Preferred pod anti-affinity of a set (one pod per node when the scheduler can), unless redis.builtin.affinity is set. */}}
{{- define "wsps.redisSentinel.affinity" -}}
{{- with .ctx.Values.redis.builtin.affinity -}}
{{- toYaml . -}}
{{- else -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "wsps.selectorLabels" (dict "ctx" .ctx "component" .component) | nindent 12 }}
{{- end -}}
{{- end -}}

{{/*
Redis URL the services use. The built-in Redis is addressed by its short
Service name, so the rendered manifests do not depend on the namespace
(kustomize overlays may move them).
*/}}
{{- define "wsps.redis.url" -}}
{{- $scheme := ternary "rediss" "redis" (eq (include "wsps.redisTls.enabled" .) "true") -}}
{{- if include "wsps.redis.viaSentinel" . -}}
{{- /* The Sentinels name the primary; of the URL only the scheme counts. */ -}}
{{ $scheme }}://
{{- else if eq .Values.redis.mode "external" -}}
{{- .Values.redis.external.url -}}
{{- else -}}
{{- printf "%s://%s:6379" $scheme (include "wsps.redis.name" .) -}}
{{- end -}}
{{- end -}}

{{/* Port of the external Redis URL (default 6379). */}}
{{- define "wsps.redis.externalPort" -}}
{{- $u := urlParse .Values.redis.external.url -}}
{{- $hostport := splitList ":" $u.host -}}
{{- if gt (len $hostport) 1 -}}{{ last $hostport }}{{- else -}}6379{{- end -}}
{{- end -}}

{{/* Secret whose ca.crt the services verify Redis against: the release's Redis TLS Secret, or redis.external.tlsCaSecret. */}}
{{- define "wsps.redis.caSecret" -}}
{{- if include "wsps.redisTls.enabled" . -}}
{{- include "wsps.redisTls.secretName" . -}}
{{- else if eq .Values.redis.mode "external" -}}
{{- .Values.redis.external.tlsCaSecret -}}
{{- end -}}
{{- end -}}

{{/* Volume + mount + env for the Redis password file (wsps containers). */}}
{{- define "wsps.redis.passwordVolume" -}}
{{- if include "wsps.redis.hasPassword" . }}
- name: redis-auth
  secret:
    secretName: {{ include "wsps.redis.secretName" . }}
    defaultMode: 0440
    items:
      - key: {{ include "wsps.redis.secretKey" . }}
        path: redis-password
{{- end }}
{{- if include "wsps.redis.caSecret" . }}
- name: redis-tls-ca
  secret:
    secretName: {{ include "wsps.redis.caSecret" . }}
    defaultMode: 0444
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- end -}}

{{- define "wsps.redis.passwordMount" -}}
{{- if include "wsps.redis.hasPassword" . }}
- name: redis-auth
  mountPath: /var/run/secrets/wsps/redis
  readOnly: true
{{- end }}
{{- if include "wsps.redis.caSecret" . }}
- name: redis-tls-ca
  mountPath: /var/run/secrets/wsps/redis-ca
  readOnly: true
{{- end }}
{{- end -}}

{{/* Settings every wsps service gets from the chart (ConfigMap data). */}}
{{- define "wsps.commonConfig" -}}
WSPS_LOG_LEVEL: {{ .Values.logLevel | quote }}
WSPS_REDIS_URL: {{ include "wsps.redis.url" . | quote }}
WSPS_REDIS_KEY_PREFIX: {{ .Values.redis.keyPrefix | quote }}
{{- if include "wsps.redis.viaSentinel" . }}
WSPS_REDIS_MODE: "sentinel"
{{- if eq .Values.redis.mode "sentinel" }}
WSPS_REDIS_SENTINELS: {{ include "wsps.redisSentinel.addresses" . | quote }}
WSPS_REDIS_MASTER_NAME: {{ .Values.redis.sentinel.masterName | quote }}
WSPS_REDIS_SENTINEL_PASSWORD_FILE: "/var/run/secrets/wsps/redis/redis-password"
{{- else }}
WSPS_REDIS_SENTINELS: {{ join "," .Values.redis.external.sentinels | quote }}
WSPS_REDIS_MASTER_NAME: {{ .Values.redis.external.masterName | quote }}
{{- if .Values.redis.external.sentinelAuth }}
WSPS_REDIS_SENTINEL_PASSWORD_FILE: "/var/run/secrets/wsps/redis/redis-password"
{{- end }}
{{- end }}
{{- else }}
WSPS_REDIS_MODE: {{ ternary "cluster" "standalone" (and (eq .Values.redis.mode "external") .Values.redis.external.cluster) | quote }}
{{- end }}
{{- with .Values.redis.auth.username }}
WSPS_REDIS_USERNAME: {{ . | quote }}
{{- end }}
{{- if include "wsps.redis.hasPassword" . }}
WSPS_REDIS_PASSWORD_FILE: "/var/run/secrets/wsps/redis/redis-password"
{{- end }}
{{- if include "wsps.redis.caSecret" . }}
WSPS_REDIS_TLS_CA_FILE: "/var/run/secrets/wsps/redis-ca/ca.crt"
{{- end }}
{{- with .Values.tracing.otlpTracesUrl }}
WSPS_OTLP_TRACES_URL: {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
Settings the chart owns; `config:` may not set them (validated), because the
chart wires them to Secrets, ports, probes and the shutdown timing.
*/}}
{{- define "wsps.managedSettings" -}}
WSPS_HOST WSPS_HTTP_PORT WSPS_METRICS_PORT WSPS_NODE_NAME WSPS_LOG_LEVEL WSPS_REDIS_URL WSPS_REDIS_PASSWORD WSPS_REDIS_PASSWORD_FILE WSPS_REDIS_TLS_CA_FILE WSPS_REDIS_KEY_PREFIX WSPS_REDIS_MODE WSPS_REDIS_SENTINELS WSPS_REDIS_MASTER_NAME WSPS_REDIS_SENTINEL_PASSWORD WSPS_REDIS_SENTINEL_PASSWORD_FILE WSPS_REDIS_USERNAME WSPS_DRAIN_MS WSPS_SHUTDOWN_DELAY_MS WSPS_MAX_CONNECTIONS WSPS_ALLOWED_ORIGINS WSPS_TRUST_PROXY WSPS_WORKERS WSPS_AUTH_MODE WSPS_AUTH_HS256_SECRET WSPS_AUTH_HS256_SECRET_FILE WSPS_AUTH_JWKS_URL WSPS_AUTH_ISSUER WSPS_AUTH_AUDIENCE WSPS_PROVIDER WSPS_UPSTREAM_URL WSPS_UPSTREAM_TOKEN WSPS_UPSTREAM_TOKEN_FILE WSPS_PUBLISH_TOKEN WSPS_PUBLISH_TOKEN_FILE WSPS_PUBLISH_RATE WSPS_PUBLISH_MAX_BYTES WSPS_OTLP_TRACES_URL WSPS_TRACE_SAMPLE {{ include "wsps.streamCredentialSettings" . }}
{{- end -}}

{{/* The ws-stream vendor credentials: only from fetcher.stream.existingSecret, as files. */}}
{{- define "wsps.streamCredentialSettings" -}}
WSPS_STREAM_KEY WSPS_STREAM_KEY_FILE WSPS_STREAM_SECRET WSPS_STREAM_SECRET_FILE WSPS_STREAM_TOKEN WSPS_STREAM_TOKEN_FILE
{{- end -}}

{{/* Env shared by the wsps containers: the pod name as node name. */}}
{{- define "wsps.nodeNameEnv" -}}
- name: WSPS_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end -}}

{{/*
How the other gateways reach this pod (WSPS_PEER_URL): a gateway cut off
from Redis asks its peers, at the URLs they announced there, whether they
still reach it (services/gateway/src/isolation.js). The pod's IP comes from
the downward API as POD_IP (not WSPS_*: the services refuse unknown WSPS_*
names) and Kubernetes expands $(POD_IP) in the entry after it; an IPv6
address needs brackets (gateway.podIPFamily). The chart's WSPS_PEER_URL is
left out when gateway.config or gateway.extraEnv sets one: an `env` entry
would override the ConfigMap's (envFrom), and a second one in `env` would
hide the first. POD_IP stays, for an extraEnv value built from it.
*/}}
{{- define "wsps.gateway.peerUrlEnv" -}}
{{- $g := .Values.gateway -}}
{{- $own := hasKey $g.config "WSPS_PEER_URL" -}}
{{- range $g.extraEnv }}{{ if eq (toString .name) "WSPS_PEER_URL" }}{{ $own = true }}{{ end }}{{ end -}}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- if not $own }}
- name: WSPS_PEER_URL
  value: {{ printf (ternary "http://[$(POD_IP)]:%v" "http://$(POD_IP):%v" (eq $g.podIPFamily "IPv6")) $g.port | quote }}
{{- end }}
{{- end -}}

{{/*
Spread constraints with the component's selector filled in when omitted.
include "wsps.topologySpread" (dict "ctx" $ "component" "gateway" "constraints" .Values.gateway.topologySpreadConstraints)
*/}}
{{- define "wsps.topologySpread" -}}
{{- $ctx := .ctx -}}
{{- $component := .component -}}
{{- range .constraints }}
{{- $c := deepCopy . }}
{{- if not $c.labelSelector }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "wsps.selectorLabels" (dict "ctx" $ctx "component" $component) | fromYaml)) }}
{{- end }}
- {{ toYaml $c | nindent 2 | trim }}
{{- end }}
{{- end -}}

{{/* Gateway terminationGracePeriodSeconds: preStop + delay + drain + margin, unless set. */}}
{{- define "wsps.gateway.gracePeriod" -}}
{{- $s := .Values.gateway.shutdown -}}
{{- if $s.terminationGracePeriodSeconds -}}
{{- $s.terminationGracePeriodSeconds -}}
{{- else -}}
{{- add (int $s.preStopSleepSeconds) (div (add (int $s.delayMs) (int $s.drainMs) 999) 1000) (int $s.graceMarginSeconds) -}}
{{- end -}}
{{- end -}}

{{/* The gateway's in-cluster WebSocket URL. */}}
{{- define "wsps.gateway.wsUrl" -}}
{{- printf "ws://%s:%v/ws" (include "wsps.componentName" (dict "ctx" . "component" "gateway")) .Values.gateway.service.port -}}
{{- end -}}

{{/* Label that lets a pod through the gateway NetworkPolicy. */}}
{{- define "wsps.gatewayClientLabel" -}}
wsps.io/gateway-client: "true"
{{- end -}}

{{/*
The k6 script tree shipped in files/k6 (symlinks to loadtest/ and the files
it imports, made by `make chart-generate`; helm reads their targets). ConfigMap keys cannot hold
"/", so each path is flattened with "__" and the volume's items put the tree
back together under /scripts.
*/}}
{{- define "wsps.loadtest.items" -}}
{{- range $path, $_ := .Files.Glob "files/k6/**" }}
- key: {{ trimPrefix "files/k6/" $path | replace "/" "__" }}
  path: {{ trimPrefix "files/k6/" $path }}
{{- end }}
{{- end -}}

{{/* Egress every wsps pod needs: DNS, and Redis (built-in pods, or the external address). */}}
{{- define "wsps.networkPolicy.dnsAndRedisEgress" -}}
# DNS
- to:
    {{- toYaml .Values.networkPolicy.dnsTo | nindent 4 }}
  ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- if eq .Values.redis.mode "builtin" }}
# The built-in Redis
- to:
    - podSelector:
        matchLabels:
          {{- include "wsps.selectorLabels" (dict "ctx" . "component" "redis") | nindent 10 }}
  ports:
    - port: 6379
      protocol: TCP
{{- else if eq .Values.redis.mode "sentinel" }}
# The built-in Redis nodes (the primary, whichever it is now)
- to:
    - podSelector:
        matchLabels:
          {{- include "wsps.selectorLabels" (dict "ctx" . "component" "redis-node") | nindent 10 }}
  ports:
    - port: 6379
      protocol: TCP
# The built-in Sentinels (who the primary is)
- to:
    - podSelector:
        matchLabels:
          {{- include "wsps.selectorLabels" (dict "ctx" . "component" "redis-sentinel") | nindent 10 }}
  ports:
    - port: 26379
      protocol: TCP
{{- else if .Values.redis.external.sentinels }}
# The external Sentinels, and the Redis nodes they name (assumed on 6379)
- {{- with .Values.redis.external.egressTo }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    {{- $ports := list 6379 }}
    {{- range .Values.redis.external.sentinels }}
    {{- $ports = append $ports (int (last (splitList ":" .))) }}
    {{- end }}
    {{- range $ports | uniq }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
{{- else }}
# The external Redis
- {{- with .Values.redis.external.egressTo }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - port: {{ include "wsps.redis.externalPort" . }}
      protocol: TCP
{{- end }}
{{- end -}}

{{/*
Egress of the gateway and the fetcher to the OpenTelemetry Collector, with
tracing.otlpTracesUrl set: its port (the URL's, else the scheme's) to
tracing.egressTo, or to any address when that is empty (the chart cannot
know where your collector runs; a Service name in the URL resolves to pod
IPs the policy would have to name).
*/}}
{{- define "wsps.networkPolicy.tracingEgress" -}}
{{- with .Values.tracing.otlpTracesUrl }}
{{- $u := urlParse . -}}
{{- $hostport := splitList ":" $u.host }}
# The OpenTelemetry Collector (tracing.otlpTracesUrl)
- ports:
    - port: {{ if gt (len $hostport) 1 }}{{ last $hostport }}{{ else }}{{ ternary 443 80 (eq $u.scheme "https") }}{{ end }}
      protocol: TCP
  {{- with $.Values.tracing.egressTo }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* Name of the k6 Job / TestRun (runId makes a new run). */}}
{{- define "wsps.loadtest.name" -}}
{{- $n := include "wsps.componentName" (dict "ctx" . "component" "loadtest") -}}
{{- if .Values.loadtest.runId -}}
{{- printf "%s-%s" $n (toString .Values.loadtest.runId) | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $n | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Environment of the k6 script (its parameters). include "wsps.loadtest.env" (dict "ctx" $ "split" true)
split: each pod gets target/parallelism (independent Job pods); without it the
total (the k6-operator splits the VUs across runners by execution segment).
*/}}
{{- define "wsps.loadtest.env" -}}
{{- $l := .ctx.Values.loadtest -}}
- name: TARGET
  {{- if .split }}
  value: {{ div (add (int $l.target) (int $l.parallelism) -1) (int $l.parallelism) | quote }}
  {{- else }}
  value: {{ $l.target | quote }}
  {{- end }}
- name: WS_URL
  value: {{ default (include "wsps.gateway.wsUrl" .ctx) $l.url | quote }}
- name: RAMP
  value: {{ $l.ramp | quote }}
- name: HOLD
  value: {{ $l.hold | quote }}
{{- with $l.symbols }}
- name: SYMBOLS
  value: {{ . | quote }}
{{- end }}
- name: SUBS
  value: {{ $l.subs | quote }}
- name: CONNS_PER_VU
  value: {{ $l.connsPerVu | quote }}
- name: SCENARIO
  value: {{ $l.scenario | quote }}
- name: MODE
  value: {{ $l.mode | quote }}
{{- if $l.reconnect }}
- name: RECONNECT
  value: "1"
{{- end }}
# The pod's filesystem is read-only but /tmp; the summary also goes to the log.
- name: SUMMARY_DIR
  value: /tmp
- name: SUMMARY_JSON_LINE
  value: "1"
- name: K6_NO_USAGE_REPORT
  value: "true"
{{- with $l.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
A setting of gateway.config / fetcher.config as its environment variable's
string. YAML numbers reach templates as float64, which toString prints as
9e+06 from a million on: the services refuse that as a whole number, so
whole numbers are printed as integers.
*/}}
{{- define "wsps.settingValue" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) -}}
{{- int64 . | toString -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}
