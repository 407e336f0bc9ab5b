import type { IncomingMessage, ServerResponse } from "node:http";
import { hostname } from "node:os";
import type { Redis } from "ioredis";
import {
  redisNames,
  usageShards,
  connectRedis,
  isRedisUnavailableError,
  OutageLog,
  onCredentialsRefusedAtStart,
  redactRedisUrl,
  redisUrlHasCredentials,
  subscribeWhenReady,
  createLogger,
  createGatewayServer,
  initTracing,
  inSpan,
  usageEntryKey,
  wholeNumberEnv,
} from "@modelgate/data-plane";
import { audit } from "../audit/record.ts";
import { type AlertRunner, readBreakerReports } from "../alerts/runner.ts";
import { chain, notFound } from "../http/app.ts";
import { RedisPolicyBus } from "../snapshot/redis-bus.ts";
import { RedisUsageConsumer } from "../usage/redis-consumer.ts";
import { exportsIdle } from "../exports/runner.ts";
import { settleUsageBatch } from "../usage/settle.ts";
import { followKeyReports, keyDisabledReported, redisKeyStates } from "./key-reports.ts";
import { clearEnabledKeyStates } from "../services/upstream-keys.ts";
import { bootControlPlane } from "./bootstrap.ts";
import { controlPlaneRoutes } from "./routes.ts";
import { readSettings } from "../settings/settings.ts";
import { onShutdown, within } from "./shutdown.ts";

// The control plane (distributed mode): Postgres is the record; policy changes out and usage in through Redis.

const logger = createLogger("modelgate-control-plane");
const tracing = await initTracing("modelgate-control-plane");
const settings = readSettings(process.env, 8081);
if (!settings.databaseUrl || !settings.redisUrl) {
  console.error(
    "DATABASE_URL and REDIS_URL are required for the control plane (distributed mode). For one process, use `npm start`.",
  );
  process.exit(2);
}
if (settings.tightened > 0)
  logger.warn(
    { dataDir: settings.dataDir, entries: settings.tightened },
    "data directory was readable or writable by others; made it private (0700, files 0600)",
  );
const names = redisNames();
const redis = connectRedis(settings.redisUrl);
const subscriber = connectRedis(settings.redisUrl);
const consumerConn = connectRedis(settings.redisUrl);
const redisUrl = settings.redisUrl;
// MODELGATE_SHUTDOWN_MS: how long the shutdown's steps after the HTTP drain may take (default 5 s)
const shutdownMs = Number(process.env.MODELGATE_SHUTDOWN_MS ?? 5_000);
if (!Number.isFinite(shutdownMs) || shutdownMs < 0) {
  console.error(`MODELGATE_SHUTDOWN_MS must be a number of milliseconds, not ${process.env.MODELGATE_SHUTDOWN_MS}`);
  process.exit(2);
}
if (!redisUrlHasCredentials(redisUrl))
  logger.warn(
    { redis: redactRedisUrl(redisUrl) },
    "REDIS_URL carries no credentials: whoever reaches this Redis can change the policy the replicas enforce. " +
      "Run Redis with a password or an ACL user (docs/deployment.md)",
  );
onCredentialsRefusedAtStart([redis, subscriber, consumerConn], (err) => {
  logger.fatal(
    { redis: redactRedisUrl(redisUrl), err: err.message },
    "Redis refused the control plane's credentials: check the user and password in REDIS_URL",
  );
  process.exit(2);
});
// An outage is logged as the replicas log it: once when it starts, one summary per MODELGATE_LOG_SUMMARY_MS while
// it lasts, once when every connection is ready again (a line per reconnect attempt was 81 warnings in 20 s).
const redisClients: Redis[] = [redis, subscriber, consumerConn];
const outage = new OutageLog(logger, Number(process.env.MODELGATE_LOG_SUMMARY_MS ?? 30_000), Date.now, {
  healthy: () => redisClients.every((r) => r.status === "ready"),
});
const watchRedis = (r: Redis) => {
  r.on("error", (err) => outage.failure("redis", "connection", err));
  r.on("ready", () => outage.recovered("redis"));
};
for (const r of redisClients) watchRedis(r);
/** A Redis failure while it is away is the outage's symptom (counted in it); anything else is logged. */
const redisFailure = (kind: string, message: string) => (err: unknown) =>
  isRedisUnavailableError(err) ? outage.failure("redis", kind, err) : logger.error({ err }, message);

const core = await bootControlPlane(
  settings,
  new RedisPolicyBus(redis, names, { leaseMs: settings.fullLeaseMs }),
  logger,
);
// The admin CLI writes to Postgres directly and asks for a publication round here; an operator's
// `PUBLISH <prefix>control:changed republish` asks for a full publication (a new epoch, written beside the current
// one while changes keep flowing to it).
await subscribeWhenReady(subscriber, names.changedChannel);
subscriber.on("message", (channel: string, message: string) => {
  if (channel !== names.changedChannel) return;
  if (message === "republish") core.publisher.republish();
  else core.publisher.changed();
});
// Redis may have come back empty (no persistence): a round finds no feed there and publishes in full at once,
// rather than leave replicas without changes until the next one.
redis.on("ready", () => core.publisher.changed());
// A heartbeat every second (expiring after 15 s): replicas show its age in /readyz, so a stopped or frozen
// control plane is visible even while they keep serving from their last snapshot.
const beat = () => {
  redis
    .set(names.controlHeartbeat, JSON.stringify({ at: Date.now(), pid: process.pid, host: hostname() }), "PX", 15_000)
    .catch(() => undefined);
};
beat();
const heartbeat = setInterval(beat, 1_000);
heartbeat.unref();
// A round at least this often: it publishes whatever a missed notification left behind and tells replicas the
// feed is current (their published age), costing one indexed query and one small script when nothing changed.
const republish = setInterval(() => core.publisher.changed(), Number(process.env.MODELGATE_REPUBLISH_MS ?? 30_000));
republish.unref();

