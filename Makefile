# wsps — make help lists every target.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -o errexit -c
.DEFAULT_GOAL := help
.ONESHELL:

# Tools and downloads are cached outside the repo, keyed by version.
export WSPS_CACHE ?= $(HOME)/.cache/wsps
export PATH := $(WSPS_CACHE)/bin:$(PATH)
# Node trusts only its own CA list; a machine behind a TLS-inspecting proxy
# trusts it through the system's bundle, which npm, the tests and the tools
# then need too.
ifeq ($(NODE_EXTRA_CA_CERTS),)
ifneq ($(wildcard /etc/ssl/certs/ca-certificates.crt),)
export NODE_EXTRA_CA_CERTS := /etc/ssl/certs/ca-certificates.crt
endif
endif

# Every pinned tool version (K6_VERSION, HELM_VERSION, ...).
include tools/versions.env

# Each area adds its own targets and appends what `make test` runs to TEST_TARGETS.
TEST_TARGETS := test-static test-unit test-integration
include $(sort $(wildcard mk/*.mk))
# test-prebuild first and the e2e last: the cluster's builds (tens of minutes
# on a cold machine) run in the background under everything else.
TEST_TARGETS := test-prebuild $(filter-out test-e2e,$(TEST_TARGETS)) test-e2e

##@ Help
.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
	  /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Local stack
.PHONY: deps
deps: ## Install what is missing: npm packages, redis-server, nginx
	@infra/local/deps.sh

.PHONY: up
up: deps ## Start Redis, the quote-fetcher, two gateways and nginx on :8080; print the URLs (AUTH=hs256: with JWT auth)
	@infra/local/up.sh

.PHONY: down
down: ## Stop exactly what `make up` started
	@infra/local/down.sh

.PHONY: logs
logs: ## Follow the local stack's logs
	@tail -n 50 -F .run/logs/*.log

##@ Test
.PHONY: test-prebuild
test-prebuild: ## Start the slow builds the suite needs later (the OpenTelemetry Collector, cluster binaries and images, k6, promtool, chart tools) in the background, at nice 19
	@# They stop with the run that started them (make test's, or this make).
	tools/prebuild.sh start "$${PREBUILD_OWNER:-$$PPID}"

.PHONY: test
test: ## The whole suite (what CI runs): its stages in turn, then a table of their times
	@tools/stages.sh $(TEST_TARGETS)

.PHONY: test-static
test-static: deps ## Lint, type check, generated docs and Protobuf codecs up to date, npm audit
	@npx eslint .
	@npx tsc -p tsconfig.json
	@node tools/config-docs.js --check
	@node tools/proto-generate.js --check
	@node tools/audit.js

.PHONY: proto-generate
proto-generate: deps ## Regenerate the Protobuf codecs of services/protocol/wsps.v1.proto (JS in services/protocol/gen/, Python in clients/python/src/wsps/), offline
	@node tools/proto-generate.js

.PHONY: test-unit
test-unit: deps ## Unit tests (node:test; go test of the bench's Go programs)
	@# Go for the bench's tests (they build its Go programs) and go test: tools/go.sh
	@# provides it (the one installed, or the pinned toolchain from the Go module proxy).
	@export PATH="$$(tools/go.sh)$$PATH"
	node --test --test-concurrency=2 --test-reporter=spec services/{protocol,shared,gateway,quote-fetcher}/test/*.test.js clients/cli/test/*.test.js harness/bench/test/*.test.js harness/chaos/campaign/test/*.test.js
	# The bench's Go programs (harness/bench/loadgen: frames, epoll loop and floor on loopback, hiccup book): a few seconds.
	cd harness/bench/loadgen && go test -count=1 ./...

.PHONY: test-integration
test-integration: deps ## Integration tests: real redis-server, real gateway and fetcher processes, toxiproxy-server, an OpenTelemetry Collector, nats-server
	@# toxiproxy-server, the fault proxy of the Redis link tests (harness/testkit/src/toxiproxy.js),
	@# the collector of the trace tests (infra/otelcol, harness/testkit/src/otel-collector.js)
	@# and nats-server, the broker conformance suite's JetStream (harness/testkit/src/nats.js):
	@# built with Go once (under a minute; the collector ~4 min cold on 2 cores, usually
	@# already done by test-prebuild), then instant (tools/tools.sh prints its progress).
	@tools/tools.sh toxiproxy otelcol nats-server
	@node --test --test-concurrency=1 --test-reporter=spec harness/testkit/test/*.test.js
