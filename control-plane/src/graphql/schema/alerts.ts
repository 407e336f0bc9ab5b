import type { AlertConfig, AlertEvent, AlertWebhook, WebhookDelivery } from "../../generated/prisma/client.ts";
import { deliveryOptionsFromEnv } from "../../alerts/deliver.ts";
import { alertEvents, webhookDeliveries, webhooksOf } from "../../alerts/history.ts";
import {
  addWebhook,
  alertConfig,
  type AlertSettingsChange,
  removeWebhook,
  setAlertSettings,
  testWebhook,
  webhookOf,
} from "../../alerts/settings.ts";
import { forbidden } from "../../services/errors.ts";
import { builder, isOperator } from "../builder.ts";
import type { GqlContext } from "../context.ts";
import { accountIdFor, amountArg, checkId, money } from "../common.ts";

// Alerts: thresholds per account (percent of budgets and quotas, balance below, keys expiring) and, for
// operators, circuit breakers; delivered by e-mail and to signed webhooks with a delivery log.

/** The settings' scope: the caller's (or the named) account, or the operators' own with `operators: true`. */
function scope(
  ctx: GqlContext,
  args: { accountId?: string | number | null; operators?: boolean | null },
  need: "read" | "manage",
): string | null {
  if (args.operators) {
    if (!isOperator(ctx)) throw forbidden("only operators have operator alerts");
    return null;
  }
  return accountIdFor(
    ctx,
    args.accountId === null || args.accountId === undefined ? null : String(args.accountId),
    need,
  );
}

const WebhookDeliveryStatusEnum = builder.enumType("WebhookDeliveryStatus", {
  values: ["pending", "delivered", "failed"] as const,
});

