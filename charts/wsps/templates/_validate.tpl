{{/*
Cross-field checks values.schema.json cannot express. Every message names the
value to change. Called once from gateway-deployment.yaml, so it runs on every
render (helm install/upgrade/template/lint).
*/}}
{{- define "wsps.validateValues" -}}
{{- $m := list -}}
{{- $m = append $m (include "wsps.validate.redis" . | trim) -}}
{{- $m = append $m (include "wsps.validate.config" . | trim) -}}
{{- $m = append $m (include "wsps.validate.gateway" . | trim) -}}
{{- $m = append $m (include "wsps.validate.autoscaling" . | trim) -}}
{{- $m = append $m (include "wsps.validate.ingress" . | trim) -}}
{{- $m = append $m (include "wsps.validate.fetcher" . | trim) -}}
{{- $m = append $m (include "wsps.validate.loadtest" . | trim) -}}
{{- $m = without $m "" -}}
{{- if $m -}}
{{- printf "\n\nVALUES VALIDATION:\n%s" (join "\n\n" $m) | fail -}}
{{- end -}}
{{- end -}}

{{- define "wsps.validate.redis" -}}
{{- $r := .Values.redis -}}
{{- $x := $r.external -}}
{{- if eq $r.mode "external" -}}
{{- if $x.sentinels -}}
{{- if $x.url }}
wsps: redis.external.url
    redis.external.sentinels and redis.external.url are both set: with Sentinels
    the services ask them for the primary and never dial a URL. Remove
    redis.external.url (or the sentinels, to use the URL).
{{- end -}}
{{- if $x.cluster }}
wsps: redis.external.cluster
    redis.external.sentinels cannot be combined with redis.external.cluster:
    a Redis Cluster fails over by itself, Sentinels watch one primary.
{{- end -}}
{{- $bad := list -}}
{{- range $x.sentinels -}}
{{- if not (regexMatch "^[A-Za-z0-9_.-]+:[0-9]{1,5}$" (toString .)) -}}
{{- $bad = append $bad (toString . | quote) -}}
{{- end -}}
{{- end -}}
{{- if $bad }}
wsps: redis.external.sentinels
    Each Sentinel is host:port (e.g. redis-sentinel-0.redis:26379); not:
    {{ join ", " $bad }}.
{{- end -}}
{{- if not $x.masterName }}
wsps: redis.external.masterName
    redis.external.sentinels needs redis.external.masterName: the name your
    Sentinels monitor the primary under (`sentinel monitor <name> ...`).
{{- end -}}
{{- if and $x.sentinelAuth (not (include "wsps.redis.hasPassword" .)) }}
wsps: redis.external.sentinelAuth
    redis.external.sentinelAuth sends the Redis password to the Sentinels, but
    none is set: set redis.auth.existingSecret or redis.auth.password.
{{- end -}}
{{- else -}}
{{- if not (regexMatch "^rediss?://[^/:]+(:[0-9]+)?/?$" (toString $x.url)) }}
wsps: redis.external.url
    With redis.mode=external, set redis.external.url to redis://host:port or
    rediss://host:port (got {{ $x.url | quote }}), or redis.external.sentinels
    to your Sentinels. Put the password in redis.auth.existingSecret or
    redis.auth.password, not in the URL.
{{- end -}}
{{- if or $x.masterName $x.sentinelAuth }}
wsps: redis.external.masterName
    redis.external.masterName / redis.external.sentinelAuth are set but
    redis.external.sentinels is empty: list your Sentinels, or remove them.
{{- end -}}
{{- end -}}
{{- else if or $x.url $x.cluster $x.sentinels $x.masterName $x.sentinelAuth }}
wsps: redis.external.url
    redis.external.* (url, cluster, sentinels, masterName, sentinelAuth) is set
    but redis.mode is {{ $r.mode | quote }}: set redis.mode=external to use them,
    or remove them.
{{- end -}}
{{- if eq $r.mode "sentinel" -}}
{{- $s := $r.sentinel -}}
{{- if gt (int $s.quorum) (int $s.replicas) }}
wsps: redis.sentinel.quorum
    quorum ({{ $s.quorum }}) is above redis.sentinel.replicas ({{ $s.replicas }}): no
    failover could ever start. Use a majority, e.g. {{ add (div (int $s.replicas) 2) 1 }}.
{{- end -}}
{{- if eq (mod (int $s.replicas) 2) 0 }}
wsps: redis.sentinel.replicas
    {{ $s.replicas }} Sentinels: a failover needs a majority of them, so an even
    number survives no more losses than one fewer. Use an odd number (3, 5).
{{- end -}}
{{- end -}}
{{- if and $r.tls.enabled (eq $r.mode "external") }}
wsps: redis.tls.enabled
    redis.tls is TLS for the Redis the chart runs (redis.mode builtin or
    sentinel). For your own Redis use a rediss:// redis.external.url and
    redis.external.tlsCaSecret.
{{- end -}}
{{- if and $r.tls.existingSecret (not $r.tls.enabled) }}
wsps: redis.tls.existingSecret
    redis.tls.existingSecret is set but redis.tls.enabled is false: set
    redis.tls.enabled=true to use it, or remove it.
{{- end -}}
{{- end -}}

