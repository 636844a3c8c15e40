#!/usr/bin/env bash
# Installs the pinned tools (the chart's checks, k6, toxiproxy-server,
# nats-server and the test OpenTelemetry Collector) under $WSPS_CACHE,
# each in a directory keyed by its version, and links them into
# $WSPS_CACHE/bin. Versions come from tools/versions.env. Idempotent: a tool
# whose versioned binary exists is not rebuilt, so after the first run this is
# instant and offline.
#
#   tools/tools.sh            # install every chart tool that is missing
#   tools/tools.sh env        # print `export X=...` lines for the checks
#   tools/tools.sh helm k6    # only these
#   tools/tools.sh toxiproxy  # toxiproxy-server (make test-integration runs this)
#   tools/tools.sh nats-server # the JetStream engine of the conformance suite (make test-integration)
#   tools/tools.sh otelcol    # the collector of infra/otelcol (make test-integration, the e2e's image)
#
# Each tool lands in $WSPS_CACHE/bin (~/.cache/wsps/bin): the Makefile puts it
# first on PATH; in your shell, `export PATH=$HOME/.cache/wsps/bin:$PATH`.
#
# Sources: the Go module proxy (Go tools) and PyPI (Kubernetes JSON schemas).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# shellcheck source=versions.env
. "$(dirname "${BASH_SOURCE[0]}")/versions.env"
# kubernetes-validate carries schemas for several Kubernetes minors; we
# validate against 1.30 ... 1.37.
K8S_SCHEMA_MINORS="30 31 32 33 34 35 36 37"
# What the helm binary reports to templates as .Capabilities.KubeVersion
# (a plain `go install` reports v1.20, which fails kubeVersion >=1.30).
HELM_K8S_MINOR=37

CACHE=${WSPS_CACHE:-$HOME/.cache/wsps}
TOOLS=$CACHE/tools
BIN=$CACHE/bin

helm_dir=$TOOLS/helm-$HELM_VERSION-k8s1.$HELM_K8S_MINOR
kustomize_dir=$TOOLS/kustomize-$KUSTOMIZE_VERSION
kubeconform_dir=$TOOLS/kubeconform-$KUBECONFORM_VERSION
unittest_dir=$TOOLS/helm-plugins-unittest-$HELM_UNITTEST_VERSION
kubescore_dir=$TOOLS/kube-score-$KUBE_SCORE_VERSION
helmdocs_dir=$TOOLS/helm-docs-$HELM_DOCS_VERSION
schemas_dir=$TOOLS/k8s-schemas-$K8S_SCHEMAS_VERSION-standalone
py_dir=$TOOLS/python-pyyaml-$PYYAML_VERSION
k6_dir=$TOOLS/k6-$K6_VERSION
toxiproxy_dir=$TOOLS/toxiproxy-$TOXIPROXY_VERSION
nats_dir=$TOOLS/nats-server-$NATS_SERVER_VERSION
# Our own module: keyed by its files too, so a component added there builds anew.
otelcol_src=$ROOT/infra/otelcol
otelcol_dir=$TOOLS/otelcol-$OTELCOL_VERSION-$(cat "$otelcol_src"/{main.go,go.mod,go.sum} | sha256sum | cut -c1-8)

log () { printf '\033[36m[tools]\033[0m %s\n' "$*" >&2; }

# A line every 30 s while a long step runs (module downloads print nothing).
heartbeat_pid=
heartbeat_start () { # what
  local what=$1 t0=$SECONDS
  ( while sleep 30; do printf '[tools]   ... still working on %s (%ss)\n' "$what" "$((SECONDS - t0))" >&2; done ) &
  heartbeat_pid=$!
}
heartbeat_stop () { if [[ -n $heartbeat_pid ]]; then kill "$heartbeat_pid" 2>/dev/null || true; fi; heartbeat_pid=; }
trap heartbeat_stop EXIT

link () { mkdir -p "$BIN"; ln -sfn "$1" "$BIN/$(basename "$1")"; }

# `go build -v` prints a package per line: one line in 25 of them goes on.
compiled () { awk '{ n++; if (n % 25 == 0) { printf "[tools]   ... %d packages compiled (%s)\n", n, $0; fflush() } }' >&2; }

# Go for the builds below: the one installed, or the pinned toolchain
# (tools/go.sh fetches it from the Go module proxy when there is none).
need_go () {
  command -v go >/dev/null && return
  local prefix
  prefix=$("$(dirname "${BASH_SOURCE[0]}")/go.sh")
  PATH=$prefix$PATH
}

