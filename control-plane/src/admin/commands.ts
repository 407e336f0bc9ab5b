import { z } from "zod";
import { deliveryOptionsFromEnv } from "../alerts/deliver.ts";
import {
  addWebhook,
  alertConfig,
  type AlertSettingsChange,
  configIdOf,
  removeWebhook,
  setAlertSettings,
  testWebhook,
  webhookOf,
} from "../alerts/settings.ts";
import {
  budgetsOf,
  budgetView,
  setAccountBudgets,
  setBudgetCaps,
  setKeyBudgets,
  setTimeZone,
  type BudgetChange,
} from "../budgets/service.ts";
import { createAccount, resolveAccount, topUp } from "../services/accounts.ts";
import { AppError } from "../services/errors.ts";
import { listApiKeys, revokeApiKey } from "../services/api-keys.ts";
import { setAccountLimits, setAccountStatus, setPriceContract } from "../services/catalog.ts";
import { ipAllowlistSchema, nameSchema } from "../services/inputs.ts";
import { issueApiKey } from "../services/key-policy.ts";
import type { ServiceContext } from "../services/context.ts";
import { formatAmount, parseAmount } from "../services/money.ts";
import { createUser } from "../services/users.ts";

// The admin commands, independent of how they arrive (CLI argv straight on the database, or the running
// server's admin endpoint). Inputs are validated here, once, so both paths refuse the same things.

const amount = z.string().transform((s, ctx) => {
  try {
    return parseAmount(s);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
    return z.NEVER;
  }
});
/** A budget: an amount, or "none" to remove it. */
const budgetAmount = z.union([z.literal("none").transform(() => null), amount]);
const budgetArgs = {
  daily: budgetAmount.optional(),
  weekly: budgetAmount.optional(),
  monthly: budgetAmount.optional(),
};
const budgetChange = (a: { daily?: bigint | null; weekly?: bigint | null; monthly?: bigint | null }): BudgetChange => ({
  day: a.daily,
  week: a.weekly,
  month: a.monthly,
});
const list = z.string().transform((s) =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean),
);
const positiveInt = z
  .string()
  .regex(/^\d+$/, "must be a positive integer")
  .transform(Number)
  .refine((n) => n > 0, "must be a positive integer");
/** "none" for a value that removes a setting */
const none = <T>(v: T) => z.literal("none").transform(() => v);
const percent = z.string().regex(/^\d+$/, "percents are whole numbers").transform(Number);
const webhookId = z.string().uuid("must be a webhook id (UUID)");
/** Whose alerts: an account's (--account) or the operators' own (--operators), exactly one. */
const alertScope = z
  .object({ account: z.string().min(1).optional(), operators: z.boolean().optional() })
  .refine((a) => (a.account === undefined) !== (a.operators !== true), {
    message: "name an account (--account) or the operators' own alerts (--operators), not both",
    path: ["account"],
  });
const iso = z
  .string()
  .refine((s) => !Number.isNaN(Date.parse(s)), "must be an ISO 8601 date-time")
  .transform((s) => new Date(s));