const WebhookDeliveryRef = builder.objectRef<WebhookDelivery>("WebhookDelivery").implement({
  description: "One alert sent to one webhook, with the outcome of its last attempt (the delivery log).",
  fields: (t) => ({
    id: t.exposeID("id"),
    webhookId: t.exposeID("webhookId"),
    kind: t.exposeString("kind", { description: "budget, quota, balance, key_expiring, breaker_open or test" }),
    status: t.field({ type: WebhookDeliveryStatusEnum, resolve: (d) => d.status }),
    attempts: t.exposeInt("attempts"),
    lastStatus: t.exposeInt("lastStatus", {
      nullable: true,
      description: "the receiver's HTTP status at the last attempt",
    }),
    lastError: t.exposeString("lastError", { nullable: true }),
    nextAttemptAt: t.field({
      type: "DateTime",
      nullable: true,
      resolve: (d) => (d.status === "pending" ? d.nextAttemptAt : null),
    }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    deliveredAt: t.expose("deliveredAt", { type: "DateTime", nullable: true }),
    body: t.exposeString("body", { description: "the JSON sent (and signed)" }),
  }),
});

const AlertWebhookRef = builder.objectRef<AlertWebhook>("AlertWebhook").implement({
  description:
    'A URL alerts are POSTed to, signed: x-modelgate-signature = v1=HMAC-SHA256(secret, "<x-modelgate-timestamp>.<body>") in hex.',
  fields: (t) => ({
    id: t.exposeID("id"),
    url: t.exposeString("url"),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

const AlertEventRef = builder.objectRef<AlertEvent>("AlertEvent").implement({
  description: "An alert that fired (once per period per subject and threshold).",
  fields: (t) => ({
    id: t.exposeID("id"),
    kind: t.exposeString("kind"),
    dedupeKey: t.exposeString("dedupeKey", { description: "subject, threshold and period: what makes it fire once" }),
    payload: t.string({ description: "JSON", resolve: (e) => JSON.stringify(e.payload) }),
    firedAt: t.expose("firedAt", { type: "DateTime" }),
  }),
});

const AlertSettingsRef = builder.objectRef<AlertConfig>("AlertSettings").implement({
  description: "When alerts fire and where they go.",
  fields: (t) => ({
    percents: t.exposeIntList("percents", {
      description: "percent of each budget and quota that fires an alert (default 50, 80, 100)",
    }),
    balanceBelow: t.string({
      nullable: true,
      description: "an alert when the balance falls below this (once until the next top-up)",
      resolve: (c) => (c.balanceBelowMicro === null ? null : money(c.balanceBelowMicro)),
    }),
    keyExpiryDays: t.exposeInt("keyExpiryDays", {
      nullable: true,
      description: "an alert when a key expires within this many days",
    }),
    breakerOpen: t.exposeBoolean("breakerOpen", {
      description: "operators: an alert when an upstream's circuit breaker opens",
    }),
    emails: t.exposeStringList("emails", { description: "addresses alerts are mailed to" }),
    webhooks: t.field({
      type: [AlertWebhookRef],
      resolve: (c, _a, ctx) => webhooksOf(ctx.app, c.id),
    }),
  }),
});

const AlertSettingsInput = builder.inputType("AlertSettingsInput", {
  description: "Omitted fields stay as they are; null removes a threshold.",
  fields: (t) => ({
    percents: t.intList(),
    balanceBelow: t.string({ description: "decimal text" }),
    keyExpiryDays: t.int(),
    breakerOpen: t.boolean({ description: "operators' settings only" }),
    emails: t.stringList(),
  }),
});

const CreatedWebhook = builder.objectRef<{ webhook: AlertWebhook; secret: string }>("CreatedAlertWebhook").implement({
  fields: (t) => ({
    webhook: t.field({ type: AlertWebhookRef, resolve: (r) => r.webhook }),
    secret: t.exposeString("secret", { description: "the signing secret; shown only now" }),
  }),
});

builder.queryFields((t) => ({
  alertSettings: t.field({
    type: AlertSettingsRef,
    authScopes: { authenticated: true },
    args: { accountId: t.arg.id(), operators: t.arg.boolean() },
    resolve: (_r, args, ctx) => alertConfig(ctx.app, scope(ctx, args, "read")),
  }),
  alertEvents: t.field({
    type: [AlertEventRef],
    authScopes: { authenticated: true },
    description: "Alerts that fired, newest first.",
    args: { accountId: t.arg.id(), operators: t.arg.boolean(), first: t.arg.int() },
    resolve: (_r, args, ctx) => alertEvents(ctx.app, scope(ctx, args, "read"), args.first),
  }),
  webhookDeliveries: t.field({
    type: [WebhookDeliveryRef],
    authScopes: { authenticated: true },
    description: "The delivery log, newest first: every alert sent to the webhooks, with attempts and outcomes.",
    args: {
      accountId: t.arg.id(),
      operators: t.arg.boolean(),
      webhookId: t.arg.id(),
      status: t.arg({ type: WebhookDeliveryStatusEnum }),
      first: t.arg.int(),
    },
    resolve: (_r, args, ctx) =>
      webhookDeliveries(ctx.app, scope(ctx, args, "read"), {
        webhookId: args.webhookId ? checkId(String(args.webhookId), "webhook") : null,
        status: args.status,
        first: args.first,
      }),
  }),
}));

builder.mutationFields((t) => ({
  setAlertSettings: t.field({
    type: AlertSettingsRef,
    authScopes: { authenticated: true },
    description:
      "Owners (their account) and operators: alert thresholds and e-mail addresses. Answers once the settings were evaluated (what already holds has fired).",
    args: {
      accountId: t.arg.id(),
      operators: t.arg.boolean(),
      input: t.arg({ type: AlertSettingsInput, required: true }),
    },
    resolve: async (_r, args, ctx) => {
      const accountId = scope(ctx, args, "manage");
      const i = args.input;
      const change: AlertSettingsChange = {};
      if (i.percents !== undefined) change.percents = i.percents ?? [];
      if (i.emails !== undefined) change.emails = i.emails ?? [];
      if (i.balanceBelow !== undefined)
        change.balanceBelowMicro = i.balanceBelow === null ? null : amountArg(i.balanceBelow, "balanceBelow");
      if (i.keyExpiryDays !== undefined) change.keyExpiryDays = i.keyExpiryDays;
      if (i.breakerOpen !== undefined && i.breakerOpen !== null) change.breakerOpen = i.breakerOpen;
      const config = await setAlertSettings(ctx.app, accountId, change);
      // Saved settings are evaluated at once (what already holds fires now), within a bound: a slow webhook
      // receiver must not hold the answer.
      const runner = ctx.app.alerts?.runner;
      if (runner) {
        runner.evaluateAll();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([runner.idle(), new Promise((r) => (timer = setTimeout(r, 5_000)))]);
        clearTimeout(timer);
      }
      return config;
    },
  }),
  addAlertWebhook: t.field({
    type: CreatedWebhook,
    authScopes: { authenticated: true },
    description: "Adds a webhook (http or https URL); the signing secret is shown once.",
    args: { accountId: t.arg.id(), operators: t.arg.boolean(), url: t.arg.string({ required: true }) },
    resolve: (_r, args, ctx) => addWebhook(ctx.app, scope(ctx, args, "manage"), args.url),
  }),
  removeAlertWebhook: t.field({
    type: "Boolean",
    authScopes: { authenticated: true },
    args: { accountId: t.arg.id(), operators: t.arg.boolean(), id: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) => {
      const accountId = scope(ctx, args, "manage");
      const w = await webhookOf(ctx.app, checkId(String(args.id), "webhook"), accountId);
      await removeWebhook(ctx.app, w, accountId);
      return true;
    },
  }),
  testAlertWebhook: t.field({
    type: WebhookDeliveryRef,
    authScopes: { authenticated: true },
    description:
      "Sends a signed test alert now and returns its delivery (a failure is retried with backoff, like any).",
    args: { accountId: t.arg.id(), operators: t.arg.boolean(), id: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) => {
      const w = await webhookOf(ctx.app, checkId(String(args.id), "webhook"), scope(ctx, args, "manage"));
      const d = await testWebhook(ctx.app, w.id, ctx.app.alerts?.delivery ?? deliveryOptionsFromEnv(ctx.app.masterKey));
      if (d.status === "pending") ctx.app.alerts?.runner.deliverSoon();
      return d;
    },
  }),
}));
