import { isIP } from "node:net";
import type { Account } from "../generated/prisma/client.ts";
import type { KeyRestrictions } from "./api-keys.ts";
import type { ServiceContext } from "./context.ts";
import { badInput } from "./errors.ts";
import { formatAmount, parseAmount } from "./money.ts";

// Trial accounts: every key carries the quota and expiry the operator fixed for the account. The policy lives in
// the settings table (`trial_policy:<account id>`); without one, the defaults below apply from the account's opening.

export const TRIAL_DEFAULT_QUOTA_MICRO = 5_000_000n; // 5 units
export const TRIAL_DEFAULT_DAYS = 14;

export interface TrialPolicy {
  quotaMicro: bigint;
  expiresAt: Date;
}

const settingKey = (accountId: string) => `trial_policy:${accountId}`;

export async function getTrialPolicy(ctx: ServiceContext, account: Pick<Account, "id" | "createdAt">): Promise<TrialPolicy> {
  const row = await ctx.prisma.setting.findUnique({ where: { key: settingKey(account.id) } });
  const v = row?.value as { quotaMicro?: string; expiresAt?: string } | undefined;
  return {
    quotaMicro: v?.quotaMicro ? BigInt(v.quotaMicro) : TRIAL_DEFAULT_QUOTA_MICRO,
    expiresAt: v?.expiresAt ? new Date(v.expiresAt) : new Date(account.createdAt.getTime() + TRIAL_DEFAULT_DAYS * 86_400_000),
  };
}

/** Sets the policy and applies it to every key of the account at once. */
export async function setTrialPolicy(ctx: ServiceContext, accountId: string, policy: TrialPolicy) {
  if (policy.quotaMicro <= 0n) throw badInput("the trial quota must be positive", "quota");
  const value = { quotaMicro: policy.quotaMicro.toString(), expiresAt: policy.expiresAt.toISOString() };
  await ctx.prisma.$transaction([
    ctx.prisma.setting.upsert({ where: { key: settingKey(accountId) }, create: { key: settingKey(accountId), value }, update: { value } }),
    ctx.prisma.apiKey.updateMany({
      where: { accountId },
      data: { quotaMicro: policy.quotaMicro, expiresAt: policy.expiresAt },
    }),
  ]);
  ctx.snapshotChanged();
  return policy;
}

/**
 * What a customer may ask for on a trial account: no more quota and no later expiry than the policy. Omitted
 * values take the policy's; explicit nulls ("no limit") are refused.
 */
export function clampToTrial(r: KeyRestrictions, policy: TrialPolicy, creating: boolean): KeyRestrictions {
  const out = { ...r };
  if (r.quotaMicro === null || (r.quotaMicro !== undefined && r.quotaMicro > policy.quotaMicro)) {
    throw badInput(`a trial key's quota cannot exceed ${formatAmount(policy.quotaMicro)}`, "quotaCap");
  }
  if (r.expiresAt === null || (r.expiresAt !== undefined && r.expiresAt > policy.expiresAt)) {
    throw badInput(`a trial key cannot outlive ${policy.expiresAt.toISOString()}`, "expiresAt");
  }
  if (creating) {
    out.quotaMicro ??= policy.quotaMicro;
    out.expiresAt ??= policy.expiresAt;
  }
  return out;
}

function checkCidr(entry: string): string {
  const s = entry.trim();
  const [addr, bits, extra] = s.split("/");
  const family = addr ? isIP(addr) : 0;
  if (!family || extra !== undefined) throw badInput(`not an IP address or CIDR: ${entry}`, "ipAllowlist");
  if (bits !== undefined) {
    const n = Number(bits);
    if (!/^\d{1,3}$/.test(bits) || n > (family === 4 ? 32 : 128)) throw badInput(`bad prefix length in ${entry}`, "ipAllowlist");
  }
  return s;
}

const positiveOrNull = (v: number | null | undefined, field: string) => {
  if (v !== undefined && v !== null && (!Number.isInteger(v) || v <= 0 || v > 10_000_000)) {
    throw badInput(`${field} must be a positive whole number`, field);
  }
  return v;
};

/** Raw GraphQL-ish input (money as decimal text) → checked restrictions. Unknown models are refused. */
export async function checkRestrictions(
  ctx: ServiceContext,
  input: {
    name?: string | null;
    quotaCap?: string | null;
    expiresAt?: Date | null;
    allowedModels?: string[] | null;
    ipAllowlist?: string[] | null;
    rpm?: number | null;
    tpm?: number | null;
    concurrency?: number | null;
  },
  present: (field: string) => boolean,
): Promise<KeyRestrictions> {
  const r: KeyRestrictions = {};
  if (present("name")) {
    const name = (input.name ?? "").trim();
    if (!name || name.length > 100) throw badInput("a name of 1 to 100 characters is needed", "name");
    r.name = name;
  }
  if (present("quotaCap")) {
    if (input.quotaCap === null || input.quotaCap === undefined) r.quotaMicro = null;
    else {
      let micro: bigint;
      try {
        micro = parseAmount(input.quotaCap);
      } catch (err) {
        throw badInput((err as Error).message, "quotaCap");
      }
      if (micro <= 0n) throw badInput("the quota cap must be positive", "quotaCap");
      r.quotaMicro = micro;
    }
  }
  if (present("expiresAt")) r.expiresAt = input.expiresAt ?? null;
  if (present("allowedModels")) {
    const models = [...new Set((input.allowedModels ?? []).map((m) => m.trim()).filter(Boolean))];
    if (models.length) {
      const known = await ctx.prisma.model.findMany({ where: { id: { in: models } }, select: { id: true } });
      const missing = models.filter((m) => !known.some((k) => k.id === m));
      if (missing.length) throw badInput(`unknown model IDs: ${missing.join(", ")}`, "allowedModels");
    }
    r.allowedModels = models;
  }
  if (present("ipAllowlist")) r.ipAllowlist = [...new Set((input.ipAllowlist ?? []).map(checkCidr))];
  if (present("rpm")) r.rpm = positiveOrNull(input.rpm, "rpm");
  if (present("tpm")) r.tpm = positiveOrNull(input.tpm, "tpm");
  if (present("concurrency")) r.concurrency = positiveOrNull(input.concurrency, "concurrency");
  return r;
}
