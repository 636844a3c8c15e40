# Real-cluster end-to-end test of the chart (infra/e2e, issues #5 and #14).
# Needs root (the local cluster).
#
# Part of `make test` as test-e2e, which says so and skips where it cannot run.
TEST_TARGETS += test-e2e

##@ End-to-end (local cluster)
.PHONY: e2e
e2e: chart-tools ## Cluster up, images, helm install/test, HTTPRoute clients, k6 Job (3000 conns) with KEDA autoscaling 2->4->2, rolling upgrade, dashboard queries, Redis loss + alert, Ingress, SSE via route and Ingress, in-cluster publish, the F5 NGINX ingress (page, clients, SSE, idle sockets, rolling restart), registry release, cluster down (E2E_KEEP_CLUSTER=1 keeps it)
	@infra/e2e/run.sh

.PHONY: test-e2e
test-e2e: ## make e2e when root (the local cluster needs it), else a skip notice
	@if [[ $$(id -u) -ne 0 ]]; then echo "test-e2e: SKIPPED, the local Kubernetes cluster needs root (run make e2e as root)"; exit 0; fi
	@# What make test started building in the background (tools/prebuild.sh), if it did.
	tools/prebuild.sh wait
	$(MAKE) --no-print-directory e2e
