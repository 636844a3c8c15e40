#!/usr/bin/env bash
# Builds the cluster's binaries from the Go module proxy into
# $WSPS_CACHE/cluster/<name>-<version>/bin, skipping what is already there.
#   build-bins.sh            everything the cluster needs (k8s, etcd, coredns, traefik, pause, prometheus, keda, nginx-ingress, network-policies)
#   build-bins.sh k6         the k6 binary too (make images)
#   build-bins.sh NAME...    only those (kubernetes etcd coredns traefik pause k6 prometheus keda nginx-ingress network-policies)
. "$(dirname "$0")/lib.sh"

# A k8s build peaks at ~2 GB and 2 cores: be nice to everything else.
export GOFLAGS="${GOFLAGS:-} -mod=mod -p=2 -trimpath"
export CGO_ENABLED=0
NICE=(nice -n 10)
BUILD_LOGS="$CACHE_DIR/build-logs"

# expect_version WANT CMD...: CMD's output names WANT (no `| grep -q`: with
# pipefail, grep's early exit kills CMD with SIGPIPE and fails the step).
expect_version() {
  local want="$1" out; shift
  out="$("$@" 2>&1)"
  echo "$out"
  [[ "$out" == *"$want"* ]] || { echo "expected version $want from $*"; return 1; }
}

# long_step LABEL LOGFILE CMD...: step, plus a line every 60 s while it runs
# (packages compiled so far: the long builds run `go build -v`).
long_step() {
  local label="$1" logf="$2" t0=$SECONDS ticker; shift 2
  mkdir -p "$(dirname "$logf")"; : >"$logf"
  ( while sleep 60; do
      printf '\n[cluster]   ... %s: %d min, %d packages built' "$label" $(( (SECONDS - t0) / 60 )) \
        "$(grep -cv '^go: ' "$logf" 2>/dev/null || echo 0)" >&2
    done ) &
  ticker=$!
  local rc=0
  ( step "$label" "$logf" "$@" ) || rc=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return "$rc"
}

# build RUNNER LABEL NAME FN DEST [LOG]: FN run by RUNNER (step or long_step)
# in $work/src of a fresh build folder $work, .build-NAME.* (main clears the
# ones a killed build left), its output in $BUILD_LOGS/LOG.log (default:
# NAME.log); then $work/out moved into its versioned folder DEST at once, and
# $work removed. FN sees $work (it is this function's local).
build() {
  local runner="$1" label="$2" name="$3" fn="$4" dest="$5" log="${6:-$3}" work
  work="$(mktemp -d "$CACHE_DIR/.build-$name.XXXXXX")"
  mkdir -p "$work/src"
  "$runner" "$label" "$BUILD_LOGS/$log.log" in_dir "$work/src" "$fn"
  rm -rf "$dest"; mkdir -p "$(dirname "$dest")"; mv "$work/out" "$dest"
  rm -rf "$work"
}

# in_dir DIR CMD...: CMD run in DIR.
in_dir() { cd "$1"; "${@:2}"; }

# wrapper_gomod NAME GO MODULE VERSION [replaces]: ./go.mod of a module
# wsps.local/cluster/NAME that requires MODULE at VERSION; with `replaces`,
# plus the replace and exclude lines of MODULE's own go.mod (they apply only
# to the main module, so a wrapper copies them).
wrapper_gomod() {
  local name="$1" go="$2" module="$3" version="$4" upstream=""
  if [[ "${5:-}" == replaces ]]; then
    upstream="$(go mod download -json "$module@$version" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')"
    [[ -f "$upstream" ]] || { echo "no go.mod for $name $version"; return 1; }
  fi
  {
    printf 'module wsps.local/cluster/%s\n\ngo %s\n\nrequire %s %s\n' "$name" "$go" "$module" "$version"
    if [[ -n "$upstream" ]]; then
      echo
      awk '/^replace \(/{p=1} p{print} p&&/^\)/{p=0} /^replace [^(]/{print} /^exclude /{print}' "$upstream"
    fi
  } >go.mod
}

