# Alert rules (charts/wsps/files/prometheus/wsps-alerts.yaml, also rendered as
# the chart's PrometheusRule): promtool from the pinned Prometheus module
# (infra/local-cluster/build-bins.sh prometheus, cached in $(WSPS_CACHE)/cluster;
# PROMETHEUS_VERSION from tools/versions.env).
TEST_TARGETS += test-alerts
PROMTOOL = $(WSPS_CACHE)/cluster/prometheus-$(PROMETHEUS_VERSION)/bin/promtool

##@ Alerts
.PHONY: promtool
promtool: ## Build promtool (and prometheus) from the pinned Prometheus module into the cache
	@infra/local-cluster/build-bins.sh prometheus

.PHONY: test-alerts
test-alerts: promtool ## promtool check + unit tests of the alert rules (charts/wsps/tests/promtool)
	@$(PROMTOOL) check rules charts/wsps/files/prometheus/wsps-alerts.yaml
	@$(PROMTOOL) test rules charts/wsps/tests/promtool/*.test.yaml
