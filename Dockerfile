# wsps: ONE image for every service. The gateway, the quote-fetcher and the
# `helm test` probe share code (services/shared) and one lockfile, so one
# build, one SBOM and one scan cover them all; they differ only by command:
#
#   gateway        node services/gateway/bin/main.js          (:8080)
#   quote-fetcher  node services/quote-fetcher/bin/main.js    (:9090)
#   helm test      node services/gateway/bin/probe.js --url ws://... --symbol AAPL
#   operators      wsps help   (clients/cli: kubectl exec ... -- wsps tail AAPL)
#
# Build: `make release` (buildah, no Docker engine; tools/release.sh), or
#   docker build -t wsps:dev --build-arg BASE_IMAGE=<base> .
# The base is a build ARG: any image with node 24 (tools/versions.env pins the
# version) and /bin/sh. `make release` and the local cluster use a base built
# here from Debian (debootstrap) and the pinned, integrity-checked Node
# binary (infra/local-cluster/images.sh), so nothing is pulled. A base from a
# registry must be pinned by digest, e.g.
#   --build-arg BASE_IMAGE=docker.io/library/node:24-bookworm-slim@sha256:<digest>
# (`skopeo inspect --format '{{.Digest}}' docker://docker.io/library/node:24-bookworm-slim`);
# make release refuses a registry base without one. The default below is the
# local base, so an unpinned registry image is never used by accident.
# Only Dockerfile syntax that buildah also understands is used (no RUN
# --mount, no heredocs, no `# syntax=` line, which would make BuildKit pull a
# frontend image).
ARG BASE_IMAGE=localhost/wsps-base:bookworm-node24

# --- manifests: only the package.json files, so the npm layer below stays
# cached until a dependency changes (a source edit does not re-run npm ci).
FROM ${BASE_IMAGE} AS manifests
WORKDIR /src
COPY services ./services
COPY harness ./harness
COPY clients ./clients
RUN find services harness clients ! -type d ! -name package.json -delete \
 && find services harness clients -depth -type d -empty -delete

# --- deps: production dependencies of the runtime workspaces only (no
# devDependencies, no harness, no install scripts).
FROM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=manifests /src/services ./services
COPY --from=manifests /src/harness ./harness
COPY --from=manifests /src/clients ./clients
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
      --workspace=@wsps/gateway --workspace=@wsps/quote-fetcher --workspace=@wsps/shared --workspace=@wsps/protocol --workspace=@wsps/cli \
 && npm cache clean --force

# --- build: sources on top (tests and dev tooling are kept out by .dockerignore).
FROM deps AS build
COPY services/protocol ./services/protocol
COPY services/shared ./services/shared
COPY services/gateway ./services/gateway
COPY services/quote-fetcher ./services/quote-fetcher
# The JS client the gateway serves to its page at /client/ (public/client is
# a link to clients/js/src, whose protocol modules link to services/protocol).
COPY clients/js ./clients/js
COPY clients/cli ./clients/cli
# Workspaces the image does not run (the harness) must not leave links behind.
RUN rm -rf node_modules/@wsps/testkit node_modules/@wsps/bench harness

# --- runtime
FROM ${BASE_IMAGE} AS runtime
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="wsps" \
      org.opencontainers.image.description="WebSocket gateway and quote-fetcher for live stock quotes" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# npm and corepack are not needed at run time; dropping them removes most of
# what scanners flag in node base images. (Paths of the official node image;
# other bases simply have nothing there.)
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
           /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /opt/yarn-* /usr/local/bin/yarn /usr/local/bin/yarnpkg
ENV NODE_ENV=production \
    NODE_OPTIONS="--enable-source-maps --max-semi-space-size=8"
WORKDIR /app
COPY --from=build --chown=0:0 /app /app
RUN ln -s /app/clients/cli/bin/wsps.js /usr/local/bin/wsps
# Numeric, non-root, and owning nothing in the image (code is root-owned and
# read-only to it): works with runAsNonRoot and readOnlyRootFilesystem. No
# passwd entry is needed; the chart sets the same uid/gid.
USER 10001:10001
EXPOSE 8080 9090
# Signals: node runs as PID 1 directly (exec form, no shell, no tini). PID 1
# gets no default signal handlers from the kernel, but both services install
# their own SIGTERM/SIGINT handlers (readiness off, drain, exit), so SIGTERM
# works; they spawn no child processes, so there are no zombies to reap. Run
# other commands that do spawn children with `docker run --init` (tini).
STOPSIGNAL SIGTERM
CMD ["node", "services/gateway/bin/main.js"]
