# k6 load test (loadtest/): the pinned k6, local runs against `make up`, the
# sharded runner for more connections than one process can hold, and checks.
# docs/loadtest.md explains the parameters and the report.

# K6_VERSION comes from tools/versions.env (the Makefile includes it); the
# one k6 binary serves these targets and the cluster's wsps-k6 image.
K6 := $(WSPS_CACHE)/tools/k6-$(K6_VERSION)/k6
# Where `make up` serves the WebSocket endpoint.
LOADTEST_READY_URL ?= http://127.0.0.1:8080/readyz

TEST_TARGETS += test-loadtest

##@ Load test
.PHONY: k6
k6: ## Install the pinned k6 (built with Go once, ~3-5 min; cached in $WSPS_CACHE, linked into $WSPS_CACHE/bin)
	@tools/tools.sh k6

# Fails with a clear message instead of starting the stack behind your back.
.PHONY: loadtest-stack-up
loadtest-stack-up:
	@curl -fsS -o /dev/null --max-time 2 "$(LOADTEST_READY_URL)" || {
	  echo "error: the local stack does not answer at $(LOADTEST_READY_URL). Start it with 'make up' (or set WS_URL and LOADTEST_READY_URL for another target)." >&2
	  exit 1
	}

.PHONY: loadtest
# k6's Go heap churns with every frame: a lazier GC saves ~15% of its CPU for
# some memory (GOGC=400; set GOGC to override).
K6_ENV = K6_NO_USAGE_REPORT=true GOGC=$${GOGC:-400}

loadtest: k6 loadtest-stack-up ## Short ramp against `make up` (TARGET=500 RAMP=20s HOLD=40s; any ramp.js variable overrides)
	@echo "==> k6 run loadtest/ramp.js: TARGET=$${TARGET:=500} RAMP=$${RAMP:=20s} HOLD=$${HOLD:=40s} (results in loadtest/results/)"
	TARGET=$$TARGET RAMP=$$RAMP HOLD=$$HOLD $(K6_ENV) "$(K6)" run --quiet loadtest/ramp.js

.PHONY: loadtest-smoke
loadtest-smoke: k6 loadtest-stack-up ## 20 connections for 25 s, strict thresholds: is the stack sane?
	@SCENARIO=smoke $(K6_ENV) "$(K6)" run --quiet loadtest/ramp.js

.PHONY: loadtest-shard
loadtest-shard: k6 loadtest-stack-up ## TARGET over several k6 processes and source IPs (SHARDS=n, IPS=127.0.0.2-127.0.0.9), merged report
	@K6="$(K6)" $(K6_ENV) node loadtest/shard.js $(if $(SHARDS),--shards $(SHARDS)) $(if $(IPS),--ips $(IPS))

.PHONY: loadtest-check
loadtest-check: ## k6 inspect of every scenario: the script loads and its options are valid (needs k6: make k6)
	@k6=$$(test -x "$(K6)" && echo "$(K6)" || command -v k6 || true)
	[[ -n $$k6 ]] || { echo "error: k6 is not installed; run 'make k6'" >&2; exit 1; }
	for args in "SCENARIO=smoke" "SCENARIO=ramp" "SCENARIO=soak" "SCENARIO=ramp RECONNECT=1 TARGET=5000" "STAGES=10s:100,20s:100,10s:300,20s:300 SYMBOLS=AAPL,MSFT,BRK.B SUBS=2"; do
	  env $$args K6_NO_USAGE_REPORT=true "$$k6" inspect --execution-requirements loadtest/ramp.js >/dev/null \
	    || { echo "loadtest-check: k6 inspect failed with $$args" >&2; exit 1; }
	done
	echo "loadtest-check: ramp.js loads and its options are valid (smoke, ramp, soak, reconnect, stages) with $$("$$k6" version | head -n1)"

.PHONY: test-loadtest
test-loadtest: k6 ## Unit tests of loadtest/lib (node:test) and loadtest-check (builds the pinned k6 once)
	@node --test --test-reporter=spec loadtest/lib/*.test.js
	$(MAKE) --no-print-directory loadtest-check
