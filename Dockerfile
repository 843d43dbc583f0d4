# The service as a small, non-root image. Node.js 24 runs the TypeScript sources directly (type
# stripping), so there is no build step; only the runtime dependencies are installed.
# NODE_IMAGE: another Node.js 24 image on Debian (a mirror, or the official one pinned by digest).
ARG NODE_IMAGE=node:24-bookworm-slim
FROM ${NODE_IMAGE} AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no dependency of the service needs an install script.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY docs ./docs
COPY packages/sdk/package.json packages/sdk/README.md ./packages/sdk/
COPY packages/sdk/src ./packages/sdk/src
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
# /readyz: the process is up and its storage answers.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM lets waiters answer and requests finish before the process exits.
STOPSIGNAL SIGTERM
# --max-semi-space-size=32: as `npm start` (package.json), see docs/operations.md.
CMD ["node", "--max-semi-space-size=32", "src/main.ts"]
