import { createHash, randomBytes } from "node:crypto";
import { audit } from "../audit/record.ts";
import type { ServiceContext } from "./context.ts";
import { AppError, notFound } from "./errors.ts";

const KEY_PREFIX = "sk-mg-";
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** 40 base62 characters ≈ 238 bits of entropy; the value is shown once and only its hash is kept. */
export function generateApiKey(): string {
  const bytes = randomBytes(48);
  let out = "";
  for (let i = 0; out.length < 40 && i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 248) out += ALPHABET[b % 62]; // 248 = 4 × 62: rejection keeps the characters uniform
  }
  return KEY_PREFIX + out.padEnd(40, "0");
}

export const hashApiKey = (key: string): string => createHash("sha256").update(key).digest("hex");
export const displayPrefix = (key: string): string => `${key.slice(0, KEY_PREFIX.length + 4)}…${key.slice(-4)}`;

export interface KeyRestrictions {
  name?: string;
  allowedModels?: string[];
  ipAllowlist?: string[];
  quotaMicro?: bigint | null;
  expiresAt?: Date | null;
  rpm?: number | null;
  tpm?: number | null;
  concurrency?: number | null;
}

/** Live (not revoked) keys one account may hold: MODELGATE_MAX_KEYS_PER_ACCOUNT, default 1,000. */
export const maxKeysPerAccount = (env: NodeJS.ProcessEnv = process.env) => {
  const n = Number(env.MODELGATE_MAX_KEYS_PER_ACCOUNT ?? 1000);
  return Number.isInteger(n) && n > 0 ? n : 1000;
};

export async function createApiKey(ctx: ServiceContext, accountId: string, r: KeyRestrictions) {
  const key = generateApiKey();
  const limit = maxKeysPerAccount();
  // The account's row is locked while keys are counted, so parallel creations cannot pass the cap together.
  const row = await ctx.prisma.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM accounts WHERE id = ${accountId}::uuid FOR UPDATE`;
    const live = await tx.apiKey.count({ where: { accountId, status: { not: "revoked" } } });
    if (live >= limit) {
      throw new AppError(
        "LIMIT_EXCEEDED",
        `this account already has ${live} keys, the most it may have (${limit}); revoke keys it no longer uses`,
      );
    }
    const created = await tx.apiKey.create({
      data: {
        accountId,
        name: r.name ?? "default",
        keyHash: hashApiKey(key),
        prefix: displayPrefix(key),
        allowedModels: r.allowedModels ?? [],
        ipAllowlist: r.ipAllowlist ?? [],
        quotaMicro: r.quotaMicro ?? null,
        expiresAt: r.expiresAt ?? null,
        rpm: r.rpm ?? null,
        tpm: r.tpm ?? null,
        concurrency: r.concurrency ?? null,
      },
    });
    await audit(tx, ctx.actor, {
      action: "api_key.create",
      subjectType: "api_key",
      subjectId: created.id,
      accountId,
      after: created,
    });
    return created;
  });
  ctx.snapshotChanged();
  return { row, key };
}

export async function updateApiKey(ctx: ServiceContext, id: string, r: KeyRestrictions) {
  const row = await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.apiKey.findUnique({ where: { id } });
    if (!before) throw notFound("API key");
    const after = await tx.apiKey.update({
      where: { id },
      data: {
        name: r.name,
        allowedModels: r.allowedModels,
        ipAllowlist: r.ipAllowlist,
        quotaMicro: r.quotaMicro,
        expiresAt: r.expiresAt,
        rpm: r.rpm,
        tpm: r.tpm,
        concurrency: r.concurrency,
      },
    });
    await audit(tx, ctx.actor, {
      action: "api_key.update",
      subjectType: "api_key",
      subjectId: id,
      accountId: after.accountId,
      before,
      after,
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

export async function revokeApiKey(ctx: ServiceContext, id: string) {
  const row = await ctx.prisma.$transaction(async (tx) => {
    const before = await tx.apiKey.findUnique({ where: { id } });
    if (!before) throw notFound("API key");
    const after = await tx.apiKey.update({ where: { id }, data: { status: "revoked", revokedAt: new Date() } });
    await audit(tx, ctx.actor, {
      action: "api_key.revoke",
      subjectType: "api_key",
      subjectId: id,
      accountId: after.accountId,
      before: { status: before.status, revokedAt: before.revokedAt },
      after: { status: after.status, revokedAt: after.revokedAt },
    });
    return after;
  });
  ctx.snapshotChanged();
  return row;
}

export const listApiKeys = (ctx: ServiceContext, accountId: string) =>
  ctx.prisma.apiKey.findMany({ where: { accountId }, orderBy: { createdAt: "asc" } });
