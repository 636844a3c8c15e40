# Python SDK (clients/python, package wsps-client): a venv in the cache keyed
# by the pinned requirements (clients/python/requirements-test.txt) and the
# interpreter; the package itself is built from the repository and installed
# into it on every run, then pytest runs its unit tests and its tests against
# a real stack (clients/python/tests/stack.js: redis, fetcher, two gateways).

# In `make test`: passed three runs in a row from a clean state (venv deleted first).
TEST_TARGETS += test-python

PYTHON ?= python3
PY_DIR := clients/python
PY_PINS := $(PY_DIR)/requirements-test.txt
PY_VENV = $(WSPS_CACHE)/python-venv-$(shell { cat $(PY_PINS); $(PYTHON) -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-12)

##@ Python SDK
.PHONY: python-venv
python-venv: ## Create the Python SDK's test venv in the cache (once per set of pins)
	@if [[ -f $(PY_VENV)/.complete ]]; then exit 0; fi
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "test-python needs Python >= 3.10")'
	echo "==> creating $(PY_VENV) (pins: $(PY_PINS))"
	rm -rf $(PY_VENV)
	$(PYTHON) -m venv $(PY_VENV)
	echo "==> installing the pinned requirements from PyPI"
	$(PY_VENV)/bin/python -m pip install --disable-pip-version-check --progress-bar on -r $(PY_PINS)
	touch $(PY_VENV)/.complete
	echo "==> venv ready"

.PHONY: test-python
test-python: deps python-venv ## Python SDK: install clients/python into its venv, pytest (unit + real gateways)
	@echo "==> installing wsps-client from $(PY_DIR)"
	$(PY_VENV)/bin/python -m pip install --disable-pip-version-check --quiet --no-deps --no-build-isolation --force-reinstall ./$(PY_DIR)
	cd $(PY_DIR) && $(PY_VENV)/bin/python -m pytest -p no:cacheprovider -q tests
