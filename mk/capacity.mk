# make capacity (docs/capacity.md, "Measured: make capacity"): TARGET
# connections held on this one machine. Not part of `make test`.

TARGET ?= 1000000
HOLD ?= 120
RATE ?= 20

##@ Capacity
.PHONY: capacity
capacity: deps ## Hold TARGET connections on this machine (HOLD s, RATE quotes/s); root raises kernel limits and restores them. TARGET=40000: a few minutes
	@harness/bench/scripts/setup.sh loadgen
	@harness/capacity/run.sh --target=$(TARGET) --hold=$(HOLD) --rate=$(RATE) --loadgen=$(WSPS_CACHE)/bench/loadgen

.PHONY: capacity-restore
capacity-restore: ## Restore the kernel limits a killed `make capacity` left raised
	@harness/capacity/kernel.sh restore $(WSPS_CACHE)/capacity/kernel-saved.tsv
