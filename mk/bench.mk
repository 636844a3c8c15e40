# Side-by-side benchmarks (harness/bench, docs/benchmarks/README.md). Not
# part of `make test`: they load the machine for minutes and their numbers
# are measurements, not assertions.

BENCH_OUT ?= docs/benchmarks
BENCH_QUICK_OUT ?= .run/bench-quick
BENCH_PROXY_OUT ?= .run/bench-proxy
BENCH_BOOKS_PROFILE ?= full
BENCH_PROXY_PROFILE ?= full

##@ Benchmarks
.PHONY: bench-deps
bench-deps: deps ## Install what the benchmarks need: the Go programs (loadgen, floor, hiccup), pushpin, nginx, plotting venv
	@harness/bench/scripts/setup.sh

.PHONY: bench
bench: bench-deps ## Full side-by-side run (~30 min, every section): wsps vs naive vs Centrifugo vs Socket.IO vs Pushpin; writes docs/benchmarks/
	@node harness/bench/src/bench.js --profile=full --out=$(BENCH_OUT) --bin=$(WSPS_CACHE)/bench/bin
	$(WSPS_CACHE)/bench/venv-plot/bin/python harness/bench/scripts/plot.py $(BENCH_OUT)

.PHONY: bench-quick
bench-quick: bench-deps ## Reduced run (~13 min) for iteration; writes .run/bench-quick/ (BENCH_QUICK_OUT)
	@node harness/bench/src/bench.js --profile=quick --out=$(BENCH_QUICK_OUT) --bin=$(WSPS_CACHE)/bench/bin
	$(WSPS_CACHE)/bench/venv-plot/bin/python harness/bench/scripts/plot.py $(BENCH_QUICK_OUT)

.PHONY: bench-compression
bench-compression: bench-deps ## Only the compression section (~3 min): permessage-deflate off vs on, merge and distinct; writes docs/benchmarks/compression.md and .json
	@node harness/bench/src/bench.js --profile=full --only=compression --out=.run/bench-compression --bin=$(WSPS_CACHE)/bench/bin
	node harness/bench/scripts/compression-report.js .run/bench-compression/results.json $(BENCH_OUT)

.PHONY: bench-books
bench-books: bench-deps ## Only the order book section (~5-8 min): wsps deltas vs a naive full-top-25 server, 50 books, up to 10,000 subscribers at depth 25; writes docs/benchmarks/books.md and .json
	@node harness/bench/src/bench.js --profile=$(BENCH_BOOKS_PROFILE) --only=books --out=.run/bench-books --bin=$(WSPS_CACHE)/bench/bin
	node harness/bench/scripts/books-report.js $(BENCH_OUT) .run/bench-books/results.json

.PHONY: bench-proxy
bench-proxy: bench-deps ## Only the proxy section (~10 min): direct vs nginx vs HAProxy vs the F5 controller's nginx, 3 core layouts; writes .run/bench-proxy/ (BENCH_PROXY_OUT, BENCH_PROXY_PROFILE=full|quick|smoke)
	@node harness/bench/src/bench.js --profile=$(BENCH_PROXY_PROFILE) --only=proxy --out=$(BENCH_PROXY_OUT) --bin=$(WSPS_CACHE)/bench/bin
	$(WSPS_CACHE)/bench/venv-plot/bin/python harness/bench/scripts/plot.py $(BENCH_PROXY_OUT)

.PHONY: bench-plot
bench-plot: bench-deps ## Redraw the PNG plots from docs/benchmarks/results.json
	@$(WSPS_CACHE)/bench/venv-plot/bin/python harness/bench/scripts/plot.py $(BENCH_OUT)
