# The README's quick start on a fresh clone (tools/test-up.sh).
TEST_TARGETS += test-up

##@ Test
.PHONY: test-up
test-up: ## Fresh clone -> make up -> protocol probe through nginx -> make down leaves no process or port behind
	@tools/test-up.sh