build_kubernetes() {
  local bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl wsps-cri)
  local have=1 b
  for b in "${bins[@]}"; do [[ -x "$K8S_BIN/$b" ]] || have=0; done
  if (( have )); then skip "kubernetes $K8S_VERSION" "cached"; return; fi
  grep -q "k8s.io/kubernetes $K8S_VERSION\$" "$LC_DIR/gomod/kubernetes/go.mod" || \
    die "gomod/kubernetes/go.mod does not require k8s.io/kubernetes $K8S_VERSION: regenerate it (README: Upgrading)"
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local date; date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  local ld="-s -w"
  local pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  _k8s() {
    cp -r "$LC_DIR/gomod/kubernetes/." .
    "${NICE[@]}" go build -ldflags "$ld" -o "$work/out/bin/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
      k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl ./cmd/wsps-cri
    expect_version "$K8S_VERSION" "$work/out/bin/kubectl" version --client
  }
  build step "build kubernetes $K8S_VERSION (4-8 min)" kubernetes _k8s "$CACHE_DIR/kubernetes-$K8S_VERSION"
}

# A wrapper module: etcd's server module replaces its sibling modules with
# local paths, so `go install` refuses it; requiring it from another module works.
build_etcd() {
  if [[ -x "$ETCD_BIN/etcd" ]]; then skip "etcd $ETCD_VERSION" "cached"; return; fi
  _etcd() {
    wrapper_gomod etcd 1.24 go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
    "${NICE[@]}" go build -ldflags "-s -w" -o "$work/out/bin/etcd" go.etcd.io/etcd/server/v3
    expect_version "${ETCD_VERSION#v}" "$work/out/bin/etcd" --version
  }
  build step "build etcd $ETCD_VERSION" etcd _etcd "$CACHE_DIR/etcd-$ETCD_VERSION"
}

# CoreDNS with only the plugins our Corefile uses (gomod/coredns): the stock
# build links every plugin, cloud SDKs included (~10 min cold on 2 cores).
build_coredns() {
  if [[ -x "$COREDNS_BIN/coredns" ]]; then skip "coredns $COREDNS_VERSION (slim)" "cached"; return; fi
  _coredns() {
    cp -r "$LC_DIR/gomod/coredns/." .
    go mod edit -require="github.com/coredns/coredns@$COREDNS_VERSION"
    "${NICE[@]}" go build -ldflags "-s -w" -o "$work/out/bin/coredns" .
    expect_version "${COREDNS_VERSION#v}" "$work/out/bin/coredns" -version
  }
  build step "build coredns $COREDNS_VERSION (slim)" coredns _coredns "$CACHE_DIR/coredns-$COREDNS_VERSION-slim"
}

# Traefik's go.mod has replace and exclude lines: the wrapper copies them.
build_traefik() {
  if [[ -x "$TRAEFIK_BIN/traefik" ]]; then skip "traefik $TRAEFIK_VERSION" "cached"; return; fi
  _traefik() {
    wrapper_gomod traefik 1.24 github.com/traefik/traefik/v3 "$TRAEFIK_VERSION" replaces
    "${NICE[@]}" go build -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION -X github.com/traefik/traefik/v3/pkg/version.Codename=wsps" \
      -o "$work/out/bin/traefik" github.com/traefik/traefik/v3/cmd/traefik
    expect_version "$TRAEFIK_VERSION" "$work/out/bin/traefik" version
  }
  build step "build traefik $TRAEFIK_VERSION (2-4 min)" traefik _traefik "$CACHE_DIR/traefik-$TRAEFIK_VERSION"
}

# The one k6 of the repository (tools/tools.sh), also what `make loadtest` runs.
build_k6() {
  if [[ -x "$K6_BIN/k6" ]]; then skip "k6 $K6_VERSION" "cached"; return; fi
  step "build k6 $K6_VERSION (1-3 min)" "$BUILD_LOGS/k6.log" "$REPO_ROOT/tools/tools.sh" k6
}

# The pause container: Kubernetes' own pause.c (in the k8s.io/kubernetes module
# zip), linked statically so the image needs nothing else.
build_pause() {
  if [[ -x "$PAUSE_BIN/pause" ]]; then skip "pause $PAUSE_VERSION" "cached"; return; fi
  _pause() {
    cd "$work"
    local dir
    dir="$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
    mkdir -p out/bin
    gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION-wsps" -o out/bin/pause "$dir/build/pause/linux/pause.c"
    strip out/bin/pause
    out/bin/pause -v
  }
  build step "build pause $PAUSE_VERSION" pause _pause "$CACHE_DIR/pause-$PAUSE_VERSION"
}

