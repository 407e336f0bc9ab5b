import type { BudgetCalendar } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";
import { accountAlerts } from "./evaluate.ts";

// Retention of the billing history that only grows: settled spend per calendar period (spend_periods), fired
// alerts (alert_events) and the webhook delivery log (webhook_deliveries). Pruned by the control plane every
// hour (startBillingRetention, beside the exports' retention), in bounded batches.
//
// What must survive, whatever the retention:
// - the current period's spend: the snapshot and the alerts read it. No period is longer than 31 days, so a
//   retention of at least MIN_DAYS never reaches it (smaller settings are raised to it);
// - an alert event that could fire again if it were gone: an event is the "fired once per period" record, so
//   deleting one whose condition still holds (a quota still 80% used, a balance still low since the same top-up,
//   a key still about to expire, this month's budget) would send it again. An old event is pruned only when the
//   evaluator no longer produces its dedupe key for the account now; the operators' breaker alerts (one per
//   outage) by age alone;
// - a delivery still being retried (pending).

export const MIN_DAYS = 35;
const DAY = 86_400_000;
/** rows deleted per statement, so one pass never holds long locks */
const BATCH = 5_000;

const days = (v: string | undefined, d: number) => {
  const n = v && Number.isFinite(Number(v)) && Number(v) > 0 ? Number(v) : d;
  return Math.max(MIN_DAYS, n) * DAY;
};

export interface RetentionSettings {
  /** spend_periods rows whose period started longer ago (MODELGATE_SPEND_PERIOD_RETENTION_DAYS, default 400) */
  spendPeriodsMs: number;
  /** alert events and finished deliveries older than this (MODELGATE_ALERT_RETENTION_DAYS, default 90) */
  alertsMs: number;
}

export const retentionFromEnv = (env: NodeJS.ProcessEnv = process.env): RetentionSettings => ({
  spendPeriodsMs: days(env.MODELGATE_SPEND_PERIOD_RETENTION_DAYS, 400),
  alertsMs: days(env.MODELGATE_ALERT_RETENTION_DAYS, 90),
});

export interface Pruned {
  spendPeriods: number;
  alertEvents: number;
  webhookDeliveries: number;
}

/** One retention pass; `calendar` is the alerts' clock (what "now" is for periods and for what still holds). */
export async function pruneBillingHistory(
  prisma: Db,
  calendar: BudgetCalendar,
  settings: RetentionSettings = retentionFromEnv(),
): Promise<Pruned> {
  const now = calendar.now();
  const out: Pruned = { spendPeriods: 0, alertEvents: 0, webhookDeliveries: 0 };

  const periodCutoff = new Date(now - settings.spendPeriodsMs);
  for (;;) {
    const n = await prisma.$executeRaw`
      DELETE FROM spend_periods WHERE ctid IN (
        SELECT ctid FROM spend_periods WHERE period_start < ${periodCutoff} LIMIT ${BATCH})`;
    out.spendPeriods += n;
    if (n < BATCH) break;
  }

  // Finished deliveries (a test send, or an alert's) older than the retention; pending ones are still retried.
  const alertCutoff = new Date(now - settings.alertsMs);
  for (;;) {
    const n = await prisma.$executeRaw`
      DELETE FROM webhook_deliveries WHERE id IN (
        SELECT id FROM webhook_deliveries
        WHERE status <> 'pending' AND created_at < ${alertCutoff} LIMIT ${BATCH})`;
    out.webhookDeliveries += n;
    if (n < BATCH) break;
  }

  // Old events, per alert config, unless the evaluator would produce their key again now.
  const configs = await prisma.alertConfig.findMany({
    where: { events: { some: { firedAt: { lt: alertCutoff } } } },
    select: {
      id: true,
      accountId: true,
      percents: true,
      balanceBelowMicro: true,
      keyExpiryDays: true,
      breakerOpen: true,
      emails: true,
      updatedAt: true,
    },
  });
  for (const c of configs) {
    const holding =
      c.accountId === null ? [] : (await accountAlerts(prisma, c, c.accountId, calendar)).map((a) => a.dedupeKey);
    const old = await prisma.alertEvent.findMany({
      where: { configId: c.id, firedAt: { lt: alertCutoff }, dedupeKey: { notIn: holding } },
      select: { id: true },
      take: BATCH,
    });
    if (old.length === 0) continue;
    // Their deliveries go with them (ON DELETE CASCADE), pending or not: a delivery retried for weeks is not one.
    const r = await prisma.alertEvent.deleteMany({ where: { id: { in: old.map((e) => e.id) } } });
    out.alertEvents += r.count;
  }
  return out;
}

/** Hourly, and once at start; the timer does not keep the process alive. */
export function startBillingRetention(
  prisma: Db,
  calendar: BudgetCalendar,
  onError: (err: unknown) => void,
  onPruned: (p: Pruned) => void = () => undefined,
): () => void {
  const run = () =>
    void pruneBillingHistory(prisma, calendar).then((p) => {
      if (p.spendPeriods + p.alertEvents + p.webhookDeliveries > 0) onPruned(p);
    }, onError);
  const timer = setInterval(run, 3600_000);
  timer.unref();
  run();
  return () => clearInterval(timer);
}
