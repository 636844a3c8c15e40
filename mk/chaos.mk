# Chaos: long fault, slow-consumer and fuzz scenarios on real processes
# (harness/chaos/, see docs/operations.md). Not part of `make test` but for
# the fault campaign's 5-minute run (test-campaign); their
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

# The fault campaign (harness/chaos/campaign/, issue 46 item 5): a seeded
# nemesis against 2 gateways, 2 fetchers and Redis under distinct
# subscribers, then a checker over every tick every client got. The seed
# names the schedule: a failing campaign is replayed with the same SEED.
# VARIANT links: standalone Redis, each service's link through its own
# Toxiproxy proxy (silent, slow, reset links); sentinel: primary, 2
# replicas, 3 Sentinels (failovers), no link faults. PROVIDER sim or
# ws-stream (the fake vendor, alpaca dialect). The clock-skew fault needs
# libfaketime (Debian: apt-get install -y faketime).
SEED ?= 1
DURATION ?= 60m
VARIANT ?= links
PROVIDER ?= sim
CAMPAIGN_CLIENTS ?= 8
# make test's run: a fixed seed, so a red CI run is replayed exactly.
TEST_CAMPAIGN_SEED ?= 46
TEST_TARGETS += test-campaign

.PHONY: chaos-campaign
chaos-campaign: deps ## Fault campaign, Jepsen-style (SEED=1 DURATION=60m VARIANT=links|sentinel PROVIDER=sim|ws-stream): report in artifacts/chaos/campaign-<seed>.{md,json}
	@tools/tools.sh toxiproxy
	@node harness/chaos/campaign/run.js --seed $(SEED) --duration $(DURATION) --variant $(VARIANT) --provider $(PROVIDER) --clients $(CAMPAIGN_CLIENTS)

.PHONY: test-campaign
test-campaign: deps ## The fault campaign's short run in make test: 5 min, links + ws-stream, seed $(TEST_CAMPAIGN_SEED) (the other variant: make chaos-campaign VARIANT=sentinel)
	@tools/tools.sh toxiproxy
	@# The clock-skew fault runs the fetcher under libfaketime.
	tools/apt.sh test-campaign faketime
	node harness/chaos/campaign/run.js --seed $(TEST_CAMPAIGN_SEED) --duration 5m --variant links --provider ws-stream --clients $(CAMPAIGN_CLIENTS)

.PHONY: test-campaign-unit
test-campaign-unit: ## Unit tests of the campaign's checker and nemesis (pure, a second)
	@node --test --test-reporter=spec harness/chaos/campaign/test/*.test.js
