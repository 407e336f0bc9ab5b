import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { checkNumericSettings, parseMasterKey, usageShardCount, wholeNumberEnv } from "@modelgate/data-plane";
import { auditRetentionDays } from "../audit/retention.ts";
import { compactTombstones } from "../snapshot/compaction.ts";
import { fullLeaseMs } from "../snapshot/full-lease.ts";
import { type OidcSettings, readOidcSettings } from "../auth/oidc.ts";
import { secureDataDir } from "./data-dir.ts";

// What a control-plane process (server or admin CLI) starts from: the environment read once, and the data
// directory it owns (data-dir.ts). Both entry points read it, so it lives apart from either (main/, admin/).

export interface Settings {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  /** usage stream shards to read (MODELGATE_USAGE_SHARDS) */
  usageShards: number;
  /** a shard's settlements start at most this often (MODELGATE_SETTLE_INTERVAL_MS) */
  settleIntervalMs: number;
  configPath?: string;
  masterKey: Buffer;
  dev: boolean;
  secureCookies: boolean;
  smtpUrl?: string;
  maxBodyBytes: number;
  operatorEmail: string;
  operatorPassword?: string;
  /** console sign-in through OpenID Connect (null: off) */
  oidc: OidcSettings | null;
  /** days an audit log row is kept (MODELGATE_AUDIT_RETENTION_DAYS; null: forever) */
  auditRetentionDays: number | null;
  /** tombstones a policy feed epoch may hold before it is published again (MODELGATE_POLICY_COMPACT_TOMBSTONES; 0: never) */
  compactTombstones: number;
  /** how long a full publication's lease lasts unless renewed (MODELGATE_POLICY_FULL_LEASE_MS) */
  fullLeaseMs: number;
  /** entries of the data directory that were readable or writable by others and have been made private */
  tightened: number;
}

/**
 * The master key encrypts upstream credentials and TOTP secrets. MODELGATE_MASTER_KEY wins; otherwise one is
 * generated once into the data directory (fine for one machine; set the variable when processes do not share it).
 */
export function masterKeyFrom(env: NodeJS.ProcessEnv, dataDir: string): Buffer {
  if (env.MODELGATE_MASTER_KEY) return parseMasterKey(env.MODELGATE_MASTER_KEY);
  const file = join(dataDir, "master.key");
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString("hex"), { mode: 0o600, flag: "wx" });
  }
  return parseMasterKey(readFileSync(file, "utf8").trim());
}

/** MODELGATE_SETTLE_INTERVAL_MS: whole milliseconds from 0 (no wait between a shard's settlements) to 60,000. */
export function settleIntervalMs(env: NodeJS.ProcessEnv): number {
  // A settlement costs Postgres and the control plane a few milliseconds of CPU however few events it holds
  // (bench:settle: 195 µs of Postgres per event in batches of 30, 62 in batches of 300), so at a steady
  // trickle of traffic how often it runs sets the cost per call. The data planes' spend counters cover the
  // wait; a wallet's balance in the console lags by about this much.
  return wholeNumberEnv(env, "MODELGATE_SETTLE_INTERVAL_MS", 1_000, { unit: "ms", max: 60_000 });
}

export function readSettings(env: NodeJS.ProcessEnv, defaultPort: number): Settings {
  // A bad number in any setting stops the start here, naming the variable (data-plane/src/env.ts).
  checkNumericSettings(env, "control");
  const dataDir = resolve(env.MODELGATE_DATA_DIR ?? "./data");
  // Before anything is written there: the directory and all it holds are private to this user.
  const tightened = secureDataDir(dataDir);
  return {
    port: wholeNumberEnv(env, "PORT", defaultPort, { unit: "port", max: 65_535 }),
    host: env.HOST ?? "0.0.0.0",
    dataDir,
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    usageShards: usageShardCount(env),
    settleIntervalMs: settleIntervalMs(env),
    configPath: env.GATEWAY_CONFIG || undefined,
    masterKey: masterKeyFrom(env, dataDir),
    dev: env.NODE_ENV === "development",
    secureCookies: env.MODELGATE_SECURE_COOKIES === "1",
    smtpUrl: env.SMTP_URL || undefined,
    // 4 MiB: parsing a body holds the event loop about 10 ms per MB, so this keeps any one request's stall of the
    // process under 50 ms; raise it for larger (e.g. image) inputs.
    maxBodyBytes: wholeNumberEnv(env, "MODELGATE_MAX_BODY_BYTES", 4 * 1024 * 1024, { unit: "bytes", min: 1024 }),
    operatorEmail: env.MODELGATE_OPERATOR_EMAIL ?? "operator@modelgate.local",
    operatorPassword: env.MODELGATE_OPERATOR_PASSWORD || undefined,
    oidc: readOidcSettings(env),
    auditRetentionDays: auditRetentionDays(env),
    compactTombstones: compactTombstones(env),
    fullLeaseMs: fullLeaseMs(env),
    tightened,
  };
}