# Prometheus with only the kubernetes service discovery (build tags
# remove_all_sd,enable_kubernetes_sd drop the cloud SDKs) and no UI assets
# (without the builtinassets tag the UI is simply not served). promtool comes
# from the same module: `make test` runs `promtool test rules` with it.
build_prometheus() {
  if [[ -x "$PROMETHEUS_BIN/prometheus" && -x "$PROMETHEUS_BIN/promtool" ]]; then skip "prometheus $PROMETHEUS_VERSION" "cached"; return; fi
  _prometheus() {
    wrapper_gomod prometheus 1.26 github.com/prometheus/prometheus "$PROMETHEUS_VERSION"
    local v="${PROMETHEUS_VERSION#v0.}" ver; ver="3.$(( ${v%%.*} - 300 )).${v#*.}"   # module v0.316.0 is Prometheus 3.16.0
    local cv=github.com/prometheus/common/version
    "${NICE[@]}" go build -v -tags remove_all_sd,enable_kubernetes_sd \
      -ldflags "-s -w -X $cv.Version=$ver -X $cv.Branch=wsps -X $cv.Revision=$PROMETHEUS_VERSION" \
      -o "$work/out/bin/" github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
    expect_version "$ver" "$work/out/bin/prometheus" --version
  }
  build long_step "build prometheus $PROMETHEUS_VERSION (5-15 min cold)" prometheus _prometheus "$CACHE_DIR/prometheus-$PROMETHEUS_VERSION"
}

# KEDA's operator and metrics API server (the admission webhooks are not
# used). Its go.mod has replace/exclude lines: the wrapper copies them.
build_keda() {
  if [[ -x "$KEDA_BIN/keda" && -x "$KEDA_BIN/keda-adapter" ]]; then skip "keda $KEDA_VERSION" "cached"; return; fi
  _keda() {
    wrapper_gomod keda 1.26 github.com/kedacore/keda/v2 "$KEDA_VERSION" replaces
    local ld="-s -w -X github.com/kedacore/keda/v2/version.Version=$KEDA_VERSION -X github.com/kedacore/keda/v2/version.GitCommit=wsps"
    "${NICE[@]}" go build -v -ldflags "$ld" -o "$work/out/bin/keda" github.com/kedacore/keda/v2/cmd/operator
    "${NICE[@]}" go build -v -ldflags "$ld" -o "$work/out/bin/keda-adapter" github.com/kedacore/keda/v2/cmd/adapter
    "$work/out/bin/keda" --help >/dev/null 2>&1 || true
  }
  build long_step "build keda $KEDA_VERSION (10-30 min cold)" keda _keda "$CACHE_DIR/keda-$KEDA_VERSION"
}

# The F5 NGINX Ingress Controller from its vendored release archive (the
# module proxy refuses the module), checked against NGINX_INGRESS_SHA256 in
# tools/versions.env before anything in it is used. Kept beside the binary:
# the nginx templates and njs scripts the image needs (the upstream image
# copies them the same way, build/scripts/common.sh) and the Helm chart, with
# its crds link resolved. The sources themselves are not kept.
build_nginx_ingress() {
  if [[ -x "$NGINX_INGRESS_DIR/bin/nginx-ingress" && -f "$NGINX_INGRESS_DIR/chart/Chart.yaml" ]]; then
    skip "nginx-ingress $NGINX_INGRESS_VERSION (vendored)" "cached"; return
  fi
  local tgz
  tgz=$("$REPO_ROOT/tools/vendor.sh" "kubernetes-ingress-$NGINX_INGRESS_VERSION.tar.gz" "$NGINX_INGRESS_SHA256") \
    || die "the F5 NGINX Ingress Controller is built from its vendored archive (above); WSPS_CLUSTER_NGINX=0 goes without it"
  _nginx_ingress() {
    tar -xzf "$tgz" -C "$work"
    local src="$work/kubernetes-ingress-$NGINX_INGRESS_VERSION" out="$work/out"
    cd "$src"
    "${NICE[@]}" go build -v -ldflags "-s -w -X main.version=$NGINX_INGRESS_VERSION" -o "$out/bin/nginx-ingress" ./cmd/nginx-ingress
    expect_version "Version=$NGINX_INGRESS_VERSION" "$out/bin/nginx-ingress" -version
    mkdir -p "$out/templates"
    cp internal/configs/version1/nginx.tmpl internal/configs/version1/nginx.ingress.tmpl \
      internal/configs/version2/nginx.virtualserver.tmpl internal/configs/version2/nginx.transportserver.tmpl "$out/templates/"
    cp -r internal/configs/njs "$out/njs"
    cp -rL charts/nginx-ingress "$out/chart"
    cp LICENSE "$out/"
  }
  build long_step "build nginx-ingress $NGINX_INGRESS_VERSION (vendored, 3-10 min cold)" nginx-ingress _nginx_ingress "$NGINX_INGRESS_DIR"
}

