import { createServer } from "node:http";
import { hostname } from "node:os";
import { Redis } from "ioredis";
import { redisNames } from "./contract/index.ts";
import { parseMasterKey } from "./crypto/secret-box.ts";
import { createLogger } from "./logger.ts";
import { createDataPlaneHandler } from "./server/app.ts";
import { RedisSnapshotSource } from "./snapshot/redis-source.ts";
import { SnapshotStore } from "./snapshot/store.ts";
import { DemoTransport } from "./upstreams/demo.ts";
import { UndiciTransport } from "./upstreams/transport.ts";
import { RedisUsageSink } from "./usage/sink.ts";

// A data-plane replica (distributed mode): stateless; policy from the Redis snapshot, usage to the Redis stream.

const logger = createLogger("modelgate-data-plane");
const env = process.env;
if (!env.REDIS_URL) {
  console.error("REDIS_URL is required for the data plane (distributed mode). For one process, use `npm start`.");
  process.exit(2);
}
if (!env.MODELGATE_MASTER_KEY) {
  console.error("MODELGATE_MASTER_KEY is required (the same value as the control plane's) to decrypt upstream credentials.");
  process.exit(2);
}
const names = redisNames();
const redisOptions = { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false } as const;
const redis = new Redis(env.REDIS_URL, redisOptions);
const subscriber = new Redis(env.REDIS_URL, { lazyConnect: false });
for (const r of [redis, subscriber]) r.on("error", (err) => logger.warn({ err: err.message }, "redis error"));

const store = new SnapshotStore();
const source = new RedisSnapshotSource(redis, subscriber, store, names, 2_000, (err) => logger.warn({ err }, "snapshot reload failed; serving the last one"));
const usage = new RedisUsageSink(redis, names.usageStream, (err, e) => logger.error({ err, requestId: e.requestId }, "usage event not written"));
const transport = new UndiciTransport();
let draining = false;
const handler = createDataPlaneHandler(
  {
    store,
    usage,
    transport,
    demo: new DemoTransport(),
    logger,
    masterKey: parseMasterKey(env.MODELGATE_MASTER_KEY),
    maxBodyBytes: Number(env.MODELGATE_MAX_BODY_BYTES ?? 8 * 1024 * 1024),
    ready: () => !draining,
  },
  true,
);

await source.start().catch((err) => logger.warn({ err }, "no snapshot yet; waiting for the control plane"));
const server = createServer((req, res) => void handler(req, res));
server.keepAliveTimeout = 65_000;
const port = Number(env.PORT ?? 8080);
server.listen(port, env.HOST ?? "0.0.0.0", () => logger.info({ port, host: hostname(), snapshotVersion: store.version }, "data plane listening"));

const stop = async () => {
  if (draining) process.exit(1);
  draining = true;
  server.closeIdleConnections();
  const force = setTimeout(() => server.closeAllConnections(), Number(env.MODELGATE_DRAIN_MS ?? 25_000));
  force.unref();
  await new Promise<void>((r) => server.close(() => r()));
  await usage.flush();
  await source.stop();
  await transport.close();
  redis.disconnect();
  subscriber.disconnect();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
