# modelgate: one image for every mode (embedded, control plane, data plane); the command picks the mode.
# Build stage: a full install, `npm run build` (data plane, control plane with its Prisma client, console) and the
# release tree (scripts/release-tree.sh: built JavaScript, package files, migrations). Runtime stage: that tree
# installed with `npm ci --omit=dev`, run as an unprivileged user. CI proves the same steps without a Docker engine
# (scripts/release-smoke.sh).

FROM node:20-bookworm-slim AS build
WORKDIR /src
ENV TURBO_TELEMETRY_DISABLED=1
COPY . .
RUN npm ci --no-audit --no-fund && SKIP_BUILD=0 scripts/release-tree.sh /release

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production PORT=8080 MODELGATE_DATA_DIR=/data
WORKDIR /app
COPY --from=build /release/ ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
  && mkdir -p /data && chown node:node /data
# The image's own user (uid 1000), never root; /data holds the embedded database, the spool and the master key.
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# Embedded mode by default; distributed mode: node control-plane/dist/main/control-plane.js or data-plane/dist/workers.js
CMD ["node", "control-plane/dist/main/embedded.js"]
