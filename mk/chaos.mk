# Chaos: long fault, slow-consumer and fuzz scenarios on real processes
# (harness/chaos/, see docs/operations.md). Not part of `make test`; their
# fast versions are (harness/testkit/test/{hostile-input,security,
# slow-consumer}.test.js). Each scenario runs in its own child process with
# a hard time limit; the slow-consumer one in a private network namespace
# when `unshare -n` works (root). Figures go to artifacts/chaos/.

##@ Chaos
.PHONY: chaos
chaos: deps ## All chaos scenarios (~15 min): Redis/fetcher/gateway faults, upstream failures, 10k slow consumers, 1M-frame fuzz; prints the figures
	@node harness/chaos/run.js

.PHONY: chaos-quick
chaos-quick: deps ## All chaos scenarios at smoke scale (~4 min): checks the scenarios, not figures to record
	@node harness/chaos/run.js --quick

.PHONY: chaos-redis
chaos-redis: deps ## Chaos: Redis kill -9 and restart, 3 cycles, 2 gateways, 2 fetchers, 300 clients
	@node harness/chaos/run.js redis

.PHONY: chaos-fetcher
chaos-fetcher: deps ## Chaos: one of two fetchers killed/stopped, the only fetcher restarted
	@node harness/chaos/run.js fetcher

.PHONY: chaos-gateway
chaos-gateway: deps ## Chaos: gateway SIGTERM, SIGKILL and hang with 1,000 reconnecting clients
	@node harness/chaos/run.js gateway

.PHONY: chaos-upstream
chaos-upstream: deps ## Chaos: http provider against a failing/hanging/resetting fake upstream
	@node harness/chaos/run.js upstream

.PHONY: chaos-slow
chaos-slow: deps ## Chaos: 1,000 clients stop reading among 9,000 live ones
	@node harness/chaos/run.js slow

.PHONY: chaos-fuzz
chaos-fuzz: deps ## Chaos: 1,000,000 fuzz frames over live connections, plus slowloris sockets
	@node harness/chaos/run.js fuzz

.PHONY: test-hostile
test-hostile: deps ## Only the fast bad-input, security and slow-consumer tests (they also run in make test)
	@node --test --test-concurrency=1 --test-reporter=spec harness/testkit/test/{hostile-input,security,slow-consumer}.test.js

.PHONY: chaos-record
chaos-record: deps ## make chaos, then write its figures table into docs/operations.md
	@node harness/chaos/run.js --record
