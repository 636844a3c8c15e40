# The README's quick start on a fresh clone, and the shell blocks of README.md
# and docs/ run as written against it (tools/test-up.sh, tools/doc-blocks.js).
TEST_TARGETS += test-up

##@ Test
.PHONY: test-up
test-up: ## Fresh clone -> make up -> probe -> the docs' shell blocks as written (also with AUTH=hs256) -> make down leaves nothing behind
	@tools/test-up.sh

.PHONY: test-docs
test-docs: ## The docs' shell blocks: marked and parsed, and the test:up ones against the make up running here
	@node tools/doc-blocks.js check
	@node tools/doc-blocks.js run up
