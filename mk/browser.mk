# Browser client: the page the gateway serves at / and the WspsClient module
# (services/gateway/public/). Its tests start their own redis, fetcher and
# gateways on free ports, so they never collide with a running `make up`.

TEST_TARGETS += test-browser

CHROMIUM := /usr/bin/chromium

##@ Browser
.PHONY: test-browser
test-browser: deps ## Browser client tests: the page in headless Chromium, WspsClient in Node, against a stack of their own
	@# Debian's chromium (the tests drive it with playwright-core; ~100 MB, once).
	tools/apt.sh test-browser chromium
	# One file at a time: each starts a whole stack, and there are 2 cores.
	# bash expands the glob (node --test does too since 21; the shell is explicit).
	node --test --test-concurrency=1 --test-reporter=spec services/gateway/test/browser/*.test.js
