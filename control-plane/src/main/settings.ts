import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseMasterKey } from "@modelgate/data-plane/crypto/secret-box";

export interface Settings {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  configPath?: string;
  masterKey: Buffer;
  dev: boolean;
  secureCookies: boolean;
  smtpUrl?: string;
  maxBodyBytes: number;
  operatorEmail: string;
  operatorPassword?: string;
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

export function readSettings(env: NodeJS.ProcessEnv, defaultPort: number): Settings {
  const dataDir = resolve(env.MODELGATE_DATA_DIR ?? "./data");
  mkdirSync(dataDir, { recursive: true });
  return {
    port: Number(env.PORT ?? defaultPort),
    host: env.HOST ?? "0.0.0.0",
    dataDir,
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    configPath: env.GATEWAY_CONFIG || undefined,
    masterKey: masterKeyFrom(env, dataDir),
    dev: env.NODE_ENV === "development",
    secureCookies: env.MODELGATE_SECURE_COOKIES === "1",
    smtpUrl: env.SMTP_URL || undefined,
    maxBodyBytes: Number(env.MODELGATE_MAX_BODY_BYTES ?? 8 * 1024 * 1024),
    operatorEmail: env.MODELGATE_OPERATOR_EMAIL ?? "operator@modelgate.local",
    operatorPassword: env.MODELGATE_OPERATOR_PASSWORD || undefined,
  };
}
