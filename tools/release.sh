#!/usr/bin/env bash
# make release: the wsps image as an OCI archive and the packaged chart, both
# pushed when REGISTRY is set. No Docker engine: buildah builds, skopeo and
# helm push.
#
# Inputs (environment, all optional):
#   VERSION     release version, chart version and appVersion (default: the
#               chart's version from charts/wsps/Chart.yaml)
#   REGISTRY    host[:port][/path] to push to, e.g. 127.0.0.1:5000 or
#               registry.example.com/wsps. Loopback registries are spoken to
#               over plain HTTP; any other needs TLS.
#   BASE_IMAGE  the Dockerfile's base. A registry image must be pinned by
#               digest (name@sha256:...). Default: the local base the cluster
#               scripts build (debootstrap + the pinned Node), built here when
#               missing, so nothing is pulled.
#   OUT         output directory (default artifacts/release)
#
# Outputs in $OUT:
#   wsps-image-$VERSION.oci.tar   the image, OCI archive (ref wsps:$VERSION)
#   wsps-$VERSION.tgz             the chart (helm package); with REGISTRY its
#                                 image.repository is $REGISTRY/wsps
#   release.env                   KEY=value lines: VERSION, IMAGE_ARCHIVE,
#                                 CHART_PACKAGE, and with REGISTRY: IMAGE
#                                 (repo:tag), IMAGE_DIGEST, CHART_REF (oci://...)
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CACHE=${WSPS_CACHE:-$HOME/.cache/wsps}
eval "$(tools/tools.sh env)"
# shellcheck source=../infra/local-cluster/images.env
. infra/local-cluster/images.env   # BASE_IMAGE of the local cluster

VERSION=${VERSION:-$(sed -n 's/^version: *//p' charts/wsps/Chart.yaml)}
OUT=${OUT:-artifacts/release}
REGISTRY=${REGISTRY:-}
LOCAL_BASE=$BASE_IMAGE
BASE=${RELEASE_BASE_IMAGE:-$LOCAL_BASE}

say () { printf '\033[36m[release]\033[0m %s\n' "$*" >&2; }
die () { printf '\033[31m[release]\033[0m %s\n' "$*" >&2; exit 1; }

[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]] || die "VERSION must be SemVer (got '$VERSION')"
command -v buildah >/dev/null && command -v skopeo >/dev/null \
  || die "needs buildah and skopeo (apt-get install buildah skopeo)"
case $BASE in
  localhost/*) ;;
  *@sha256:*) ;;
  *) die "BASE_IMAGE=$BASE comes from a registry: pin it by digest (name@sha256:...)" ;;
esac

# The same buildah storage as infra/local-cluster/images.sh, so its base
# image (and layer cache) is shared.
BUILDAH_DIR=$CACHE/cluster/buildah
export CONTAINERS_CONF=$BUILDAH_DIR/containers.conf
BUILDAH=(buildah --root "$BUILDAH_DIR/overlay/root" --runroot "$BUILDAH_DIR/overlay/runroot"
         --storage-driver overlay --storage-opt overlay.skip_mount_home=true)
mkdir -p "$BUILDAH_DIR" "$OUT"
[[ -f $CONTAINERS_CONF ]] || printf '[network]\nnetwork_config_dir = "%s"\ncni_plugin_dirs = ["/usr/lib/cni"]\n' "$BUILDAH_DIR/cni" >"$CONTAINERS_CONF"

if ! "${BUILDAH[@]}" inspect --type image "$BASE" >/dev/null 2>&1; then
  [[ $BASE == "$LOCAL_BASE" ]] || die "base image $BASE is not in the buildah storage"
  say "building the base $BASE (infra/local-cluster/images.sh base)"
  infra/local-cluster/images.sh base >&2
fi

IMAGE=localhost/wsps:$VERSION
ARCHIVE=$OUT/wsps-image-$VERSION.oci.tar
# npm in RUN steps must trust the CA of a TLS-intercepting proxy the host
# uses, as images.sh does for wsps:dev: mounted for the build only, never
# committed into the image.
vols=()
ca=${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}
if [[ -n $ca && $ca != null && $ca != undefined && -f $ca ]]; then
  printf 'cafile=/etc/ssl/certs/wsps-build-ca.crt\nregistry=%s\n' \
    "$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)" >"$BUILDAH_DIR/release-npmrc"
  vols=(-v "$ca:/etc/ssl/certs/wsps-build-ca.crt:ro" -v "$BUILDAH_DIR/release-npmrc:/usr/local/etc/npmrc:ro")
fi
say "building $IMAGE on $BASE"
(
  flock 9   # one build at a time in this storage (images.sh takes the same lock)
  "${BUILDAH[@]}" bud --isolation chroot --layers --pull=false --format oci \
    --build-arg "BASE_IMAGE=$BASE" --build-arg "VERSION=$VERSION" \
    --build-arg "REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    "${vols[@]}" -t "$IMAGE" -f Dockerfile . >&2
  rm -f "$ARCHIVE"
  "${BUILDAH[@]}" push --quiet "$IMAGE" "oci-archive:$ARCHIVE:wsps:$VERSION"
) 9>"$BUILDAH_DIR/.lock"
say "image archive: $ARCHIVE"

# The chart: packaged from a copy, so the repository's values stay untouched
# when the release points the chart at its registry.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -rL charts/wsps "$work/wsps"   # -L: files/k6 holds relative symlinks to loadtest/ and services/protocol
if [[ -n $REGISTRY ]]; then
  sed -i "s#^  repository: ghcr.io/wsps/wsps\$#  repository: $REGISTRY/wsps#" "$work/wsps/values.yaml"
  grep -q "^  repository: $REGISTRY/wsps\$" "$work/wsps/values.yaml" || die "could not point image.repository at $REGISTRY"
fi
"$HELM" package "$work/wsps" --version "$VERSION" --app-version "$VERSION" -d "$OUT" >&2
CHART_PACKAGE=$OUT/wsps-$VERSION.tgz
say "chart: $CHART_PACKAGE"

{
  echo "VERSION=$VERSION"
  echo "IMAGE_ARCHIVE=$ARCHIVE"
  echo "CHART_PACKAGE=$CHART_PACKAGE"
} >"$OUT/release.env"

if [[ -n $REGISTRY ]]; then
  tls=(--dest-tls-verify=true) helm_tls=()
  case ${REGISTRY%%/*} in
    127.*|localhost|localhost:*|\[::1\]*) tls=(--dest-tls-verify=false); helm_tls=(--plain-http) ;;
  esac
  say "pushing the image to docker://$REGISTRY/wsps:$VERSION"
  skopeo copy --quiet "${tls[@]}" --digestfile "$work/digest" \
    "oci-archive:$ARCHIVE" "docker://$REGISTRY/wsps:$VERSION" >&2
  say "pushing the chart to oci://$REGISTRY/charts"
  "$HELM" push "$CHART_PACKAGE" "oci://$REGISTRY/charts" "${helm_tls[@]}" >&2
  {
    echo "IMAGE=$REGISTRY/wsps:$VERSION"
    echo "IMAGE_DIGEST=$(cat "$work/digest")"
    echo "CHART_REF=oci://$REGISTRY/charts/wsps"
  } >>"$OUT/release.env"
fi
cat "$OUT/release.env"
