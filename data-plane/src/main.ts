import { hostname } from "node:os";
import { Gauge } from "prom-client";
import { join } from "node:path";
import { redisNames, usageShard, usageShardCount, usageShardFor } from "./contract/index.ts";
import { connectRedis, onCredentialsRefusedAtStart, redactRedisUrl, redisUrlHasCredentials } from "./redis/connect.ts";
import { parseMasterKey } from "./crypto/secret-box.ts";
import { createLogger } from "./logger.ts";
import { OutageLog } from "./logging/outage-log.ts";
import { createDataPlaneOptions } from "./runtime.ts";
import { createGatewayServer } from "./http/server.ts";
import { createDataPlaneHandler } from "./server/app.ts";
import { applyHeapFlags } from "./memory.ts";
import { initTracing } from "./telemetry/tracing.ts";
import { RedisPolicySource } from "./snapshot/redis-feed.ts";
import { SnapshotStore } from "./snapshot/store.ts";
import { RedisUsageSink } from "./usage/sink.ts";
import { UsageSpool } from "./usage/spool.ts";
import { usageEntryKey } from "./usage/entry-signature.ts";

// A data-plane replica (distributed mode): stateless; policy from the Redis policy feed, usage to the Redis stream.

// Before the first full collection: with MODELGATE_HEAP_GROWING_PERCENT set, the old generation grows at most
// that much past what the last one left alive (memory.ts; off by default).
applyHeapFlags();
const logger = createLogger("modelgate-data-plane");
const tracing = await initTracing("modelgate-data-plane");
// The spool holds usage events: what this process writes is private to its user.
process.umask(0o077);
const env = process.env;
if (!env.REDIS_URL) {
  console.error("REDIS_URL is required for the data plane (distributed mode). For one process, use `npm start`.");
  process.exit(2);
}
if (!env.MODELGATE_MASTER_KEY) {
  console.error(
    "MODELGATE_MASTER_KEY is required (the same value as the control plane's) to decrypt upstream credentials.",
  );
  process.exit(2);
}
const names = redisNames();
// Fail fast while Redis is away: limits fall back to in-process, usage goes to the disk spool.
const redisOptions = { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 1_000 } as const;
const redis = connectRedis(env.REDIS_URL, redisOptions);
// Policy loads on a connection of its own: a full load's replies must not hold up the request path's small
// replies queued behind them on one socket.
const snapshotRedis = connectRedis(env.REDIS_URL, redisOptions);
const subscriber = connectRedis(env.REDIS_URL, { lazyConnect: false });
if (!redisUrlHasCredentials(env.REDIS_URL))
  logger.warn(
    { redis: redactRedisUrl(env.REDIS_URL) },
    "REDIS_URL carries no credentials: whoever reaches this Redis can change the policy this replica enforces. " +
      "Run Redis with a password or an ACL user (docs/deployment.md)",
  );
onCredentialsRefusedAtStart([redis, snapshotRedis, subscriber], (err) => {
  logger.fatal(
    { redis: redactRedisUrl(env.REDIS_URL!), err: err.message },
    "Redis refused this replica's credentials: check the user and password in REDIS_URL",
  );
  process.exit(2);
});
// An outage is logged as a change of state, then one summary line per interval, then the recovery: not a
// line per failed request or reconnect attempt.
// Its end follows health: every connection ready and no failure for a second (outage-log.ts).
const outage = new OutageLog(logger, Number(env.MODELGATE_LOG_SUMMARY_MS ?? 30_000), Date.now, {
  healthy: () => [redis, snapshotRedis, subscriber].every((r) => r.status === "ready"),
});
for (const r of [redis, snapshotRedis, subscriber]) {
  r.on("error", (err) => outage.failure("redis", "connection", err));
  r.on("ready", () => outage.recovered("redis"));
}

const store = new SnapshotStore((kind, id, err) =>
  logger.error({ kind, id: kind === "key" ? `${id.slice(0, 8)}…` : id, err }, "invalid policy entity ignored"),
);
// A full load reads and builds the shards on a worker thread (snapshot/load-worker.ts), on a connection of its
// own opened with the same URL and options as snapshotRedis; MODELGATE_POLICY_LOAD=thread keeps it on the main
// thread (a fallback, and the A/B of bench:keys).
const loadIn = env.MODELGATE_POLICY_LOAD || "worker";
if (loadIn !== "worker" && loadIn !== "thread") {
  console.error(`MODELGATE_POLICY_LOAD must be "worker" or "thread", not ${JSON.stringify(loadIn)}`);
  process.exit(2);
}
// MODELGATE_POLICY_LOAD_NICE: the load worker thread's nice value (0–19), so that on a busy machine the calls
// being served get the CPU first and the load the rest.
const loadNice = Number(env.MODELGATE_POLICY_LOAD_NICE ?? 0);
if (!Number.isInteger(loadNice) || loadNice < 0 || loadNice > 19) {
  console.error(
    `MODELGATE_POLICY_LOAD_NICE must be an integer from 0 to 19, not ${JSON.stringify(env.MODELGATE_POLICY_LOAD_NICE)}`,
  );
  process.exit(2);
}
const source = new RedisPolicySource(
  snapshotRedis,
  subscriber,
  store,
  names,
  250,
  (err) => outage.failure("redis", "policy feed (serving the last policy)", err),
  {
    loadIn,
    connection: { url: env.REDIS_URL, options: { ...redisOptions } },
    workerNice: loadNice,
    // MODELGATE_POLICY_LOAD_SHARED=0: the load worker transfers its tables instead of sharing them (an A/B)
    sharedTables: env.MODELGATE_POLICY_LOAD_SHARED !== "0",
  },
);
// A worker of a multi-worker data plane (workers.ts) has a folder of its own.
const worker = env.MODELGATE_WORKER_INDEX === undefined ? "" : `-w${env.MODELGATE_WORKER_INDEX}`;
const spoolDir =
  (env.MODELGATE_SPOOL_DIR ?? join(env.MODELGATE_DATA_DIR ?? "./data", `spool-${hostname()}-${env.PORT ?? 8080}`)) +
  worker;
