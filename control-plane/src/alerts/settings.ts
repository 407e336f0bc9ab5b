import { audit } from "../audit/record.ts";
import { randomBytes } from "node:crypto";
import { seal } from "@modelgate/data-plane";
import { z } from "zod";
import type { AlertConfig } from "../generated/prisma/client.ts";
import type { ServiceContext } from "../services/context.ts";
import { badInput, notFound } from "../services/errors.ts";
import { parseField } from "../services/inputs.ts";
import { attemptClaimed, attemptLeaseMs, type DeliveryOptions } from "./deliver.ts";
import { checkDestination, privateAllowed } from "./destination.ts";
import { OPERATORS_CONFIG } from "./runner.ts";

// Alert settings per account (or the operators'), their webhooks, and test sends.

export const MAX_WEBHOOKS = 10;

const percentsSchema = z
  .array(z.number().int().min(1).max(1000))
  .max(10)
  .transform((l) => [...new Set(l)].sort((a, b) => a - b));
const emailsSchema = z
  .array(z.string().trim().email().max(254))
  .max(20)
  .transform((l) => [...new Set(l)]);
/** The WHATWG URL, or null: zod's .url() passed text the URL parser then threw on (`http://a:b:c/`). */
function parseUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/** A webhook URL: one the URL parser reads (else bad input, never an exception), http(s), no credentials. */
export const webhookUrlSchema = z
  .string()
  .trim()
  .max(2000)
  .superRefine((text, ctx) => {
    const u = parseUrl(text);
    // the URL parser drops or encodes control characters, but the text is what is stored (Postgres refuses NUL)
    // eslint-disable-next-line no-control-regex -- control characters are what is refused
    if (!u || /[\u0000-\u001f\u007f]/.test(text)) ctx.addIssue({ code: "custom", message: "not a valid URL" });
    else if (!/^https?:$/.test(u.protocol))
      ctx.addIssue({ code: "custom", message: "a webhook URL is http:// or https://" });
    else if (!u.hostname) ctx.addIssue({ code: "custom", message: "a webhook URL names a host" });
    else if (u.username !== "" || u.password !== "")
      ctx.addIssue({ code: "custom", message: "put credentials in the signature, not the URL" });
  });

export const configIdOf = (accountId: string | null) => accountId ?? OPERATORS_CONFIG;

/** The settings as stored, or the defaults (50/80/100%, nothing else) when none were saved. */
export async function alertConfig(ctx: ServiceContext, accountId: string | null): Promise<AlertConfig> {
  const id = configIdOf(accountId);
  return (
    (await ctx.prisma.alertConfig.findUnique({ where: { id } })) ?? {
      id,
      accountId,
      percents: [50, 80, 100],
      balanceBelowMicro: null,
      keyExpiryDays: null,
      breakerOpen: false,
      emails: [],
      updatedAt: new Date(0),
    }
  );
}

export interface AlertSettingsChange {
  percents?: number[];
  balanceBelowMicro?: bigint | null;
  keyExpiryDays?: number | null;
  breakerOpen?: boolean;
  emails?: string[];
}

export async function setAlertSettings(
  ctx: ServiceContext,
  accountId: string | null,
  change: AlertSettingsChange,
): Promise<AlertConfig> {
  const data: Partial<AlertConfig> = {};
  if (change.percents !== undefined) data.percents = parseField(percentsSchema, change.percents, "percents");
  if (change.emails !== undefined) data.emails = parseField(emailsSchema, change.emails, "emails");
  if (change.balanceBelowMicro !== undefined) {
    if (change.balanceBelowMicro !== null && change.balanceBelowMicro <= 0n)
      throw badInput("the balance threshold must be positive", "balanceBelow");
    data.balanceBelowMicro = change.balanceBelowMicro;
  }
  if (change.keyExpiryDays !== undefined) {
    if (
      change.keyExpiryDays !== null &&
      (!Number.isInteger(change.keyExpiryDays) || change.keyExpiryDays < 1 || change.keyExpiryDays > 365)
    )
      throw badInput("keyExpiryDays is 1..365", "keyExpiryDays");
    data.keyExpiryDays = change.keyExpiryDays;
  }
  if (change.breakerOpen !== undefined) {
    if (accountId !== null && change.breakerOpen)
      throw badInput("circuit-breaker alerts are the operators'", "breakerOpen");
    data.breakerOpen = change.breakerOpen;
  }
  const id = configIdOf(accountId);
  return ctx.prisma.$transaction(async (tx) => {
    const before = await tx.alertConfig.findUnique({ where: { id } });
    const after = await tx.alertConfig.upsert({ where: { id }, create: { id, accountId, ...data }, update: data });
    await audit(tx, ctx.actor, {
      action: "alerts.settings",
      subjectType: "alert_config",
      subjectId: id,
      accountId,
      before,
      after,
    });
    return after;
  });
}

/** Adds a webhook; the signing secret is returned now and never again. */
export async function addWebhook(ctx: ServiceContext, accountId: string | null, url: string) {
  const checked = parseField(webhookUrlSchema, url, "url");
  if (accountId !== null && !privateAllowed()) {
    try {
      await checkDestination(checked);
    } catch (err) {
      throw badInput((err as Error).message, "url");
    }
  }
  const id = configIdOf(accountId);
  await ctx.prisma.alertConfig.upsert({ where: { id }, create: { id, accountId }, update: {} });
  if ((await ctx.prisma.alertWebhook.count({ where: { configId: id } })) >= MAX_WEBHOOKS)
    throw badInput(`at most ${MAX_WEBHOOKS} webhooks`, "url");
  const secret = `whsec_${randomBytes(32).toString("base64url")}`;
  const webhook = await ctx.prisma.$transaction(async (tx) => {
    const created = await tx.alertWebhook.create({
      data: { configId: id, url: checked, secretEnc: seal(ctx.masterKey, secret) },
    });
    await audit(tx, ctx.actor, {
      action: "alerts.webhook_add",
      subjectType: "alert_webhook",
      subjectId: created.id,
      accountId,
      after: created,
    });
    return created;
  });
  return { webhook, secret };
}

/** Removes a webhook (the caller found it with webhookOf, so it is the caller's). */
export async function removeWebhook(
  ctx: ServiceContext,
  webhook: { id: string; url: string },
  accountId: string | null,
) {
  await ctx.prisma.$transaction(async (tx) => {
    await tx.alertWebhook.delete({ where: { id: webhook.id } });
    await audit(tx, ctx.actor, {
      action: "alerts.webhook_remove",
      subjectType: "alert_webhook",
      subjectId: webhook.id,
      accountId,
      before: { url: webhook.url },
    });
  });
}

export async function webhookOf(ctx: ServiceContext, id: string, accountId: string | null) {
  const w = await ctx.prisma.alertWebhook.findUnique({ where: { id } });
  if (!w || w.configId !== configIdOf(accountId)) throw notFound("webhook");
  return w;
}

/**
 * Sends a test alert now (one attempt, awaited); a failure is retried like any delivery. The row is created
 * held for the attempt, so the delivery loop does not send it too.
 */
export async function testWebhook(ctx: ServiceContext, webhookId: string, o: DeliveryOptions) {
  const body = JSON.stringify({
    id: null,
    type: "test",
    message: "a test alert from modelgate",
    data: {},
    firedAt: new Date().toISOString(),
  });
  const d = await ctx.prisma.webhookDelivery.create({
    data: { webhookId, kind: "test", body, nextAttemptAt: new Date(Date.now() + attemptLeaseMs(o)) },
  });
  return (await attemptClaimed(ctx.prisma, d.id, o))!;
}