# kube-network-policies (the NetworkPolicy enforcer), host process: the
# wrapper's main (gomod/kube-network-policies) builds against a copy of the
# module patched by gomod/kube-network-policies/patch.sh (xtables NFQUEUE
# instead of nft queue; a nil NRI plugin); patch.sh fails if upstream's code
# moved. The cache folder is keyed by that folder's content too (lib.sh).
build_network_policies() {
  if [[ -x "$NETPOL_BIN/kube-network-policies" ]]; then skip "kube-network-policies $KUBE_NETWORK_POLICIES_VERSION" "cached"; return; fi
  _netpol() {
    cp -r "$LC_DIR/gomod/kube-network-policies/." .
    local dir
    dir="$(go mod download -json "sigs.k8s.io/kube-network-policies@$KUBE_NETWORK_POLICIES_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
    [[ -d "$dir" ]] || { echo "no source for kube-network-policies $KUBE_NETWORK_POLICIES_VERSION"; return 1; }
    cp -r "$dir" upstream && chmod -R u+w upstream
    ./patch.sh upstream
    rm queue-xt.go patch.sh
    go mod edit -require="sigs.k8s.io/kube-network-policies@$KUBE_NETWORK_POLICIES_VERSION"
    "${NICE[@]}" go build -v -ldflags "-s -w" -o "$work/out/bin/kube-network-policies" .
    # Its usage names the flag (read whole: see expect_version on grep -q).
    local usage
    usage="$("$work/out/bin/kube-network-policies" --help 2>&1 || true)"
    [[ $usage == *-kubeconfig* ]] || { echo "kube-network-policies --help does not name -kubeconfig"; return 1; }
  }
  build long_step "build kube-network-policies $KUBE_NETWORK_POLICIES_VERSION (1-5 min)" network-policies _netpol "$(dirname "$NETPOL_BIN")" kube-network-policies
}

main() {
  mkdir -p "$CACHE_DIR" "$BUILD_LOGS"
  # One build of each binary at a time (cluster-up and make images may overlap);
  # a build killed half-way left a .build-NAME.* folder: it goes.
  command -v go >/dev/null || die "no Go: tools/go.sh found none and fetched none"
  local want=("$@")
  (( ${#want[@]} )) || want=(kubernetes etcd coredns traefik pause prometheus keda nginx-ingress network-policies)
  local w
  for w in "${want[@]}"; do
    case "$w" in
      kubernetes|etcd|coredns|traefik|pause|k6|prometheus|keda|nginx-ingress|network-policies)
        exec 8>"$CACHE_DIR/.lock-$w"
        flock 8
        rm -rf "$CACHE_DIR/.build-$w".*
        "build_${w//-/_}"
        exec 8>&-
        ;;
      *) die "unknown binary set: $w" ;;
    esac
  done
  # kubectl on the PATH the Makefile sets up.
  if [[ -x "$K8S_BIN/kubectl" ]]; then
    mkdir -p "$WSPS_CACHE/bin"
    ln -sfn "$K8S_BIN/kubectl" "$WSPS_CACHE/bin/kubectl"
  fi
}

main "$@"; exit $?
