import type { Account } from "../generated/prisma/client.ts";
import { audit, type AuditActor } from "../audit/record.ts";
import type { Tx } from "./accounts.ts";
import { createApiKey, updateApiKey, type KeyRestrictions } from "./api-keys.ts";
import type { ServiceContext } from "./context.ts";
import { badInput, notFound } from "./errors.ts";
import { ipAllowlistSchema, limitSchema, nameSchema, parseField } from "./inputs.ts";
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

export async function getTrialPolicy(
  ctx: ServiceContext,
  account: Pick<Account, "id" | "createdAt">,
): Promise<TrialPolicy> {
  const row = await ctx.prisma.setting.findUnique({ where: { key: settingKey(account.id) } });
  const v = row?.value as { quotaMicro?: string; expiresAt?: string } | undefined;
  const defaults = trialDefaults(account);
  return {
    quotaMicro: v?.quotaMicro ? BigInt(v.quotaMicro) : defaults.quotaMicro,
    expiresAt: v?.expiresAt ? new Date(v.expiresAt) : defaults.expiresAt,
  };
}

/** The policy of a trial account with none saved: the default quota, expiring TRIAL_DEFAULT_DAYS after opening. */
export const trialDefaults = (account: Pick<Account, "createdAt">): TrialPolicy => ({
  quotaMicro: TRIAL_DEFAULT_QUOTA_MICRO,
  expiresAt: new Date(account.createdAt.getTime() + TRIAL_DEFAULT_DAYS * 86_400_000),
});

/** Writes the policy and applies it to every key of the account, in the caller's transaction. */
export async function writeTrialPolicy(tx: Tx, actor: AuditActor | undefined, accountId: string, policy: TrialPolicy) {
  if (policy.quotaMicro <= 0n) throw badInput("the trial quota must be positive", "quota");
  const value = { quotaMicro: policy.quotaMicro.toString(), expiresAt: policy.expiresAt.toISOString() };
  const before = await tx.setting.findUnique({ where: { key: settingKey(accountId) } });
  await tx.setting.upsert({
    where: { key: settingKey(accountId) },
    create: { key: settingKey(accountId), value },
    update: { value },
  });
  const keys = await tx.apiKey.updateMany({
    where: { accountId },
    data: { quotaMicro: policy.quotaMicro, expiresAt: policy.expiresAt },
  });
  await audit(tx, actor, {
    action: "account.trial_policy",
    subjectType: "account",
    subjectId: accountId,
    accountId,
    before: before?.value ?? null,
    after: { ...value, keysUpdated: keys.count },
  });
}

/** Sets a trial account's policy and applies it to every key of the account at once; other accounts have none. */
export async function setTrialPolicy(ctx: ServiceContext, accountId: string, policy: TrialPolicy) {
  const account = await ctx.prisma.$transaction(async (tx) => {
    const row = await tx.account.findUnique({ where: { id: accountId } });
    if (!row) throw notFound("account");
    if (row.kind !== "trial") throw badInput("this is not a trial account", "accountId");
    await writeTrialPolicy(tx, ctx.actor, accountId, policy);
    return row;
  });
  ctx.snapshotChanged();
  return account;
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
  if (present("name")) r.name = parseField(nameSchema, input.name ?? "", "name");
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
  if (present("ipAllowlist")) r.ipAllowlist = parseField(ipAllowlistSchema, input.ipAllowlist ?? [], "ipAllowlist");
  if (present("rpm")) r.rpm = parseField(limitSchema("rpm"), input.rpm ?? null, "rpm");
  if (present("tpm")) r.tpm = parseField(limitSchema("tpm"), input.tpm ?? null, "tpm");
  if (present("concurrency"))
    r.concurrency = parseField(limitSchema("concurrency"), input.concurrency ?? null, "concurrency");
  return r;
}

/** Who asks: operators may give a trial key any quota and expiry (the policy's fill what they leave out). */
export interface KeyActor {
  operator: boolean;
}

/**
 * Every rule of issuing a key, for every way in (GraphQL and the admin CLI): the account exists and is active,
 * the expiry is in the future, and on a trial account the key carries the trial quota and expiry (a customer
 * cannot ask for more; an operator's omissions take the policy's).
 */
export async function issueApiKey(
  ctx: ServiceContext,
  accountId: string,
  restrictions: KeyRestrictions,
  actor: KeyActor,
) {
  const account = await ctx.prisma.account.findUnique({ where: { id: accountId } });
  if (!account) throw notFound("account");
  if (account.status !== "active") throw badInput("the account is disabled");
  let r: KeyRestrictions = { ...restrictions, name: restrictions.name ?? "default" };
  if (r.expiresAt && r.expiresAt.getTime() <= Date.now()) throw badInput("the expiry is in the past", "expiresAt");
  if (account.kind === "trial") {
    const policy = await getTrialPolicy(ctx, account);
    if (!actor.operator) r = clampToTrial(r, policy, true);
    else {
      r.quotaMicro ??= policy.quotaMicro;
      r.expiresAt ??= policy.expiresAt;
    }
  }
  return createApiKey(ctx, accountId, r);
}

/** Changes a key under the same rules: a revoked key stays as it is, and a customer cannot lift trial limits. */
export async function changeApiKey(ctx: ServiceContext, keyId: string, restrictions: KeyRestrictions, actor: KeyActor) {
  const key = await ctx.prisma.apiKey.findUnique({ where: { id: keyId }, include: { account: true } });
  if (!key) throw notFound("API key");
  if (key.status === "revoked") throw badInput("a revoked key cannot be changed");
  let r = restrictions;
  if (key.account.kind === "trial" && !actor.operator)
    r = clampToTrial(r, await getTrialPolicy(ctx, key.account), false);
  return updateApiKey(ctx, key.id, r);
}