# python3 with pip and venv (the schemas' download, PyYAML's venv): Debian
# splits them into python3-pip and python3-venv, absent from a minimal system.
need_python () {
  local missing=()
  command -v python3 >/dev/null || missing+=(python3)
  python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
  python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
  ((${#missing[@]})) || return 0
  "$(dirname "${BASH_SOURCE[0]}")/apt.sh" tools.sh "${missing[@]}" >&2 || exit 1
}

# go install into a versioned dir. Writes to a temp dir first so an
# interrupted build never leaves a half-installed tool behind. With `name`,
# the binary (named after the package's last path element) is renamed to it.
go_install () { # dir pkg@version [ldflags] [name]
  local dir=$1 pkg=$2 ldflags=${3:-} name=${4:-} tmp
  need_go
  tmp=$(mktemp -d "$TOOLS/.build.XXXXXX")
  log "building $pkg (go install, first time only; takes a few minutes on 2 cores)"
  local start=$SECONDS
  heartbeat_start "$pkg"
  GOBIN=$tmp GOFLAGS=-buildvcs=false go install -v -trimpath ${ldflags:+-ldflags "$ldflags"} "$pkg" 2>&1 \
    | compiled
  heartbeat_stop
  if [[ -n $name ]]; then local bin=${pkg%@*}; mv "$tmp/${bin##*/}" "$tmp/$name"; fi
  rm -rf "$dir"; mv "$tmp" "$dir"
  log "built $pkg in $((SECONDS - start))s"
}

install_helm () {
  [[ -x $helm_dir/helm ]] && return
  go_install "$helm_dir" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" \
    "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR"
}

install_k6 () {
  [[ -x $k6_dir/k6 ]] && return
  go_install "$k6_dir" "go.k6.io/k6@$K6_VERSION" "-s -w"
}

# Only the server: the tests drive it over its HTTP API (harness/testkit/src/toxiproxy.js).
install_toxiproxy () {
  [[ -x $toxiproxy_dir/toxiproxy-server ]] && return
  go_install "$toxiproxy_dir" "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" \
    "-s -w -X github.com/Shopify/toxiproxy/v2.Version=$TOXIPROXY_VERSION" toxiproxy-server
}

# The broker conformance suite's second engine (harness/testkit/src/nats.js
# starts it standalone and as a 3-node JetStream cluster).
install_nats_server () {
  [[ -x $nats_dir/nats-server ]] && return
  go_install "$nats_dir" "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION" "-s -w"
}

# The collector of the tests: infra/otelcol is a module of its own (main.go
# picks the components), built as the main module with its go.sum, never
# tidied here. Its go.mod must name the release versions.env pins.
install_otelcol () {
  [[ -x $otelcol_dir/otelcol ]] && return
  need_go
  grep -q "go.opentelemetry.io/collector/otelcol $OTELCOL_VERSION\$" "$otelcol_src/go.mod" || {
    echo "infra/otelcol/go.mod does not require go.opentelemetry.io/collector/otelcol $OTELCOL_VERSION (tools/versions.env): update it (infra/otelcol/README.md)" >&2
    exit 1
  }
  local tmp start=$SECONDS
  tmp=$(mktemp -d "$TOOLS/.build.XXXXXX")
  log "building the OpenTelemetry Collector $OTELCOL_VERSION (infra/otelcol, go build, first time only; ~4 min on 2 cores)"
  heartbeat_start "otelcol"
  (cd "$otelcol_src" && GOFLAGS=-buildvcs=false go build -mod=readonly -v -trimpath \
    -ldflags "-s -w -X main.version=$OTELCOL_VERSION" -o "$tmp/otelcol" . 2>&1) \
    | compiled
  heartbeat_stop
  [[ $("$tmp/otelcol" --version) == *"$OTELCOL_VERSION"* ]] || { echo "the built otelcol does not report $OTELCOL_VERSION" >&2; exit 1; }
  rm -rf "$otelcol_dir"; mv "$tmp" "$otelcol_dir"
  log "built otelcol $OTELCOL_VERSION in $((SECONDS - start))s"
}

install_kustomize () {
  [[ -x $kustomize_dir/kustomize ]] && return
  go_install "$kustomize_dir" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" "-s -w"
}

install_kubeconform () {
  [[ -x $kubeconform_dir/kubeconform ]] && return
  go_install "$kubeconform_dir" "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" "-s -w"
}

install_kube_score () {
  [[ -x $kubescore_dir/kube-score ]] && return
  go_install "$kubescore_dir" "github.com/zegl/kube-score/cmd/kube-score@$KUBE_SCORE_VERSION" "-s -w"
}

install_helm_docs () {
  [[ -x $helmdocs_dir/helm-docs ]] && return
  go_install "$helmdocs_dir" "github.com/norwoodj/helm-docs/cmd/helm-docs@$HELM_DOCS_VERSION" "-s -w"
}

# helm-unittest's go.mod has a replace directive, so `go install pkg@v` refuses
# it: download the module and build it as the main module instead. It is then
# laid out as a helm plugin directory with our own plugin.yaml (no install
# hooks: the upstream hook downloads a release binary, which we cannot).
install_helm_unittest () {
  [[ -x $unittest_dir/unittest/untt ]] && return
  need_go
  local mod=github.com/helm-unittest/helm-unittest@$HELM_UNITTEST_VERSION src tmp start=$SECONDS
  log "downloading $mod"
  heartbeat_start "helm-unittest"
  src=$(go mod download -json "$mod" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  tmp=$(mktemp -d "$TOOLS/.build.XXXXXX")
  mkdir -p "$tmp/unittest"
  log "building helm-unittest $HELM_UNITTEST_VERSION (go build, first time only)"
  (cd "$src" && GOFLAGS=-buildvcs=false go build -v -trimpath -ldflags "-s -w" -o "$tmp/unittest/untt" ./cmd/helm-unittest 2>&1) \
    | compiled
  cat > "$tmp/unittest/plugin.yaml" <<YAML
name: "unittest"
version: "${HELM_UNITTEST_VERSION#v}"
usage: "unittest for helm charts"
description: "helm-unittest built from source by tools/tools.sh (no install hooks)"
ignoreFlags: false
command: "\$HELM_PLUGIN_DIR/untt"
YAML
  heartbeat_stop
  [[ -d $src/schema ]] && cp -r "$src/schema" "$tmp/unittest/schema" && chmod -R u+w "$tmp/unittest/schema"
  rm -rf "$unittest_dir"; mv "$tmp" "$unittest_dir"
  log "built helm-unittest in $((SECONDS - start))s"
}

# JSON schemas from the PyPI package kubernetes-validate, rewritten for
# offline use: their "$id" is https://kubernetes.io/api/<kind>/<group>/<v> and
# their refs are "/api/_definitions.json#...", so a validator would fetch
# https://kubernetes.io/api/_definitions.json. We drop the $id and inline the
# definitions each kind needs into its own file (standalone, like
# kubeconform's own schema repository), so nothing is resolved remotely and
# kubeconform compiles one small document per kind.
install_schemas () {
  [[ -f $schemas_dir/.complete ]] && return
  need_python
  local tmp start=$SECONDS
  tmp=$(mktemp -d "$TOOLS/.build.XXXXXX")
  log "downloading kubernetes-validate==$K8S_SCHEMAS_VERSION from PyPI (~22 MB, JSON schemas)"
  python3 -m pip download --quiet --progress-bar off --no-deps --disable-pip-version-check \
    -d "$tmp/wheel" "kubernetes-validate==$K8S_SCHEMAS_VERSION" >&2
  log "rewriting schemas for offline use (Kubernetes 1.$(echo $K8S_SCHEMA_MINORS | sed 's/ /, 1./g'))"
  python3 - "$tmp" $K8S_SCHEMA_MINORS <<'PY'
import glob, json, os, re, sys, zipfile
out, minors = sys.argv[1], sys.argv[2:]
whl = zipfile.ZipFile(glob.glob(os.path.join(out, 'wheel', '*.whl'))[0])
prefix = 'kubernetes_validate/kubernetes-json-schema/'

DEFS = '_definitions.json#/$defs/'

def rewrite(node, refs):
    """Drop $id, point refs at the document's own $defs, collect ref names."""
    if isinstance(node, dict):
        node.pop('$id', None)
        ref = node.get('$ref')
        if isinstance(ref, str) and '#/$defs/' in ref:
            name = ref.split('#/$defs/', 1)[1]
            node['$ref'] = '#/$defs/' + name
            refs.add(name)
        for v in node.values():
            rewrite(v, refs)
    elif isinstance(node, list):
        for v in node:
            rewrite(v, refs)

by_version = {}
for name in whl.namelist():
    if not name.startswith(prefix) or not name.endswith('.json'):
        continue
    ver, fname = name[len(prefix):].split('/', 1)
    m = re.fullmatch(r'v1\.(\d+)\.0-local-strict', ver)
    if m and m.group(1) in minors and '/' not in fname:
        by_version.setdefault(m.group(1), []).append((fname, name))

n = 0
for minor, files in sorted(by_version.items()):
    defs = json.loads(whl.read(next(z for f, z in files if f == '_definitions.json')))['$defs']
    direct = {}
    for k, d in defs.items():
        direct[k] = set()
        rewrite(d, direct[k])
    outdir = os.path.join(out, 'v1.%s.0-standalone-strict' % minor)
    os.makedirs(outdir, exist_ok=True)
    for fname, zname in files:
        if fname in ('_definitions.json', 'all.json'):
            continue
        doc = json.loads(whl.read(zname))
        todo = set()
        rewrite(doc, todo)
        # standalone: every definition the kind needs, inlined (kubeconform
        # then compiles one small document per kind, not the 1 MB shared file)
        keep = set()
        while todo:
            k = todo.pop()
            if k not in keep:
                keep.add(k)
                todo |= direct[k] - keep
        if keep:
            doc['$defs'] = {k: defs[k] for k in sorted(keep)}
        with open(os.path.join(outdir, fname), 'w') as f:
            json.dump(doc, f, separators=(',', ':'))
        n += 1
print('[tools]   %d schema files written' % n, file=sys.stderr)
PY
  rm -rf "$tmp/wheel"; touch "$tmp/.complete"
  rm -rf "$schemas_dir"; mv "$tmp" "$schemas_dir"
  log "schemas ready in $((SECONDS - start))s"
}

install_python () {
  [[ -x $py_dir/bin/python ]] && return
  need_python
  local tmp
  tmp=$(mktemp -d "$TOOLS/.build.XXXXXX")
  log "creating a Python venv with PyYAML $PYYAML_VERSION (PyPI)"
  python3 -m venv "$tmp" >&2
  "$tmp/bin/python" -m pip install --quiet --progress-bar off --disable-pip-version-check "PyYAML==$PYYAML_VERSION" >&2
  rm -rf "$py_dir"; mv "$tmp" "$py_dir"
  # a venv records its own path: recreate the scripts' shebangs after the move
  python3 -m venv --upgrade "$py_dir" >/dev/null 2>&1 || true
}

print_env () {
  cat <<ENV
export HELM=$helm_dir/helm
export KUSTOMIZE=$kustomize_dir/kustomize
export KUBECONFORM=$kubeconform_dir/kubeconform
export KUBE_SCORE=$kubescore_dir/kube-score
export HELM_DOCS=$helmdocs_dir/helm-docs
export K8S_SCHEMAS=$schemas_dir
export WSPS_PY=$py_dir/bin/python
export K6=$k6_dir/k6
export TOXIPROXY_SERVER=$toxiproxy_dir/toxiproxy-server
export NATS_SERVER=$nats_dir/nats-server
export OTELCOL=$otelcol_dir/otelcol
export K8S_SCHEMA_MINORS="$K8S_SCHEMA_MINORS"
export HELM_PLUGINS=$unittest_dir
export HELM_CACHE_HOME=$CACHE/helm/cache
export HELM_CONFIG_HOME=$CACHE/helm/config
export HELM_DATA_HOME=$CACHE/helm/data
ENV
}

main () {
  if [[ ${1:-} == env ]]; then print_env; return; fi
  mkdir -p "$TOOLS" "$BIN"
  local want=("$@")
  [[ ${#want[@]} -gt 0 ]] || want=(helm kustomize kubeconform helm-unittest kube-score helm-docs schemas python)
  for t in "${want[@]}"; do
    # One build of a tool at a time (make test's background builds, tools/prebuild.sh,
    # may be building it): the second finds it installed.
    exec 8>"$TOOLS/.lock-$t"
    flock 8
    case $t in
      helm) install_helm; link "$helm_dir/helm" ;;
      kustomize) install_kustomize; link "$kustomize_dir/kustomize" ;;
      kubeconform) install_kubeconform; link "$kubeconform_dir/kubeconform" ;;
      helm-unittest) install_helm_unittest ;;
      kube-score) install_kube_score; link "$kubescore_dir/kube-score" ;;
      helm-docs) install_helm_docs; link "$helmdocs_dir/helm-docs" ;;
      schemas) install_schemas ;;
      python) install_python ;;
      k6) install_k6; link "$k6_dir/k6" ;;
      toxiproxy) install_toxiproxy; link "$toxiproxy_dir/toxiproxy-server" ;;
      otelcol) install_otelcol; link "$otelcol_dir/otelcol" ;;
      nats-server) install_nats_server; link "$nats_dir/nats-server" ;;
      go) need_go ;;
      *) echo "unknown tool: $t" >&2; exit 2 ;;
    esac
    exec 8>&-
  done
  # How to reach them outside make (make puts $BIN first on PATH itself).
  local linked=() t b
  for t in "${want[@]}"; do
    b=$t; [[ $t == toxiproxy ]] && b=toxiproxy-server
    [[ -e $BIN/$b ]] && linked+=("$b")
  done
  if ((${#linked[@]})) && [[ :$PATH: != *":$BIN:"* || -n ${MAKELEVEL:-} ]]; then
    log "ready in $BIN: ${linked[*]} (in your shell: export PATH=\"$BIN:\$PATH\")"
  fi
}

main "$@"