export const commandSchemas = {
  "account create": z.object({ name: nameSchema, email: z.string().email().optional(), balance: amount.optional() }),
  "account topup": z.object({ account: z.string().min(1), amount }),
  "key create": z.object({
    account: z.string().min(1),
    name: nameSchema.optional(),
    models: list.optional(),
    "ip-allowlist": list.pipe(ipAllowlistSchema).optional(),
    quota: amount.optional(),
    expires: iso.optional(),
    rpm: positiveInt.optional(),
    tpm: positiveInt.optional(),
    concurrency: positiveInt.optional(),
  }),
  "key revoke": z.object({ id: z.string().uuid("must be a key id (UUID)") }),
  "key list": z.object({ account: z.string().min(1) }),
  "account show": z.object({ account: z.string().min(1) }),
  "account update": z.object({
    account: z.string().min(1),
    status: z.enum(["active", "disabled"]).optional(),
    rpm: positiveInt.optional(),
    tpm: positiveInt.optional(),
    concurrency: positiveInt.optional(),
    "time-zone": z.string().min(1).optional(),
  }),
  "budget set": z.object({
    account: z.string().min(1),
    key: z.string().uuid("must be a key id (UUID)").optional(),
    ...budgetArgs,
  }),
  "budget caps": z.object({ account: z.string().min(1), ...budgetArgs }),
  "budget show": z.object({ account: z.string().min(1), key: z.string().uuid("must be a key id (UUID)").optional() }),
  "contract set": z.object({
    account: z.string().min(1),
    model: z.string().min(1),
    input: amount,
    output: amount,
    "cached-input": amount.optional(),
    "cache-write-5m": amount.optional(),
    "cache-write-1h": amount.optional(),
  }),
  "user create": z.object({
    email: z.string().email(),
    password: z.string().min(1),
    role: z.enum(["member", "owner", "operator"]).default("owner"),
    account: z.string().min(1).optional(),
    name: z.string().optional(),
  }),
  "usage list": z.object({ account: z.string().min(1), limit: positiveInt.optional() }),
  "alerts show": alertScope,
  "alerts set": alertScope.and(
    z.object({
      percents: z.union([none([] as number[]), list.pipe(z.array(percent))]).optional(),
      "balance-below": budgetAmount.optional(),
      "key-expiry-days": z.union([none(null), positiveInt]).optional(),
      "breaker-open": z
        .enum(["true", "false"])
        .transform((v) => v === "true")
        .optional(),
      emails: z.union([none([] as string[]), list]).optional(),
    }),
  ),
  "alerts events": alertScope.and(z.object({ limit: positiveInt.optional() })),
  "webhook add": alertScope.and(z.object({ url: z.string().min(1) })),
  "webhook remove": alertScope.and(z.object({ id: webhookId })),
  "webhook test": alertScope.and(z.object({ id: webhookId })),
  "webhook deliveries": alertScope.and(
    z.object({ limit: positiveInt.optional(), status: z.enum(["pending", "delivered", "failed"]).optional() }),
  ),
} as const;

export type CommandName = keyof typeof commandSchemas;
export const commandNames = Object.keys(commandSchemas) as CommandName[];

export class UsageError extends Error {}

export function parseCommandArgs<N extends CommandName>(
  name: N,
  args: Record<string, unknown>,
): z.output<(typeof commandSchemas)[N]> {
  const r = (commandSchemas[name] as z.ZodType).safeParse(args);
  if (!r.success) {
    throw new UsageError(r.error.issues.map((i) => `--${i.path.join(".") || "?"}: ${i.message}`).join("; "));
  }
  return r.data as z.output<(typeof commandSchemas)[N]>;
}

const keyView = (k: Awaited<ReturnType<typeof listApiKeys>>[number]) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  status: k.status,
  quota: k.quotaMicro === null ? null : formatAmount(k.quotaMicro),
  spent: formatAmount(k.spentMicro),
  expiresAt: k.expiresAt?.toISOString() ?? null,
  allowedModels: k.allowedModels,
  ipAllowlist: k.ipAllowlist,
  rpm: k.rpm,
  tpm: k.tpm,
  concurrency: k.concurrency,
  createdAt: k.createdAt.toISOString(),
});

