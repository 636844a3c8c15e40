# JS client (clients/js, npm package @wsps/client): the module the gateway's
# page imports (served at /client/) and every Node test uses. Packed from a
# staging folder (clients/js/scripts/pack.js): its protocol modules are links
# into services/protocol, and its TypeScript declarations are generated from
# the JSDoc at pack time, never checked in.

TEST_TARGETS += test-client-js

##@ JS client
.PHONY: client-js-pack
client-js-pack: deps ## Pack @wsps/client (declarations generated from its JSDoc) into artifacts/
	@node clients/js/scripts/pack.js --out artifacts >/dev/null
	echo "==> artifacts/wsps-client-$$(node -p 'require("./clients/js/package.json").version').tgz"

.PHONY: test-client-js
test-client-js: deps ## @wsps/client: pack it, check the tarball's files, install it offline in a scratch project, import and type-check it
	@node --test --test-reporter=spec clients/js/test/*.test.js
