import type { ServiceContext } from "../services/context.ts";
import { pageSize } from "../services/inputs.ts";
import { configIdOf } from "./settings.ts";

// What alerts did, for both doors (GraphQL and the admin CLI): the alerts that fired, the webhook delivery log
// and the webhooks. One page rule for both: 50 rows unless asked, never more than MAX_ALERT_PAGE (more is refused).

export const MAX_ALERT_PAGE = 500;
const DEFAULT_PAGE = 50;

/** Alerts that fired for an account (null: the operators'), newest first. */
export function alertEvents(ctx: ServiceContext, accountId: string | null, first?: number | null) {
  const take = pageSize(first, DEFAULT_PAGE, MAX_ALERT_PAGE);
  return ctx.prisma.alertEvent.findMany({
    where: { configId: configIdOf(accountId) },
    orderBy: { firedAt: "desc" },
    take,
  });
}

export interface DeliveryFilter {
  webhookId?: string | null;
  status?: "pending" | "delivered" | "failed" | null;
  first?: number | null;
}

/** The delivery log of an account's (null: the operators') webhooks, newest first. */
export function webhookDeliveries(ctx: ServiceContext, accountId: string | null, f: DeliveryFilter = {}) {
  const take = pageSize(f.first, DEFAULT_PAGE, MAX_ALERT_PAGE);
  return ctx.prisma.webhookDelivery.findMany({
    where: {
      webhook: { configId: configIdOf(accountId) },
      ...(f.webhookId ? { webhookId: f.webhookId } : {}),
      ...(f.status ? { status: f.status } : {}),
    },
    orderBy: { createdAt: "desc" },
    take,
  });
}

/** The webhooks of an alert configuration, oldest first (at most MAX_WEBHOOKS: adding more is refused). */
export function webhooksOf(ctx: ServiceContext, configId: string) {
  return ctx.prisma.alertWebhook.findMany({ where: { configId }, orderBy: { createdAt: "asc" } });
}