export async function runAdminCommand(
  ctx: ServiceContext,
  name: CommandName,
  rawArgs: Record<string, unknown>,
): Promise<unknown> {
  switch (name) {
    case "account create": {
      const a = parseCommandArgs("account create", rawArgs);
      const account = await createAccount(ctx, { name: a.name, email: a.email, balanceMicro: a.balance });
      return { id: account.id, name: account.name, balance: formatAmount(account.balanceMicro) };
    }
    case "account topup": {
      const a = parseCommandArgs("account topup", rawArgs);
      const account = await topUp(ctx, (await resolveAccount(ctx, a.account)).id, a.amount, "top-up by operator");
      return { id: account.id, name: account.name, balance: formatAmount(account.balanceMicro) };
    }
    case "key create": {
      const a = parseCommandArgs("key create", rawArgs);
      const account = await resolveAccount(ctx, a.account);
      // The same rules as the API's (account active, expiry ahead, trial quota and expiry), as an operator.
      const { row, key } = await issueApiKey(
        ctx,
        account.id,
        {
          name: a.name,
          allowedModels: a.models,
          ipAllowlist: a["ip-allowlist"],
          quotaMicro: a.quota,
          expiresAt: a.expires,
          rpm: a.rpm,
          tpm: a.tpm,
          concurrency: a.concurrency,
        },
        { operator: true },
      );
      return { id: row.id, key, name: row.name, accountId: account.id };
    }
    case "key revoke": {
      const a = parseCommandArgs("key revoke", rawArgs);
      const row = await revokeApiKey(ctx, a.id);
      return { id: row.id, status: row.status };
    }
    case "account show": {
      const a = parseCommandArgs("account show", rawArgs);
      const account = await resolveAccount(ctx, a.account);
      return {
        id: account.id,
        name: account.name,
        status: account.status,
        kind: account.kind,
        balance: formatAmount(account.balanceMicro),
        balanceMicro: account.balanceMicro.toString(),
      };
    }
    case "account update": {
      const a = parseCommandArgs("account update", rawArgs);
      const found = await resolveAccount(ctx, a.account);
      // Through the services, so each change is audited as the API's are.
      let account = found;
      if (a.status) account = await setAccountStatus(ctx, found.id, a.status);
      if (a.rpm !== undefined || a.tpm !== undefined || a.concurrency !== undefined) {
        account = await setAccountLimits(ctx, found.id, {
          rpm: a.rpm ?? found.rpm,
          tpm: a.tpm ?? found.tpm,
          concurrency: a.concurrency ?? found.concurrency,
        });
      }
      const tz =
        a["time-zone"] === undefined ? account.timeZone : (await setTimeZone(ctx, account.id, a["time-zone"])).timeZone;
      return {
        id: account.id,
        name: account.name,
        status: account.status,
        rpm: account.rpm,
        tpm: account.tpm,
        concurrency: account.concurrency,
        timeZone: tz,
      };
    }
    case "budget set": {
      const a = parseCommandArgs("budget set", rawArgs);
      const account = await resolveAccount(ctx, a.account);
      if (a.key === undefined) await setAccountBudgets(ctx, account.id, budgetChange(a), { operator: true });
      else await setKeyBudgets(ctx, await keyOf(ctx, account.id, a.key), budgetChange(a), { operator: true });
      return showBudgets(ctx, account.id, a.key);
    }
    case "budget caps": {
      const a = parseCommandArgs("budget caps", rawArgs);
      const account = await setBudgetCaps(ctx, (await resolveAccount(ctx, a.account)).id, budgetChange(a));
      const cap = (m: bigint | null) => (m === null ? null : formatAmount(m));
      return {
        ...(await showBudgets(ctx, account.id)),
        caps: {
          daily: cap(account.budgetDayCapMicro),
          weekly: cap(account.budgetWeekCapMicro),
          monthly: cap(account.budgetMonthCapMicro),
        },
      };
    }
    case "budget show": {
      const a = parseCommandArgs("budget show", rawArgs);
      const account = await resolveAccount(ctx, a.account);
      if (a.key !== undefined) await keyOf(ctx, account.id, a.key);
      return showBudgets(ctx, account.id, a.key);
    }
    case "contract set": {
      const a = parseCommandArgs("contract set", rawArgs);
      const account = await resolveAccount(ctx, a.account);
      const opt = (v: bigint | undefined) => (v === undefined ? null : formatAmount(v));
      await setPriceContract(ctx, {
        accountId: account.id,
        modelId: a.model,
        inputPrice: formatAmount(a.input),
        outputPrice: formatAmount(a.output),
        cachedInputPrice: opt(a["cached-input"]),
        cacheWrite5mPrice: opt(a["cache-write-5m"]),
        cacheWrite1hPrice: opt(a["cache-write-1h"]),
      });
      return { account: account.name, model: a.model, input: formatAmount(a.input), output: formatAmount(a.output) };
    }
    case "user create": {
      const a = parseCommandArgs("user create", rawArgs);
      const accountId = a.account ? (await resolveAccount(ctx, a.account)).id : null;
      const user = await createUser(ctx, {
        email: a.email,
        password: a.password,
        role: a.role,
        accountId,
        name: a.name ?? null,
      });
      return { id: user.id, email: user.email, role: user.role, accountId: user.accountId };
    }
    case "usage list": {
      const a = parseCommandArgs("usage list", rawArgs);
      const account = await resolveAccount(ctx, a.account);
      const rows = await ctx.prisma.usageLog.findMany({
        where: { accountId: account.id },
        orderBy: { startedAt: "desc" },
        take: a.limit ?? 20,
      });
      return rows.map((r) => ({
        requestId: r.requestId,
        startedAt: r.startedAt.toISOString(),
        keyId: r.apiKeyId,
        model: r.model,
        protocol: r.protocol,
        status: r.status,
        promptTokens: r.promptTokens,
        completionTokens: r.completionTokens,
        reasoningTokens: r.reasoningTokens,
        cachedTokens: r.cachedTokens,
        inputTokens: r.inputTokens,
        cacheWrite5mTokens: r.cacheWrite5mTokens,
        cacheWrite1hTokens: r.cacheWrite1hTokens,
        cost: formatAmount(r.costMicro),
        costMicro: r.costMicro.toString(),
        estimated: r.estimated,
        endUser: r.endUser,
        tags: r.tags,
        dropped: r.dropped,
        latencyMs: r.latencyMs,
      }));
    }
    case "alerts show": {
      const accountId = await alertAccount(ctx, parseCommandArgs("alerts show", rawArgs));
      return alertSettingsView(ctx, accountId);
    }
    case "alerts set": {
      const a = parseCommandArgs("alerts set", rawArgs);
      const accountId = await alertAccount(ctx, a);
      // The same service (and its checks) as the setAlertSettings mutation; the control plane's timer
      // evaluates the new settings within MODELGATE_ALERTS_INTERVAL_MS.
      const change: AlertSettingsChange = {};
      if (a.percents !== undefined) change.percents = a.percents;
      if (a.emails !== undefined) change.emails = a.emails;
      if (a["balance-below"] !== undefined) change.balanceBelowMicro = a["balance-below"];
      if (a["key-expiry-days"] !== undefined) change.keyExpiryDays = a["key-expiry-days"];
      if (a["breaker-open"] !== undefined) change.breakerOpen = a["breaker-open"];
      await serviceCall(() => setAlertSettings(ctx, accountId, change));
      return alertSettingsView(ctx, accountId);
    }
    case "alerts events": {
      const a = parseCommandArgs("alerts events", rawArgs);
      const events = await ctx.prisma.alertEvent.findMany({
        where: { configId: configIdOf(await alertAccount(ctx, a)) },
        orderBy: { firedAt: "desc" },
        take: Math.min(a.limit ?? 50, 500),
      });
      return events.map((e) => ({
        id: e.id,
        kind: e.kind,
        dedupeKey: e.dedupeKey,
        firedAt: e.firedAt.toISOString(),
        payload: e.payload,
      }));
    }
    case "webhook add": {
      const a = parseCommandArgs("webhook add", rawArgs);
      const accountId = await alertAccount(ctx, a);
      const { webhook, secret } = await serviceCall(() => addWebhook(ctx, accountId, a.url));
      return { id: webhook.id, url: webhook.url, secret };
    }
    case "webhook remove": {
      const a = parseCommandArgs("webhook remove", rawArgs);
      const accountId = await alertAccount(ctx, a);
      const w = await serviceCall(() => webhookOf(ctx, a.id, accountId));
      await removeWebhook(ctx, w, accountId);
      return { id: w.id, removed: true };
    }
    case "webhook test": {
      const a = parseCommandArgs("webhook test", rawArgs);
      const w = await serviceCall(async () => webhookOf(ctx, a.id, await alertAccount(ctx, a)));
      // One attempt now, awaited; a failure stays pending and the control plane retries it with backoff.
      return deliveryView(await testWebhook(ctx, w.id, deliveryOptionsFromEnv(ctx.masterKey)));
    }
    case "webhook deliveries": {
      const a = parseCommandArgs("webhook deliveries", rawArgs);
      const rows = await ctx.prisma.webhookDelivery.findMany({
        where: {
          webhook: { configId: configIdOf(await alertAccount(ctx, a)) },
          ...(a.status ? { status: a.status } : {}),
        },
        orderBy: { createdAt: "desc" },
        take: Math.min(a.limit ?? 50, 500),
      });
      return rows.map(deliveryView);
    }
    case "key list": {
      const a = parseCommandArgs("key list", rawArgs);
      const account = await resolveAccount(ctx, a.account);
      return (await listApiKeys(ctx, account.id)).map(keyView);
    }
  }
}

