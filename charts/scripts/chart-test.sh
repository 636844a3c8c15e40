#!/usr/bin/env bash
# make chart-test: every static check of charts/wsps and kustomize/, offline
# once the tools are installed (tools/tools.sh, run by make first).
# Runs every check, prints one PASS/FAIL line each, and ends with the
# "N passed, N failed" line; exits 1 when anything failed.
# Rendered manifests are kept in artifacts/chart-test/ for inspection.
set -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
eval "$(tools/tools.sh env)"
CHART=charts/wsps
OUT=artifacts/chart-test
rm -rf "$OUT"; mkdir -p "$OUT/render" "$OUT/kustomize" "$OUT/logs"

# kube-score checks we switch off everywhere, each for a stated reason:
#   container-image-pull-policy: it wants pullPolicy Always. Images are pinned
#     by tag or digest (image.digest), and clusters that side-load images
#     (our e2e: pullPolicy Never, no registry) cannot pull at all. The policy
#     stays a value; Always is not the right default.
KUBE_SCORE_IGNORES=(--ignore-test container-image-pull-policy)
# Scenario files may switch off more with a justified comment line:
#   # kube-score-ignore: <test> -- <why>

K8S_VERSIONS=()
for m in $K8S_SCHEMA_MINORS; do K8S_VERSIONS+=("1.$m.0"); done
SCHEMA_K8S="$K8S_SCHEMAS/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"
SCHEMA_CRD="$ROOT/charts/scripts/crd-schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json"

passed=0 failed=0 skipped=0 failures=()
run () { # name command...
  local name=$1; shift
  local log="$OUT/logs/$(printf %s "$name" | tr -c 'a-zA-Z0-9._-' '_').log" start=$SECONDS
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1)); printf '  \033[32mPASS\033[0m %-58s %3ss\n' "$name" "$((SECONDS - start))"
  else
    failed=$((failed + 1)); failures+=("$name")
    printf '  \033[31mFAIL\033[0m %-58s %3ss\n' "$name" "$((SECONDS - start))"
    sed 's/^/       | /' "$log" | tail -n 40
  fi
}
refused_in_its_words () { # values file: check-config exits 1 with the gateway's own message
  local out rc=0
  out=$("${WSPS_CLI[@]}" --values "$1" 2>&1) || rc=$?
  printf '%s\n' "$out"
  [[ $rc -eq 1 ]] && grep -q 'WSPS_SEND_MAX_BYTES must be larger than WSPS_SEND_HIGH_WATER_BYTES' <<<"$out"
}
skip () { skipped=$((skipped + 1)); printf '  \033[33mSKIP\033[0m %-58s %s\n' "$1" "$2"; }
section () { printf '\033[1m%s\033[0m\n' "$*"; }

has_scripts () { [[ -n $(find -L "$CHART/files/k6" -type f 2>/dev/null | head -n 1) ]]; }
wants_loadtest () { grep -Eq '^loadtest:' "$1" && grep -Eq '^  enabled: true' <(sed -n '/^loadtest:/,/^[a-z]/p' "$1"); }

kubeconform_all () { # files...
  local v rc=0
  for v in "${K8S_VERSIONS[@]}"; do
    echo "== Kubernetes $v"
    "$KUBECONFORM" -strict -summary -kubernetes-version "$v" \
      -schema-location "$SCHEMA_K8S" -schema-location "$SCHEMA_CRD" "$@" || rc=1
  done
  return $rc
}

kube_score () { # rendered-file values-file
  local extra=() t
  if [[ -n ${2:-} ]]; then
    while read -r t; do extra+=(--ignore-test "$t"); done \
      < <(sed -n 's/^# kube-score-ignore: *\([a-z0-9-]*\).*/\1/p' "$2")
  fi
  local out
  out=$("$KUBE_SCORE" score "$1" --output-format ci --kubernetes-version v1.30 \
    "${KUBE_SCORE_IGNORES[@]}" "${extra[@]}" 2>&1) || true
  echo "$out" | grep -v '^\[OK\]\|^\[SKIPPED\]'
  ! echo "$out" | grep -q '^\[CRITICAL\]'
}

readme_fresh () {
  "$HELM_DOCS" --chart-search-root "$CHART" --template-files README.md.gotmpl \
    --sort-values-order file --dry-run 2>/dev/null > "$OUT/README.md"
  diff -u "$CHART/README.md" "$OUT/README.md" \
    || { echo "charts/wsps/README.md is stale: run \`make chart-generate\` and commit it"; return 1; }
}