// Every shard the replicas may write to (MODELGATE_USAGE_SHARDS, the same value on every process).
// Evaluated after settlement (set once the routes are up).
const alerts: { runner?: AlertRunner } = {};
const consumer = new RedisUsageConsumer(
  consumerConn,
  usageShards(names.prefix, settings.usageShards),
  `${hostname()}-${process.pid}`,
  async (events) => {
    await inSpan(tracing, "modelgate.usage.settle", { "modelgate.usage.events": events.length }, () =>
      settleUsageBatch(core.db, events),
    );
    core.publisher.settled();
    alerts.runner?.settled(events.map((e) => e.accountId));
  },
  redisFailure("usage reads", "usage consumer error"),
  {
    // Only entries a data plane signed settle (a key derived from the master key both planes hold). Anything
    // else on the stream was written by someone else with access to Redis: refused, logged once with its
    // stream id, recorded in the audit log, and acknowledged so it is never read again.
    key: usageEntryKey(settings.masterKey),
    onRefused: (r) => {
      logger.warn(
        { stream: r.stream, streamId: r.id, reason: r.reason, events: r.events },
        "usage entry refused: not signed by a data plane; its events are not settled",
      );
      audit(core.ctx.prisma, undefined, {
        action: "usage.entry_refused",
        subjectType: "usage_entry",
        subjectId: `${r.stream} ${r.id}`,
        after: { stream: r.stream, streamId: r.id, reason: r.reason, events: r.events },
      }).catch((err: unknown) => logger.error({ err }, "audit of a refused usage entry failed"));
    },
  },
  30_000,
  2_000,
  settings.settleIntervalMs,
);
// its own connections (one per shard after the first) belong to the outage's health too
for (const c of consumer.connections.slice(1)) {
  redisClients.push(c);
  c.on("ready", () => outage.recovered("redis"));
}
await consumer.start();

// Pooled upstream keys: the replicas' states in Redis, and their disable reports recorded and alerted.
core.ctx.keyStates = redisKeyStates(redis, names);
const { routes, alerts: runner } = await controlPlaneRoutes(core.ctx, settings, logger, () =>
  readBreakerReports(redis, names.breakerReports),
);
alerts.runner = runner;
const keyReports = followKeyReports(
  redis,
  names,
  (d) => keyDisabledReported(core.ctx, () => alerts.runner, d, logger),
  redisFailure("upstream key reports", "upstream key reports: Redis unavailable"),
  // checked at start (NUMERIC_SETTINGS): Number("abc") here was NaN, which setInterval takes as 1 ms
  wholeNumberEnv(process.env, "MODELGATE_KEY_REPORT_MS", 2_000, { unit: "milliseconds", min: 1 }),
  () => clearEnabledKeyStates(core.ctx),
);
// A replica's disable is read as it is announced; an admin CLI change may be an enable of a key a replica
// disabled, whose shared state is then cleared at once (the timed reads are the fallback).
subscriber.on("message", (channel: string) => {
  if (channel === names.keyStatesChannel) keyReports.wake();
  else if (channel === names.changedChannel) keyReports.wake(true);
});
await subscribeWhenReady(subscriber, names.keyStatesChannel);
const health = async (req: IncomingMessage, res: ServerResponse) => {
  if (req.url !== "/healthz" && req.url !== "/readyz") return false;
  res.writeHead(200, { "content-type": "application/json" });
  res.end('{"status":"ok"}');
  return true;
};
const handler = chain([health, ...routes], notFound);
const server = createGatewayServer((req, res) => void handler(req, res));
server.listen(settings.port, settings.host, () => logger.info({ port: settings.port }, "control plane listening"));

onShutdown(
  logger,
  async () => {
    core.configWatcher?.stop();
    await new Promise<void>((r) => server.close(() => r()));
    // The steps after the drain wait on Redis and Postgres, which may be down (Redis away: ~11 s of command
    // retries): at most MODELGATE_SHUTDOWN_MS. What they leave undone is safe: unacknowledged usage entries are
    // claimed by the next consumer, and a publication round runs again at the next start.
    await within(
      shutdownMs,
      async () => {
        await consumer.stop();
        await keyReports.stop();
        await alerts.runner?.stop();
        await core.publisher.flush();
        await exportsIdle();
        core.publisher.stop();
        await core.db.close();
      },
      () => logger.warn({ shutdownMs }, "shutdown steps still waiting (Redis or Postgres down?): exiting without them"),
    );
    outage.close();
    for (const r of redisClients) r.disconnect();
    await tracing?.shutdown();
  },
  server,
);
