import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runAdminCommand, type CommandName } from "../../control-plane/src/admin/commands.ts";
import type { Database } from "../../control-plane/src/db/client.ts";
import { redisNames } from "../../data-plane/src/contract/redis-names.ts";
import { spendCounterName } from "../../data-plane/src/billing/spend-redis.ts";
import { connectRedis, isCluster } from "../../data-plane/src/redis/connect.ts";
import { freshDatabase } from "./postgres.ts";
import { eventually, freePort, type Proc, startTs, waitForHttp } from "./processes.ts";

// One way to start modelgate in either mode for tests that must hold in both: embedded (one process,
// PGlite, in-process bus) or distributed (control plane + data-plane replicas on real Postgres and Redis).
// The operator actions go through the same admin commands the CLI runs: in embedded mode through the
// running server's /api/admin endpoint (what the CLI does), in distributed mode straight on the database
// followed by the change notification (what the CLI does), without paying a process start per command.

export type Mode = "embedded" | "distributed";

export interface UsageRow {
  requestId: string;
  keyId: string | null;
  status: number;
  costMicro: bigint;
}

export interface Gateway {
  mode: Mode;
  /** data-plane base URLs (no /v1); every one serves the API */
  bases: string[];
  /** a data plane started with MODELGATE_TRUSTED_PROXIES=127.0.0.1/32 */
  trustedBase: string;
  /** a data plane started without trusted proxies (distributed only: embedded mode has one process) */
  untrustedBase: string | null;
  /** where the control plane's API (GraphQL, /api) answers: the one process in embedded mode */
  controlPlaneBase: string;
  /** the processes, for their output in failure messages */
  procs: Proc[];
  admin<T = Record<string, unknown>>(command: CommandName, args?: Record<string, unknown>): Promise<T>;
  /** the account's wallet balance in micro-units, from the system of record */
  balance(account: string): Promise<bigint>;
  /** usage-log rows of the account, newest first (at most `limit`) */
  usage(account: string, limit?: number): Promise<UsageRow[]>;
  /** distributed: the system of record, for ledger and usage-log checks */
  prisma: Database["prisma"] | null;
  /** distributed: the replicas' running spend counters in Redis for a key and its account (null: none) */
  spendCounters(accountId: string, keyId: string): Promise<{ key: bigint | null; account: bigint | null }>;
  /** environment for running the real admin CLI against this gateway */
  cliEnv: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

export interface GatewayOptions {
  /** the config file (GATEWAY_CONFIG) as an object, written as JSON */
  config: unknown;
  /** extra environment for every process (upstream credentials, breaker settings …) */
  env?: NodeJS.ProcessEnv;
  /** distributed: how many replicas (default 2; replica 0 without trusted proxies, the others with) */
  replicas?: number;
  /** distributed: per-replica extra environment */
  replicaEnv?: (i: number) => NodeJS.ProcessEnv;
  /** distributed: Redis URL (default the machine's) */
  redisUrl?: string;
  /** distributed: where each process runs (default: here, on 127.0.0.1) */
  placement?: Placement;
}

/** Where a process of a distributed gateway runs: another network namespace, say (test/helpers/netns.ts). */
export interface Placement {
  /** the command prefix its process starts under (e.g. `ip netns exec <ns>`) */
  prefix(role: Role): string[];
  /** the address the test reaches it at */
  host(role: Role): string;
  /** a service URL (Postgres, Redis) as the process must write it from where it runs */
  url(role: Role, url: string): string;
}

export type Role = "control-plane" | { replica: number };

const here: Placement = { prefix: () => [], host: () => "127.0.0.1", url: (_role, url) => url };

const TRUSTED = "127.0.0.1/32";

/** /readyz needs the bearer token when the gateway runs with MODELGATE_METRICS_TOKEN. */
const opsAuth = (env?: NodeJS.ProcessEnv): Record<string, string> =>
  env?.MODELGATE_METRICS_TOKEN ? { authorization: `Bearer ${env.MODELGATE_METRICS_TOKEN}` } : {};

export async function startGateway(mode: Mode, o: GatewayOptions): Promise<Gateway> {
  return mode === "embedded" ? startEmbedded(o) : startDistributed(o);
}

async function startEmbedded(o: GatewayOptions): Promise<Gateway> {
  const dataDir = mkdtempSync(join(tmpdir(), "mg-emb-"));
  const config = join(dataDir, "gateway.json");
  writeFileSync(config, JSON.stringify(o.config));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...o.env,
    PORT: String(port),
    MODELGATE_DATA_DIR: dataDir,
    GATEWAY_CONFIG: config,
    DATABASE_URL: "",
    REDIS_URL: "",
    MODELGATE_DRAIN_MS: "2000",
    MODELGATE_TRUSTED_PROXIES: TRUSTED,
  };
  const proc = startTs("control-plane/src/main/embedded.ts", env);
  try {
    await waitForHttp(`${base}/readyz`, proc, 120_000, opsAuth(o.env));
  } catch (err) {
    await proc.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
  const admin = async <T>(command: CommandName, args: Record<string, unknown> = {}): Promise<T> => {
    const res = await fetch(`${base}/api/admin`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ command, args }),
    });
    const body = (await res.json()) as { result?: T; error?: string };
    if (!res.ok) throw new Error(`admin ${command}: ${res.status} ${body.error}`);
    return body.result as T;
  };
  return {
    mode: "embedded",
    bases: [base],
    trustedBase: base,
    untrustedBase: null,
    controlPlaneBase: base,
    procs: [proc],
    admin,
    balance: async (account) =>
      BigInt((await admin<{ balanceMicro: string }>("account show", { account })).balanceMicro),
    usage: async (account, limit = 1000) =>
      (await cliUsage(admin, account, limit)).map((r) => ({
        requestId: r.requestId,
        keyId: r.keyId,
        status: r.status,
        costMicro: BigInt(r.costMicro),
      })),
    prisma: null,
    spendCounters: () => Promise.reject(new Error("an embedded gateway counts spend in its process, not in Redis")),
    cliEnv: env,
    async stop() {
      await proc.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function startDistributed(o: GatewayOptions): Promise<Gateway> {
  const db = await freshDatabase("gw");
  const dataDir = mkdtempSync(join(tmpdir(), "mg-dist-"));
  const config = join(dataDir, "gateway.json");
  writeFileSync(config, JSON.stringify(o.config));
  const prefix = `mgtest:${randomBytes(4).toString("hex")}:`;
  const redisUrl = o.redisUrl ?? process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
  const masterKeyHex = randomBytes(32).toString("hex");
  const env: NodeJS.ProcessEnv = {
    // Settled within a tenth of a second (production waits up to 1 s to settle more events at once): the tests
    // wait for settlement, not for the interval. A test may set its own.
    MODELGATE_SETTLE_INTERVAL_MS: "100",
    ...o.env,
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    MODELGATE_REDIS_PREFIX: prefix,
    MODELGATE_MASTER_KEY: masterKeyHex,
    MODELGATE_DATA_DIR: dataDir,
    GATEWAY_CONFIG: config,
    MODELGATE_DRAIN_MS: "2000",
  };
  const procs: Proc[] = [];
  const redis = connectRedis(redisUrl, { maxRetriesPerRequest: 1 });
  redis.on("error", () => undefined);
  const names = redisNames(prefix);
  const cleanup = async () => {
    for (const p of procs.reverse()) await p.stop();
    try {
      // (A test's own cluster goes away with the test.)
      const keys = isCluster(redis) ? [] : await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
    } catch {
      /* the test's own Redis may be gone already */
    }
    redis.disconnect();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const bases: string[] = [];
  const cpPort = await freePort();
  const place = o.placement ?? here;
  /** the process's environment with Postgres and Redis as it reaches them from where it runs */
  const located = (role: Role, e: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
    ...e,
    ...(e.DATABASE_URL ? { DATABASE_URL: place.url(role, e.DATABASE_URL) } : {}),
    ...(e.REDIS_URL ? { REDIS_URL: place.url(role, e.REDIS_URL) } : {}),
  });
  const cpBase = `http://${place.host("control-plane")}:${cpPort}`;
  try {
    const cp = startTs(
      "control-plane/src/main/control-plane.ts",
      located("control-plane", { ...env, PORT: String(cpPort) }),
      [],
      place.prefix("control-plane"),
    );
    procs.push(cp);
    await waitForHttp(`${cpBase}/healthz`, cp, 120_000);
    const n = o.replicas ?? 2;
    const started: { proc: Proc; base: string }[] = [];
    for (let i = 0; i < n; i++) {
      const port = await freePort();
      const role: Role = { replica: i };
      const replicaEnv: NodeJS.ProcessEnv = {
        ...env,
        PORT: String(port),
        DATABASE_URL: "",
        MODELGATE_SPOOL_DIR: join(dataDir, `spool-${i}`),
        ...(i === 0 ? {} : { MODELGATE_TRUSTED_PROXIES: TRUSTED }),
        ...o.replicaEnv?.(i),
      };
      const proc = startTs("data-plane/src/main.ts", located(role, replicaEnv), [], place.prefix(role));
      procs.push(proc);
      started.push({ proc, base: `http://${place.host(role)}:${port}` });
    }
    for (const r of started) {
      await waitForHttp(`${r.base}/readyz`, r.proc, 120_000, opsAuth(o.env));
      bases.push(r.base);
    }
  } catch (err) {
    await cleanup();
    throw err;
  }
  const masterKey = Buffer.from(masterKeyHex, "hex");
  const admin = async <T>(command: CommandName, args: Record<string, unknown> = {}): Promise<T> => {
    let changed = false;
    const result = await runAdminCommand(
      { prisma: db.db.prisma, masterKey, snapshotChanged: () => void (changed = true) },
      command,
      args,
    );
    if (changed) await redis.publish(names.changedChannel, command);
    return result as T;
  };
  const account = async (nameOrId: string) => (await admin<{ id: string }>("account show", { account: nameOrId })).id;
  return {
    mode: "distributed",
    bases,
    trustedBase: bases[1] ?? bases[0]!,
    untrustedBase: bases[0]!,
    controlPlaneBase: cpBase,
    procs,
    admin,
    balance: async (name) =>
      (await db.db.prisma.account.findUniqueOrThrow({ where: { id: await account(name) } })).balanceMicro,
    usage: async (name, limit = 1000) =>
      (
        await db.db.prisma.usageLog.findMany({
          where: { accountId: await account(name) },
          orderBy: { startedAt: "desc" },
          take: limit,
        })
      ).map((r) => ({
        requestId: r.requestId,
        keyId: r.apiKeyId,
        status: r.status,
        costMicro: r.costMicro,
      })),
    prisma: db.db.prisma,
    spendCounters: async (accountId, keyId) => {
      const [key, account] = await redis.mget(
        spendCounterName(`${prefix}spend:`, accountId, keyId),
        spendCounterName(`${prefix}spend:`, accountId),
      );
      return { key: key == null ? null : BigInt(key), account: account == null ? null : BigInt(account) };
    },
    cliEnv: env,
    stop: cleanup,
  };
}

/**
 * Waits until every data plane knows the key (a new key reaches replicas through the policy push): asking for
 * a model that does not exist answers anything but 401 invalid_api_key. Such a refusal gives back its request,
 * so waiting uses none of the key's rate limits (the model list counts against them), and it reads no spend.
 */
export async function waitForKey(gw: Gateway, key: string, timeoutMs = 5_000): Promise<void> {
  for (const base of gw.bases) {
    await eventually(
      async () => {
        const res = await fetch(`${base}/v1/models/no-such-model-2000-01-01`, {
          headers: { authorization: `Bearer ${key}` },
        });
        const body = (await res.json()) as { error?: { code?: string } };
        return body.error?.code ?? "ok";
      },
      (code) => code !== "invalid_api_key",
      timeoutMs,
      50,
    );
  }
}

type CliUsageRow = { cursor: string; requestId: string; keyId: string | null; status: number; costMicro: string };

/** The CLI's usage pages (at most 200 rows each) read until `limit` rows or the end of the log. */
async function cliUsage(admin: Gateway["admin"], account: string, limit: number): Promise<CliUsageRow[]> {
  const rows: CliUsageRow[] = [];
  while (rows.length < limit) {
    const want = Math.min(200, limit - rows.length);
    const args: Record<string, unknown> = { account, limit: String(want) };
    if (rows.length > 0) args.after = rows[rows.length - 1]!.cursor;
    const page = await admin<CliUsageRow[]>("usage list", args);
    rows.push(...page);
    if (page.length < want) break;
  }
  return rows;
}