{{- define "wsps.validate.config" -}}
{{- $managed := splitList " " (include "wsps.managedSettings" .) -}}
{{- $credentials := splitList " " (include "wsps.streamCredentialSettings" .) -}}
{{- range $component := list "gateway" "fetcher" -}}
{{- range $k, $_ := (index $.Values $component).config -}}
{{- if not (hasPrefix "WSPS_" $k) }}
wsps: {{ $component }}.config.{{ $k }}
    {{ $component }}.config takes WSPS_* settings only (see docs/configuration.md);
    use {{ $component }}.extraEnv for other variables.
{{- else if has $k $credentials }}
wsps: {{ $component }}.config.{{ $k }}
    {{ $k }} gives a ws-stream vendor credential, and config is a ConfigMap:
    no place for credentials. Put them in a Secret, name it in
    fetcher.stream.existingSecret and its keys in fetcher.stream.secretKeys
    (key, secret, token): the chart mounts them read-only and sets
    WSPS_STREAM_KEY_FILE / WSPS_STREAM_SECRET_FILE / WSPS_STREAM_TOKEN_FILE.
{{- else if has $k $managed }}
wsps: {{ $component }}.config.{{ $k }}
    {{ $k }} is set by the chart from a dedicated value (see values.yaml:
    port, logLevel, redis.*, gateway.shutdown.*, gateway.auth.*, fetcher.provider, tracing.* ...).
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "wsps.validate.gateway" -}}
{{- $g := .Values.gateway -}}
{{- $s := $g.shutdown -}}
{{- $needed := add (int $s.preStopSleepSeconds) (div (add (int $s.delayMs) (int $s.drainMs) 999) 1000) -}}
{{- if and $s.terminationGracePeriodSeconds (lt (int $s.terminationGracePeriodSeconds) (int $needed)) }}
wsps: gateway.shutdown.terminationGracePeriodSeconds
    {{ $s.terminationGracePeriodSeconds }}s does not cover preStopSleepSeconds + delayMs + drainMs
    ({{ $needed }}s): the kubelet would SIGKILL the pod mid-drain and drop every
    remaining socket at once. Raise it, or set it to 0 to have it computed.
{{- end -}}
{{- if eq (int $g.metricsPort) (int $g.port) }}
wsps: gateway.metricsPort
    gateway.metricsPort ({{ $g.metricsPort }}) must differ from gateway.port: /metrics
    gets its own port so the Ingress/HTTPRoute (which reach only gateway.port)
    never expose it.
{{- end -}}
{{- if and $g.admin.enabled (not $g.admin.existingSecret) (lt (len $g.admin.token) 16) }}
wsps: gateway.admin.token
    gateway.admin.enabled needs gateway.admin.existingSecret or a
    gateway.admin.token of at least 16 bytes (the gateway refuses a shorter one).
{{- end -}}
{{- if eq $g.auth.mode "hs256" -}}
{{- if and (not $g.auth.existingSecret) (lt (len $g.auth.hs256Secret) 32) }}
wsps: gateway.auth.hs256Secret
    gateway.auth.mode=hs256 needs gateway.auth.existingSecret or a
    gateway.auth.hs256Secret of at least 32 bytes.
{{- end -}}
{{- else if eq $g.auth.mode "jwks" -}}
{{- if not (hasPrefix "http" $g.auth.jwksUrl) }}
wsps: gateway.auth.jwksUrl
    gateway.auth.mode=jwks needs gateway.auth.jwksUrl (an http(s) URL).
{{- end -}}
{{- end -}}
{{- if and .Values.networkPolicy.enabled (has $g.service.type (list "LoadBalancer" "NodePort")) (not $g.networkPolicy.externalClients) }}
wsps: gateway.networkPolicy.externalClients
    gateway.service.type={{ $g.service.type }} takes clients that are not pods, but
    the NetworkPolicy admits only gateway.networkPolicy.from: set
    gateway.networkPolicy.externalClients (e.g. ["0.0.0.0/0", "::/0"]), or
    networkPolicy.enabled=false.
{{- end -}}
{{- if and $g.ingress.enabled $g.httpRoute.enabled }}
wsps: gateway.ingress.enabled / gateway.httpRoute.enabled
    Both an Ingress and an HTTPRoute would expose the gateway: pick one.
{{- end -}}
{{- end -}}

