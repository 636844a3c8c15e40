# Real-cluster end-to-end test of the chart (infra/e2e, issues #5 and #14).
# Needs root (the local cluster).
#
# NOT part of `make test` for now: the e2e was extended for #14 (Prometheus,
# KEDA autoscaling 2 -> 4 -> 2, alerts, dashboard queries, Gateway API route,
# a local OCI registry, 127.0.0.1-only host traffic) and the load test became a
# `helm test` hook (#17), and this extended run has not passed on a real
# cluster yet: the session that wrote it ran out of time in cold Go builds of
# Kubernetes, Traefik and KEDA. It goes back into TEST_TARGETS in the commit
# that shows it passing. Until then, run it by hand: `make e2e`.

##@ End-to-end (local cluster)
.PHONY: e2e
e2e: chart-tools ## Cluster up, images, helm install/test, HTTPRoute clients, k6 Job (3000 conns) with KEDA autoscaling 2->4->2, rolling upgrade, dashboard queries, Redis loss + alert, Ingress, cluster down (E2E_KEEP_CLUSTER=1 keeps it)
	@infra/e2e/run.sh

.PHONY: test-e2e
test-e2e: ## make e2e when root (the local cluster needs it), else a skip notice (not in make test until the extended e2e passes, see mk/e2e.mk)
	@if [[ $$(id -u) -ne 0 ]]; then echo "test-e2e: SKIPPED, the local Kubernetes cluster needs root (run make e2e as root)"; else $(MAKE) --no-print-directory e2e; fi
