# Release artifacts (tools/release.sh): the image as an OCI archive and the
# packaged chart in artifacts/release/, pushed when REGISTRY is set.
#   make release                                  build both (nothing pulled)
#   make release REGISTRY=127.0.0.1:5000          ... and push image + chart
#   make release VERSION=0.2.0 BASE_IMAGE=docker.io/library/node:24-bookworm-slim@sha256:...
# artifacts/release/release.env lists what was made (IMAGE_ARCHIVE,
# CHART_PACKAGE; with REGISTRY also IMAGE, IMAGE_DIGEST, CHART_REF).

##@ Release
.PHONY: release
release: chart-tools ## Image as OCI archive + packaged chart in artifacts/release (push both: REGISTRY=host:port; VERSION=, BASE_IMAGE=name@sha256:)
	@VERSION='$(VERSION)' REGISTRY='$(REGISTRY)' RELEASE_BASE_IMAGE='$(BASE_IMAGE)' tools/release.sh