{{- define "wsps.validate.autoscaling" -}}
{{- $a := .Values.gateway.autoscaling -}}
{{- if $a.enabled -}}
{{- if gt (int $a.minReplicas) (int $a.maxReplicas) }}
wsps: gateway.autoscaling.minReplicas
    minReplicas ({{ $a.minReplicas }}) is above maxReplicas ({{ $a.maxReplicas }}).
{{- end -}}
{{- if ge (int $a.targetConnectionsPerPod) (int .Values.gateway.maxConnections) }}
wsps: gateway.autoscaling.targetConnectionsPerPod
    The target ({{ $a.targetConnectionsPerPod }}) must stay below gateway.maxConnections
    ({{ .Values.gateway.maxConnections }}), or pods refuse sockets before the autoscaler reacts.
{{- end -}}
{{- if and (eq $a.mode "keda") (not $a.keda.prometheusServerAddress) }}
wsps: gateway.autoscaling.keda.prometheusServerAddress
    autoscaling.mode=keda queries Prometheus: set its URL.
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "wsps.validate.ingress" -}}
{{- $i := .Values.gateway.ingress -}}
{{- if $i.enabled -}}
{{- if not $i.className }}
wsps: gateway.ingress.className
    Set the IngressClass (e.g. nginx, traefik): without it the cluster default
    class (if any) picks the Ingress up, and the preset may not match it.
{{- end -}}
{{- if not $i.hosts }}
wsps: gateway.ingress.hosts
    gateway.ingress.enabled needs at least one host.
{{- end -}}
{{- if and (ne $i.preset "none") (lt (int $i.timeoutSeconds) (int (div (mul 2 (default 15000 (index .Values.gateway.config "WSPS_HEARTBEAT_MS"))) 1000))) }}
wsps: gateway.ingress.timeoutSeconds
    {{ $i.timeoutSeconds }}s is shorter than two gateway heartbeats: the ingress would
    cut sockets the gateway still considers alive.
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "wsps.validate.fetcher" -}}
{{- $f := .Values.fetcher -}}
{{- if and (eq $f.provider "http") (not (regexMatch "^https?://" (toString $f.upstreamUrl))) }}
wsps: fetcher.upstreamUrl
    fetcher.provider=http needs fetcher.upstreamUrl (an http(s) URL).
{{- end -}}
{{- if and $f.publish.enabled (not $f.publish.existingSecret) }}
wsps: fetcher.publish.existingSecret
    fetcher.publish.enabled needs fetcher.publish.existingSecret: a Secret
    with the publish token under fetcher.publish.existingSecretKey.
{{- end -}}
{{- if and (eq $f.provider "push") (not $f.publish.enabled) }}
wsps: fetcher.provider
    fetcher.provider=push takes quotes only through the publish API:
    set fetcher.publish.enabled=true.
{{- end -}}
{{- $keys := $f.stream.secretKeys -}}
{{- if and $f.stream.existingSecret (not (or $keys.key $keys.secret $keys.token)) }}
wsps: fetcher.stream.secretKeys
    fetcher.stream.existingSecret is set but names no key: set
    fetcher.stream.secretKeys.key, .secret and/or .token to the keys of the
    Secret that hold the vendor credentials.
{{- else if and (not $f.stream.existingSecret) (or $keys.key $keys.secret $keys.token) }}
wsps: fetcher.stream.existingSecret
    fetcher.stream.secretKeys names keys but fetcher.stream.existingSecret
    (the Secret holding them) is empty.
{{- end -}}
{{- if and (eq $f.provider "ws-stream") (not (regexMatch "^wss?://" (toString (index $f.config "WSPS_STREAM_URL")))) }}
wsps: fetcher.config.WSPS_STREAM_URL
    fetcher.provider=ws-stream needs fetcher.config.WSPS_STREAM_URL (a ws(s) URL).
{{- end -}}
{{- end -}}

{{- define "wsps.validate.loadtest" -}}
{{- $l := .Values.loadtest -}}
{{- if $l.enabled -}}
{{- if not (.Files.Glob "files/k6/**") }}
wsps: loadtest.enabled
    The chart carries no k6 scripts (files/k6 is empty): run
    `make chart-generate` in the repository to copy loadtest/ into the chart.
{{- else if not (.Files.Get (printf "files/k6/%s" $l.script)) }}
wsps: loadtest.script
    {{ $l.script | quote }} is not in the chart's script tree (files/k6/).
{{- end -}}
{{- if lt (int $l.target) (int $l.parallelism) }}
wsps: loadtest.target
    target ({{ $l.target }}) is below parallelism ({{ $l.parallelism }}): some k6 pods would hold no connection.
{{- end -}}
{{- end -}}
{{- end -}}