/** The key's id when it belongs to the account (a key of another account is "not found", as in the API). */
async function keyOf(ctx: ServiceContext, accountId: string, keyId: string): Promise<string> {
  const key = await ctx.prisma.apiKey.findFirst({ where: { id: keyId, accountId }, select: { id: true } });
  if (!key) throw new UsageError(`the account has no key ${keyId}`);
  return key.id;
}

/** Budgets with what is left, of the account or one of its keys. */
async function showBudgets(ctx: ServiceContext, accountId: string, keyId?: string) {
  const account = await ctx.prisma.account.findUniqueOrThrow({ where: { id: accountId } });
  const subject = keyId === undefined ? account : await ctx.prisma.apiKey.findUniqueOrThrow({ where: { id: keyId } });
  return {
    account: account.name,
    key: keyId ?? null,
    timeZone: account.timeZone,
    budgets: (await budgetsOf(ctx, account, subject, keyId ?? "")).map(budgetView),
  };
}

/** The account an alert command names (null: the operators' own alerts). */
async function alertAccount(ctx: ServiceContext, a: { account?: string; operators?: boolean }): Promise<string | null> {
  return a.operators ? null : (await resolveAccount(ctx, a.account!)).id;
}

/** A service's refusal of an input (BAD_USER_INPUT) as the CLI's usage error, naming the option. */
async function serviceCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== "BAD_USER_INPUT") throw err;
    const field = typeof err.extra.field === "string" ? err.extra.field : null;
    throw new UsageError(field ? `--${kebab(field)}: ${err.message}` : err.message);
  }
}
const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

async function alertSettingsView(ctx: ServiceContext, accountId: string | null) {
  const c = await alertConfig(ctx, accountId);
  const webhooks = await ctx.prisma.alertWebhook.findMany({ where: { configId: c.id }, orderBy: { createdAt: "asc" } });
  return {
    account: accountId,
    operators: accountId === null,
    percents: c.percents,
    balanceBelow: c.balanceBelowMicro === null ? null : formatAmount(c.balanceBelowMicro),
    keyExpiryDays: c.keyExpiryDays,
    breakerOpen: c.breakerOpen,
    emails: c.emails,
    webhooks: webhooks.map((w) => ({ id: w.id, url: w.url, createdAt: w.createdAt.toISOString() })),
  };
}

const deliveryView = (d: {
  id: string;
  webhookId: string;
  kind: string;
  status: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
}) => ({
  id: d.id,
  webhookId: d.webhookId,
  kind: d.kind,
  status: d.status,
  attempts: d.attempts,
  lastStatus: d.lastStatus,
  lastError: d.lastError,
  createdAt: d.createdAt.toISOString(),
  deliveredAt: d.deliveredAt?.toISOString() ?? null,
});
