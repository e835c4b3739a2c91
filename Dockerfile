# The worker image (docker-compose.yml's `worker`, `migrate` and `mail-sandbox` services).
#   docker build -t order-confirmation-mail-worker .
# NODE_VERSION must equal deploy/stack.env's (test/stack/composeDrift.test.ts checks it). Debian bookworm-slim
# is glibc, which the Temporal SDK's native module (@temporalio/core-bridge) is built for; Alpine's musl is not.
ARG NODE_VERSION=20.20.2

# --- build: compile TypeScript and bundle the workflow code once --------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build \
 && cp -R src/db/migrations dist/db/migrations \
 && node --import tsx src/cli/bundle-workflows.ts dist/workflow-bundle.js

# --- dependencies: production only -------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js \
    WORKER_HTTP_BIND_ADDRESS=0.0.0.0:9464
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
