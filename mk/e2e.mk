# Real-cluster end-to-end test of the chart (infra/e2e, issue #5). Needs root
# (the local cluster). Not part of `make test`.

##@ End-to-end (local cluster)
.PHONY: e2e
e2e: chart-tools ## Cluster up, images, helm install/test, ingress clients, k6 Job (3000 conns), rolling upgrade under load, scale 3->4, Redis loss, cluster down (E2E_KEEP_CLUSTER=1 keeps it)
	@infra/e2e/run.sh