# Every template has a same-named helm-unittest suite: templates/x.yaml -> tests/x_test.yaml.
templates_tested () {
  local t base missing=0
  for t in "$CHART"/templates/*.yaml "$CHART"/templates/tests/*.yaml "$CHART"/templates/NOTES.txt; do
    base=$(basename "$t"); base=${base%.*}
    [[ -f $CHART/tests/${base}_test.yaml ]] || { echo "no tests/${base}_test.yaml for ${t#$CHART/}"; missing=1; }
  done
  for t in "$CHART"/tests/*_test.yaml; do
    base=$(basename "$t" _test.yaml)
    compgen -G "$CHART/templates/$base.*" >/dev/null || compgen -G "$CHART/templates/tests/$base.*" >/dev/null \
      || { echo "${t#$CHART/} tests no template named $base"; missing=1; }
  done
  return $missing
}

# values.schema.json (tools/config-schema.js) refuses a setting the gateway
# does not know, before anything reaches a cluster.
typo_refused () {
  local out
  if out=$("$HELM" template wsps "$CHART" --set gateway.config.WSPS_HEARTBEAT_MSS=1 2>&1); then
    echo "helm template accepted gateway.config.WSPS_HEARTBEAT_MSS"; return 1
  fi
  echo "$out"
  grep -q "additional properties 'WSPS_HEARTBEAT_MSS' not allowed" <<<"$out"
}

start_all=$SECONDS
section "chart: values, lint, render"
run "values documented + in schema" "$WSPS_PY" charts/scripts/check-values-docs.py
if command -v node >/dev/null && [[ -d node_modules/@wsps/shared ]]; then
  run "schema: gateway.config / fetcher.config == services' settings" node tools/config-schema.js --check
else
  skip "schema: gateway.config / fetcher.config == services' settings" "(npm workspaces not installed: make deps)"
fi
run "a misspelt gateway.config setting fails helm template" typo_refused
run "README.md up to date (helm-docs)" readme_fresh
run "files/k6 links loadtest/ and its imports" "$WSPS_PY" charts/scripts/sync-loadtest.py --check
run "helm lint --strict (defaults)" "$HELM" lint --strict "$CHART"
if command -v node >/dev/null; then
  run "local nginx (infra/local) == the nginx presets (node --test)" env HELM="$HELM" node --test infra/local/nginx-presets.test.js
else
  skip "local nginx (infra/local) == the nginx presets (node --test)" "(node not installed)"
fi

scenarios=() rendered=()
for values in "$CHART"/ci/*-values.yaml; do
  case=$(basename "$values" -values.yaml)
  if wants_loadtest "$values" && ! has_scripts; then
    skip "scenario $case" "(loadtest/ has no scripts yet: nothing for the ConfigMap)"
    continue
  fi
  scenarios+=("$case")
  run "helm lint --strict -f ci/$case" "$HELM" lint --strict "$CHART" -f "$values"
  run "helm template -f ci/$case" bash -c \
    "'$HELM' template wsps '$CHART' --namespace wsps -f '$values' > '$OUT/render/$case.yaml'"
  [[ -s $OUT/render/$case.yaml ]] && rendered+=("$OUT/render/$case.yaml")
done

section "chart: schemas (kubeconform -strict, Kubernetes ${K8S_VERSIONS[0]} .. ${K8S_VERSIONS[-1]}, offline)"
run "kubeconform ${#rendered[@]} scenarios x ${#K8S_VERSIONS[@]} versions" kubeconform_all "${rendered[@]}"

section "chart <-> services: the config loaders accept what the chart renders (wsps check-config)"
if [[ -d node_modules/@wsps/shared ]] && command -v node >/dev/null; then
  WSPS_CLI=(node clients/cli/bin/wsps.js check-config --helm "$HELM")
  run "WSPS_* settings of ${#rendered[@]} scenarios load in the services" "${WSPS_CLI[@]}" --rendered "${rendered[@]}"
  run "check-config --values: a values file, rendered and checked" "${WSPS_CLI[@]}" --values "$CHART/ci/13-auth-persistence-values.yaml"
  # Settings the chart's schema lets through but the gateway refuses at start-up (a cross-check).
  printf 'gateway:\n  config:\n    WSPS_SEND_HIGH_WATER_BYTES: 9000000\n    WSPS_SEND_MAX_BYTES: 100000\n' >"$OUT/refused-values.yaml"
  run "check-config --values: what the gateway would refuse is refused, in its words" refused_in_its_words "$OUT/refused-values.yaml"
else
  skip "WSPS_* settings load in the services" "(npm workspaces not installed: make deps)"
fi

section "chart: unit tests (helm-unittest)"
run "every template has a same-named test suite" templates_tested
run "helm unittest" "$HELM" unittest --color=false "$CHART"

section "chart: kube-score (no CRITICAL)"
for case in "${scenarios[@]}"; do
  [[ -s $OUT/render/$case.yaml ]] || continue
  run "kube-score $case" kube_score "$OUT/render/$case.yaml" "$CHART/ci/$case-values.yaml"
done

section "kustomize: rendered base up to date, every combination builds and validates"
run "kustomize/ rendered from the chart is current" "$WSPS_PY" charts/scripts/render-kustomize.py --check
kbuilt=()
for dir in kustomize/tests/*/; do
  combo=$(basename "$dir")
  if grep -Eq 'components/(loadtest|k6-operator)' "$dir/kustomization.yaml" && ! has_scripts; then
    skip "kustomize build tests/$combo" "(loadtest/ has no scripts yet)"
    continue
  fi
  run "kustomize build tests/$combo" bash -c "'$KUSTOMIZE' build '$dir' > '$OUT/kustomize/$combo.yaml'"
  [[ -s $OUT/kustomize/$combo.yaml ]] && kbuilt+=("$OUT/kustomize/$combo.yaml")
done
run "every overlay and test builds what helm template does" "$WSPS_PY" charts/scripts/check-kustomize-equivalence.py
run "kubeconform ${#kbuilt[@]} kustomize builds x ${#K8S_VERSIONS[@]} versions" kubeconform_all "${kbuilt[@]}"

section "infra: Kubernetes manifests validate"
infra_manifests=()
while IFS= read -r f; do infra_manifests+=("$f"); done < <(
  find infra -path infra/local -prune -o -path infra/local-cluster -prune -o -name '*.yaml' \
    ! -name 'values*.yaml' ! -name '*-values.yaml' ! -name 'kind-config.yaml' -print | sort)
run "kubeconform infra (${#infra_manifests[@]} files) x ${#K8S_VERSIONS[@]} versions" kubeconform_all "${infra_manifests[@]}"
for f in "${infra_manifests[@]}"; do
  run "kube-score ${f#infra/}" kube_score "$f" "$f"
done

echo
echo "chart-test took $((SECONDS - start_all))s; logs and rendered manifests in $OUT/"
if ((failed)); then
  printf 'failed: %s\n' "${failures[@]}"
fi
echo "chart-test: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
