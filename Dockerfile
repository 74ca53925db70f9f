# The relay image: the relay and the node agent (`relay node-agent`) as one standalone bundle, dist/relay.js.
# Build: docker build -t ghcr.io/hami-explain/relay:0.1.0 .   (docs/deploy.md, "Relay image")

# Stage 1: install the pinned toolchain and bundle the relay with esbuild (every dependency inlined).
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
# Install scripts of dependencies are all denied anyway (package.json allowScripts); skip them outright.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY lib ./lib
RUN node scripts/build.mjs relay

# Stage 2: only Node.js and the bundle. Distroless (glibc, no shell, no package manager): small, and the
# NVIDIA container toolkit's nvidia-smi, which the node agent runs, needs glibc (an Alpine base has musl).
FROM gcr.io/distroless/nodejs24-debian12:nonroot
WORKDIR /app
COPY --from=build /src/dist/relay.js /app/dist/relay.js
# The distroless "nonroot" user; the chart runs with a read-only root filesystem and this uid.
USER 65532:65532
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/relay.js"]
