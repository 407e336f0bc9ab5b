import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BudgetCalendar } from "../../data-plane/src/billing/periods.ts";
import {
  MIN_DAYS,
  pruneBillingHistory,
  retentionFromEnv,
  startBillingRetention,
  type Pruned,
} from "../../control-plane/src/alerts/retention.ts";
import { OPERATORS_CONFIG } from "../../control-plane/src/alerts/runner.ts";
import { freshDatabase } from "../helpers/postgres.ts";

// Retention of spend_periods, alert_events and webhook_deliveries on real Postgres: old rows go, the current
// periods, alert events that would fire again if forgotten, and deliveries still being retried stay.

const DAY = 86_400_000;
let fx: Awaited<ReturnType<typeof freshDatabase>>;
beforeAll(async () => {
  fx = await freshDatabase("retention");
}, 60_000);
afterAll(async () => {
  await fx?.drop();
});

const NOW = Date.now();
const calendar = new BudgetCalendar(() => NOW);
const ago = (days: number) => new Date(NOW - days * DAY);
const settings = { spendPeriodsMs: 400 * DAY, alertsMs: 90 * DAY };

/** An account with one key 90% through its quota of 1000 micro, an alert config with a webhook. */
async function fixture() {
  const p = fx.db.prisma;
  const account = await p.account.create({ data: { name: `r-${randomUUID()}`, balanceMicro: 10_000n } as never });
  const key = await p.apiKey.create({
    data: {
      accountId: account.id,
      name: "k",
      keyHash: randomUUID(),
      prefix: "sk-test",
      quotaMicro: 1000n,
      spentMicro: 900n,
    } as never,
  });
  const config = await p.alertConfig.create({
    data: { id: account.id, accountId: account.id, percents: [50, 80, 100] },
  });
  const webhook = await p.alertWebhook.create({
    data: { configId: config.id, url: "https://hooks.example.com/x", secretEnc: "sealed" },
  });
  const event = (dedupeKey: string, firedDaysAgo: number, configId = config.id) =>
    p.alertEvent.create({
      data: { configId, dedupeKey, kind: dedupeKey.split(":")[0]!, payload: {}, firedAt: ago(firedDaysAgo) },
    });
  const delivery = (status: "pending" | "delivered" | "failed", createdDaysAgo: number, eventId: string | null) =>
    p.webhookDelivery.create({
      data: { webhookId: webhook.id, eventId, kind: "test", body: "{}", status, createdAt: ago(createdDaysAgo) },
    });
  return { account, key, config, event, delivery };
}

describe("billing history retention", () => {
  it("prunes old spend periods, alert events that cannot fire again, and finished deliveries", async () => {
    const p = fx.db.prisma;
    const f = await fixture();
    const today = new Date(calendar.bounds("UTC", "day").start);
    const month = new Date(calendar.bounds("UTC", "month").start);
    const period = (keyId: string, kind: "day" | "month", start: Date) =>
      p.spendPeriod.create({
        data: { accountId: f.account.id, keyId, period: kind, periodStart: start, spentMicro: 5n },
      });
    await period("", "day", ago(500));
    await period(f.key.id, "month", ago(401));
    await period("", "day", ago(399));
    await period(f.key.id, "day", today);
    await period("", "month", month);

    // Old and gone for good: a budget period long over, a quota value the key no longer has.
    const oldBudget = await f.event(`budget:account:day:${ago(120).toISOString()}:100`, 120);
    const oldQuota = await f.event(`quota:${f.key.id}:500:50`, 100);
    // Old but still holding now (the key is 90% through its quota of 1000): forgetting them would fire them again.
    const holding50 = await f.event(`quota:${f.key.id}:1000:50`, 100);
    const holding80 = await f.event(`quota:${f.key.id}:1000:80`, 95);
    // Young: kept whatever it names.
    const young = await f.event(`quota:${f.key.id}:1:50`, 10);
    // The operators' breaker alerts: by age.
    await p.alertConfig.upsert({ where: { id: OPERATORS_CONFIG }, create: { id: OPERATORS_CONFIG }, update: {} });
    const oldOutage = await f.event(`breaker:up:${ago(200).toISOString()}`, 200, OPERATORS_CONFIG);
    const newOutage = await f.event(`breaker:up:${ago(1).toISOString()}`, 1, OPERATORS_CONFIG);

    const oldDelivered = await f.delivery("delivered", 100, null);
    const oldFailed = await f.delivery("failed", 91, holding50.id);
    const oldPending = await f.delivery("pending", 100, holding80.id);
    const youngDelivered = await f.delivery("delivered", 5, young.id);
    // A pending delivery of a pruned event goes with it.
    const cascaded = await f.delivery("pending", 100, oldQuota.id);

    const pruned = await pruneBillingHistory(p, calendar, settings);
    expect(pruned).toEqual({ spendPeriods: 2, alertEvents: 3, webhookDeliveries: 2 });

    const periods = await p.spendPeriod.findMany({ where: { accountId: f.account.id } });
    expect(periods.map((r) => r.periodStart.getTime()).sort()).toEqual(
      [ago(399).getTime(), today.getTime(), month.getTime()].sort(),
    );
    const events = (await p.alertEvent.findMany({ select: { id: true } })).map((e) => e.id).sort();
    expect(events).toEqual([holding50.id, holding80.id, young.id, newOutage.id].sort());
    expect(events).not.toContain(oldBudget.id);
    expect(events).not.toContain(oldOutage.id);
    const deliveries = (await p.webhookDelivery.findMany({ select: { id: true } })).map((d) => d.id).sort();
    expect(deliveries).toEqual([oldPending.id, youngDelivered.id].sort());
    expect(deliveries).not.toContain(oldDelivered.id);
    expect(deliveries).not.toContain(oldFailed.id);
    expect(deliveries).not.toContain(cascaded.id);

    // A second pass finds nothing more.
    expect(await pruneBillingHistory(p, calendar, settings)).toEqual({
      spendPeriods: 0,
      alertEvents: 0,
      webhookDeliveries: 0,
    });

    // Once the condition no longer holds (the quota was raised), the old events go too.
    await p.apiKey.update({ where: { id: f.key.id }, data: { quotaMicro: 10_000n } });
    expect((await pruneBillingHistory(p, calendar, settings)).alertEvents).toBe(2);
  });

  it("runs from the control plane's hourly job, at once on start", async () => {
    const p = fx.db.prisma;
    const f = await fixture();
    await p.spendPeriod.create({
      data: { accountId: f.account.id, keyId: "", period: "week", periodStart: ago(1000), spentMicro: 1n },
    });
    const pruned = await new Promise<Pruned>((resolve, reject) => {
      const stop = startBillingRetention(p, calendar, reject, (r) => {
        stop();
        resolve(r);
      });
    });
    expect(pruned.spendPeriods).toBe(1);
  });

  it("reads its settings from the environment, never below the longest period", () => {
    expect(retentionFromEnv({})).toEqual({ spendPeriodsMs: 400 * DAY, alertsMs: 90 * DAY });
    expect(
      retentionFromEnv({ MODELGATE_SPEND_PERIOD_RETENTION_DAYS: "800", MODELGATE_ALERT_RETENTION_DAYS: "40" }),
    ).toEqual({ spendPeriodsMs: 800 * DAY, alertsMs: 40 * DAY });
    expect(
      retentionFromEnv({ MODELGATE_SPEND_PERIOD_RETENTION_DAYS: "1", MODELGATE_ALERT_RETENTION_DAYS: "x" }),
    ).toEqual({ spendPeriodsMs: MIN_DAYS * DAY, alertsMs: 90 * DAY });
  });
});
