# Browser client: the page the gateway serves at / and the WspsClient module
# (services/gateway/public/). Its tests start their own redis, fetcher and
# gateways on free ports, so they never collide with a running `make up`.

TEST_TARGETS += test-browser

CHROMIUM := /usr/bin/chromium

##@ Browser
.PHONY: test-browser
test-browser: deps ## Browser client tests: the page in headless Chromium, WspsClient in Node, against a stack of their own
	@if [[ ! -x $(CHROMIUM) ]]; then
	  if [[ $$(id -u) -eq 0 ]]; then
	    echo "==> installing Debian's chromium (the tests drive it with playwright-core; ~100 MB, once)"
	    # a fresh machine (or container) may have no package lists yet
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
	  else
	    echo "test-browser needs Debian's chromium at $(CHROMIUM); install it with: sudo apt-get install -y chromium" >&2
	    exit 1
	  fi
	fi
	# One file at a time: each starts a whole stack, and there are 2 cores.
	# bash expands the glob (node --test does too since 21; the shell is explicit).
	node --test --test-concurrency=1 --test-reporter=spec services/gateway/test/browser/*.test.js
