# Helm chart (charts/wsps), kustomize/ and their checks. Tools are pinned in
# tools/versions.env, built once into $(WSPS_CACHE)/tools by tools/tools.sh.
TEST_TARGETS += chart-test

##@ Chart
.PHONY: chart-tools
chart-tools: ## Install the pinned chart tools into $WSPS_CACHE (helm, kustomize, kubeconform, helm-unittest, kube-score, helm-docs, k8s schemas)
	@tools/tools.sh

.PHONY: chart-generate
chart-generate: chart-tools ## Regenerate what is derived from sources: chart k6 links to loadtest/, config settings + descriptions in the schema, chart README, kustomize/**/generated
	@eval "$$(tools/tools.sh env)"
	"$$WSPS_PY" charts/scripts/sync-loadtest.py
	node tools/config-schema.js
	"$$WSPS_PY" charts/scripts/check-values-docs.py --fix
	"$$HELM_DOCS" --chart-search-root charts/wsps --template-files README.md.gotmpl --sort-values-order file --log-level warning
	"$$WSPS_PY" charts/scripts/render-kustomize.py

.PHONY: chart-sentinel-sim
chart-sentinel-sim: chart-tools ## Run the chart's redis.mode=sentinel scripts as 3 Redis + 3 Sentinel processes (private netns; root), kill the primary, follow it with a fetcher and a gateway
	@eval "$$(tools/tools.sh env)"
	"$$WSPS_PY" charts/scripts/sentinel-sim.py

.PHONY: chart-test
chart-test: chart-tools ## Chart checks: lint, render ci/ scenarios, kubeconform 1.30-1.37, helm-unittest, kube-score, kustomize builds, generated files fresh
	@charts/scripts/chart-test.sh

.PHONY: chart-render
chart-render: chart-tools ## Print the chart's manifests (VALUES=charts/wsps/ci/05-ingress-f5-nginx-values.yaml to pick a scenario)
	@eval "$$(tools/tools.sh env)"
	"$$HELM" template wsps charts/wsps --namespace wsps $(if $(VALUES),-f $(VALUES))
