# make capacity (docs/capacity.md, "Measured: make capacity"): TARGET
# connections held on this one machine. Not part of `make test`.

# The full run (TARGET 1000000) defaults to the settings it was measured
# with (docs/capacity.md, "TARGET=1000000, measured"): at RATE 20 and 30 s
# pings the held connections' own traffic took this 2-core machine's CPU
# from the ramp. Smaller runs keep the quicker ones (HOLD covers two
# publisher cycles, 1,000 symbols / RATE, either way).
TARGET ?= 1000000
FULL_RUN = $(filter 1000000,$(TARGET))
HOLD ?= $(if $(FULL_RUN),400,120)
RATE ?= $(if $(FULL_RUN),5,20)
HEARTBEAT_MS ?= $(if $(FULL_RUN),120000,30000)

##@ Capacity
.PHONY: capacity
capacity: deps ## Hold TARGET connections on this machine (HOLD s, RATE quotes/s); root raises kernel limits and restores them. TARGET=40000: a few minutes
	@harness/bench/scripts/setup.sh loadgen
	@harness/capacity/run.sh --target=$(TARGET) --hold=$(HOLD) --rate=$(RATE) --heartbeat-ms=$(HEARTBEAT_MS) --loadgen=$(WSPS_CACHE)/bench/bin/loadgen

.PHONY: capacity-restore
capacity-restore: ## Restore the kernel limits a killed `make capacity` left raised
	@harness/capacity/kernel.sh restore $(WSPS_CACHE)/capacity/kernel-saved.tsv
