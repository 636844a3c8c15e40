# Local single-node Kubernetes cluster (infra/local-cluster/README.md).
# Needs root. Built binaries, rootfs and image archives are cached under
# $(WSPS_CACHE)/cluster, keyed by version; the cluster's state lives in
# /var/lib/wsps-cluster and /run/wsps-cluster while it runs.

##@ Kubernetes (local cluster)
.PHONY: cluster-up
cluster-up: ## Build what is not cached, start a 1-node Kubernetes cluster (+ Traefik ingress); idempotent
	@infra/local-cluster/up.sh

.PHONY: cluster-down
cluster-down: ## Stop the cluster and restore the machine (processes, mounts, iptables, cni0, lo address, sysctls)
	@infra/local-cluster/down.sh

.PHONY: images
images: ## Build wsps:dev (repo Dockerfile), wsps-k6, traefik, pause with buildah (no Docker); import if the cluster runs
	@infra/local-cluster/images.sh

.PHONY: cluster-bins
cluster-bins: ## Build only the cluster binaries (Kubernetes, etcd, CoreDNS, Traefik, pause) into the cache
	@infra/local-cluster/build-bins.sh

.PHONY: cluster-status
cluster-status: ## Show the cluster's processes, node, pods and how to reach it
	@infra/local-cluster/status.sh

.PHONY: cluster-smoke
cluster-smoke: ## Check the running cluster: a pod runs, cluster DNS resolves, Traefik serves an Ingress (WebSocket too)
	@infra/local-cluster/smoke.sh
