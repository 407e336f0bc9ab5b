import { z } from "zod";
import { deliveryOptionsFromEnv } from "../../alerts/deliver.ts";
import { MAX_ALERT_PAGE, webhookDeliveries } from "../../alerts/history.ts";
import { addWebhook, removeWebhook, testWebhook, webhookOf } from "../../alerts/settings.ts";
import { alertAccount, alertScope, limitArg } from "../args.ts";
import { command } from "../command.ts";

// Alert webhooks of an account (or the operators'): add (the signing secret shown once), remove, test, deliveries.

const webhookId = z.string().uuid("must be a webhook id (UUID)");

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

export const webhookCommands = {
  "webhook add": command({
    usage: "--account NAME_OR_ID | --operators --url URL",
    note: "prints the signing secret, once",
    args: alertScope.and(z.object({ url: z.string().min(1) })),
    run: async (ctx, a) => {
      const { webhook, secret } = await addWebhook(ctx, await alertAccount(ctx, a), a.url);
      return { id: webhook.id, url: webhook.url, secret };
    },
  }),
  "webhook remove": command({
    usage: "ID --account NAME_OR_ID | --operators",
    positional: "id",
    args: alertScope.and(z.object({ id: webhookId })),
    run: async (ctx, a) => {
      const accountId = await alertAccount(ctx, a);
      const w = await webhookOf(ctx, a.id, accountId);
      await removeWebhook(ctx, w, accountId);
      return { id: w.id, removed: true };
    },
  }),
  "webhook test": command({
    usage: "ID --account NAME_OR_ID | --operators",
    note: "sends a signed test alert now",
    positional: "id",
    args: alertScope.and(z.object({ id: webhookId })),
    run: async (ctx, a) => {
      const w = await webhookOf(ctx, a.id, await alertAccount(ctx, a));
      // One attempt now, awaited; a failure stays pending and the control plane retries it with backoff.
      return deliveryView(await testWebhook(ctx, w.id, deliveryOptionsFromEnv(ctx.masterKey)));
    },
  }),
  "webhook deliveries": command({
    usage: "--account NAME_OR_ID | --operators [--status pending|delivered|failed] [--limit N]",
    note: `the delivery log, newest first; N is 1..${MAX_ALERT_PAGE}, default 50`,
    args: alertScope.and(
      z.object({
        limit: limitArg(MAX_ALERT_PAGE).optional(),
        status: z.enum(["pending", "delivered", "failed"]).optional(),
      }),
    ),
    options: { first: "limit" },
    run: async (ctx, a) =>
      (await webhookDeliveries(ctx, await alertAccount(ctx, a), { status: a.status, first: a.limit })).map(
        deliveryView,
      ),
  }),
};
