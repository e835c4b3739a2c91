# The worker image (docker-compose.yml's `worker` and `migrate` services): compiled JavaScript and production
# dependencies only. The last stage is the default target:
#   docker build -t order-confirmation-mail-worker .
# NODE_VERSION must equal deploy/stack.env's (test/stack/composeDrift.test.ts checks it). Debian bookworm-slim
# is glibc, which the Temporal SDK's native module (@temporalio/core-bridge) is built for; Alpine's musl is not.
ARG NODE_VERSION=24.22.3

# --- build: compile the product (src/ alone) and bundle the workflow code once --------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
# Only src/: the tools in dev/ (demo, native stack, sandboxes, devtools, benchmark) are not in this stage, so
# nothing of theirs can be compiled into dist/. The build copies the migrations next to dist/db/migrator.js.
COPY src ./src
RUN npm run build && node dist/cli/bundle-workflows.js dist/workflow-bundle.js

# --- the mail sandbox: docker-compose.yml's stand-in for the mail provider. A dev tool, run from its TypeScript
# sources with the dev dependencies; `docker build --target mail-sandbox`. Never part of the worker image.
FROM build AS mail-sandbox
COPY packages/sandbox ./packages/sandbox
COPY dev ./dev
USER node
EXPOSE 4010
CMD ["node", "--import", "tsx", "packages/sandbox/src/cli.ts"]

# --- dependencies: production only, slimmed to what the image runs -----------------------------------------
# scripts/prune-image-modules.mjs keeps the core bridge's native module of the target architecture alone
# (TARGETARCH: amd64 or arm64, set by `docker buildx build --platform`) and drops the workflow bundler's
# toolchain (the image runs the prebuilt bundle): 311 MB of node_modules become 76 MB (docs/production.md).
# test/stack/imageModules.test.ts runs the same script on a production install and every feature from it.
FROM node:${NODE_VERSION}-bookworm-slim AS dependencies
ARG TARGETARCH
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/prune-image-modules.mjs /tmp/prune-image-modules.mjs
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
  && node /tmp/prune-image-modules.mjs /app "${TARGETARCH:-$(dpkg --print-architecture)}"

# --- runtime ------------------------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js \
    WORKER_HTTP_BIND_ADDRESS=127.0.0.1:9464
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# The base image's unprivileged user; nothing in /app is writable by it.
USER node
EXPOSE 9464
# /readyz: the worker polls Temporal and Postgres answers. Starting takes a few seconds (the start period).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9464/readyz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1's only process (exec form, no shell, no npm), so `docker stop`'s SIGTERM reaches it; the
# Temporal runtime then lets sends in flight finish (WORKER_SHUTDOWN_GRACE_MS). Give the container at least
# that long: docker-compose.yml sets stop_grace_period accordingly.
CMD ["node", "dist/worker.js"]