const spool = await UsageSpool.open(spoolDir, {
  onError: (err) => logger.error({ err }, "usage spool error"),
  // replays that find Redis still away: counted in the outage's summary, not a line a second
  onSendError: (err) => outage.failure("redis", "usage replay (kept on disk)", err),
});
// This replica's usage stream shard: one per replica, spread by a hash of its identity (MODELGATE_USAGE_SHARDS).
const shard = usageShardFor(`${hostname()}:${process.pid}:${env.PORT ?? 8080}${worker}`, usageShardCount(env));
const masterKey = parseMasterKey(env.MODELGATE_MASTER_KEY);
const usage = new RedisUsageSink(
  redis,
  usageShard(names.prefix, shard),
  // entries are signed with a key derived from the master key: the control plane settles no other
  usageEntryKey(masterKey),
  spool,
  (err) => outage.failure("redis", "usage write (spooled to disk)", err),
  1_000,
  Number(env.MODELGATE_USAGE_RETAIN_MS ?? 30_000),
  (count) => logger.warn({ count }, "Redis restarted: re-sending recent usage events it may have lost"),
  500,
  Number(env.MODELGATE_USAGE_RETAIN_MB ?? 64) * 1024 * 1024,
);
let draining = false;
const options = createDataPlaneOptions({
  store,
  usage,
  logger,
  masterKey,
  ready: () => !draining,
  dependencies: () => ({
    redis: redis.status,
    snapshotRedis: snapshotRedis.status,
    snapshotSubscription: subscriber.status,
    // whether the policy channel's subscription delivers (checked every 5 s by a ping of its own): "not live"
    // leaves the replica ready, following policy by its 250 ms poll, and it subscribes again (distributed.md)
    policySubscription: source.subscriptionLive === null ? "unknown" : source.subscriptionLive ? "live" : "not live",
  }),
  redis: { client: redis, prefix: names.prefix, subscriber },
  outage,
});
const handler = createDataPlaneHandler(options, true);
new Gauge({
  name: "modelgate_policy_subscription_live",
  help: "1 while this replica's policy-channel subscription delivers (its own ping came back), 0 when not (it then follows policy by its poll alone)",
  registers: [options.metrics.registry],
  collect() {
    this.set(source.subscriptionLive === true ? 1 : 0);
  },
});

// Breaker states for the control plane's operator alerts, every few seconds, never from the request path. A
// replica that stops reporting ages out there (reports older than 15 s are ignored).
const replicaId = `${hostname()}:${process.pid}:${env.PORT ?? 8080}${worker}`;
const reportBreakers = () => {
  redis
    .hset(
      names.breakerReports,
      replicaId,
      JSON.stringify({ at: Date.now(), states: options.breakers.states(Date.now()) }),
    )
    .catch(() => undefined);
};
const breakerReports = setInterval(reportBreakers, Number(env.MODELGATE_BREAKER_REPORT_MS ?? 2_000));
breakerReports.unref();

// Wait (briefly) for Redis so the policy loads now rather than at the first poll.
await new Promise<void>((resolve) => {
  if (snapshotRedis.status === "ready") return resolve();
  const t = setTimeout(resolve, 5_000);
  snapshotRedis.once("ready", () => {
    clearTimeout(t);
    resolve();
  });
});
await source.start().catch((err) => logger.warn({ err }, "no policy yet; waiting for the control plane"));
const server = createGatewayServer((req, res) => void handler(req, res));
const port = Number(env.PORT ?? 8080);
server.listen(port, env.HOST ?? "0.0.0.0", () =>
  logger.info({ port, host: hostname(), snapshotVersion: store.version }, "data plane listening"),
);

const stop = async () => {
  if (draining) process.exit(1);
  draining = true;
  server.closeIdleConnections();
  const force = setTimeout(() => server.closeAllConnections(), Number(env.MODELGATE_DRAIN_MS ?? 25_000));
  force.unref();
  await new Promise<void>((r) => server.close(() => r()));
  clearInterval(breakerReports);
  await redis.hdel(names.breakerReports, replicaId).catch(() => undefined);
  await usage.close();
  await source.stop();
  await options.close();
  await tracing?.shutdown();
  redis.disconnect();
  snapshotRedis.disconnect();
  subscriber.disconnect();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
// A worker leaves Ctrl-C to its primary, which passes SIGTERM on: the terminal signals the whole process
// group, and a second signal would cut the drain short.
process.on("SIGINT", () => (worker ? undefined : void stop()));
