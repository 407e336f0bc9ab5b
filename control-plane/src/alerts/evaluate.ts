import type { BudgetCalendar } from "@modelgate/data-plane";
import type { Db } from "../db/client.ts";
import type { AlertConfig } from "../generated/prisma/client.ts";
import type { Mailer } from "../mail/mailer.ts";
import { formatAmount } from "../services/money.ts";
import { currentBudgets } from "../budgets/snapshot.ts";

// Alert evaluation, in the control plane only (after settlement batches and on a timer; never on the data
// plane's request path). Each condition that holds becomes an alert event whose dedupe key names the subject,
// the threshold and the period; the unique (config, dedupe key) makes it fire once per period, however often
// it is evaluated and by however many control planes.

export interface Alert {
  kind: "budget" | "quota" | "balance" | "key_expiring" | "breaker_open" | "upstream_key_disabled";
  dedupeKey: string;
  /** groups thresholds of one subject and period: only the highest newly crossed is sent */
  group: string;
  rank: number;
  message: string;
  data: Record<string, unknown>;
}

const pct = (spent: bigint, limit: bigint) => (limit <= 0n ? 100 : Number((spent * 100n) / limit));

/** The alerts whose conditions hold for the account now (fired or not). */
export async function accountAlerts(
  prisma: Db,
  config: AlertConfig,
  accountId: string,
  calendar: BudgetCalendar,
): Promise<Alert[]> {
  const account = await prisma.account.findUnique({ where: { id: accountId } });
  if (!account) return [];
  const keys = await prisma.apiKey.findMany({ where: { accountId, status: "active" } });
  const out: Alert[] = [];
  const percents = [...new Set(config.percents)].filter((p) => p > 0).sort((a, b) => a - b);
  const now = calendar.now();

  const subjects = [
    { id: account.id, accountId, keyId: "", row: account },
    ...keys.map((k) => ({ id: k.id, accountId, keyId: k.id, row: k })),
  ];
  const budgets = await currentBudgets(prisma, subjects, new Map([[accountId, account.timeZone]]), calendar, now);
  for (const s of subjects) {
    const who = s.keyId === "" ? "the account" : `key ${keys.find((k) => k.id === s.keyId)?.name ?? s.keyId}`;
    for (const b of budgets.get(s.id) ?? []) {
      const used = pct(b.spent, b.limit);
      for (const p of percents) {
        if (used < p) continue;
        const group = `budget:${s.keyId || "account"}:${b.period}:${b.start.toISOString()}`;
        out.push({
          kind: "budget",
          dedupeKey: `${group}:${p}`,
          group,
          rank: p,
          message: `${who} has used ${used}% of its ${b.period === "day" ? "daily" : b.period === "week" ? "weekly" : "monthly"} budget (${formatAmount(b.spent)} of ${formatAmount(b.limit)}); it resets at ${b.end.toISOString()}.`,
          data: {
            subject: s.keyId === "" ? { account: accountId } : { key: s.keyId },
            period: b.period,
            threshold: p,
            limit: formatAmount(b.limit),
            spent: formatAmount(b.spent),
            resetsAt: b.end.toISOString(),
          },
        });
      }
    }
  }
  for (const k of keys) {
    if (k.quotaMicro === null) continue;
    const used = pct(k.spentMicro, k.quotaMicro);
    for (const p of percents) {
      if (used < p) continue;
      // A new quota (raised or reset) is a new period.
      const group = `quota:${k.id}:${k.quotaMicro}`;
      out.push({
        kind: "quota",
        dedupeKey: `${group}:${p}`,
        group,
        rank: p,
        message: `key ${k.name} has used ${used}% of its quota (${formatAmount(k.spentMicro)} of ${formatAmount(k.quotaMicro)}).`,
        data: {
          subject: { key: k.id },
          threshold: p,
          quota: formatAmount(k.quotaMicro),
          spent: formatAmount(k.spentMicro),
        },
      });
    }
  }
  if (config.balanceBelowMicro !== null && account.balanceMicro < config.balanceBelowMicro) {
    // Re-armed by the next top-up: the period is "since the last credit".
    const credit = await prisma.ledgerEntry.findFirst({
      where: { accountId, kind: { in: ["topup", "refund", "adjustment"] } },
      orderBy: { createdAt: "desc" },
      select: { id: true },
    });
    const group = `balance:${credit?.id ?? "none"}:${config.balanceBelowMicro}`;
    out.push({
      kind: "balance",
      dedupeKey: group,
      group,
      rank: 0,
      message: `the account's balance is ${formatAmount(account.balanceMicro)}, below ${formatAmount(config.balanceBelowMicro)}.`,
      data: {
        subject: { account: accountId },
        balance: formatAmount(account.balanceMicro),
        threshold: formatAmount(config.balanceBelowMicro),
      },
    });
  }
  if (config.keyExpiryDays !== null) {
    const horizon = now + config.keyExpiryDays * 86_400_000;
    for (const k of keys) {
      if (k.expiresAt === null || k.expiresAt.getTime() <= now || k.expiresAt.getTime() > horizon) continue;
      const group = `expiry:${k.id}:${k.expiresAt.toISOString()}`;
      out.push({
        kind: "key_expiring",
        dedupeKey: group,
        group,
        rank: 0,
        message: `key ${k.name} expires at ${k.expiresAt.toISOString()}.`,
        data: { subject: { key: k.id }, expiresAt: k.expiresAt.toISOString(), withinDays: config.keyExpiryDays },
      });
    }
  }
  return out;
}

/**
 * Records the alerts that have not fired in their period yet and sends each group's highest one: a delivery
 * per webhook (sent by the delivery loop) and a mail to the configured addresses. Returns the events fired.
 */
export async function fire(
  prisma: Db,
  mail: Mailer,
  config: AlertConfig & { webhooks: { id: string }[] },
  accountName: string | null,
  alerts: Alert[],
  onError: (err: unknown) => void,
): Promise<string[]> {
  const fresh: (Alert & { id: string; firedAt: Date })[] = [];
  for (const a of alerts) {
    const rows = await prisma.$queryRaw<{ id: string; fired_at: Date }[]>`
      INSERT INTO alert_events (id, config_id, dedupe_key, kind, payload)
      VALUES (gen_random_uuid(), ${config.id}, ${a.dedupeKey}, ${a.kind}, ${JSON.stringify(a.data)}::jsonb)
      ON CONFLICT (config_id, dedupe_key) DO NOTHING RETURNING id, fired_at`;
    if (rows[0]) fresh.push({ ...a, id: rows[0].id, firedAt: rows[0].fired_at });
  }
  const top = new Map<string, (typeof fresh)[number]>();
  for (const a of fresh) if ((top.get(a.group)?.rank ?? -1) < a.rank) top.set(a.group, a);
  for (const a of top.values()) {
    const body = JSON.stringify({
      id: a.id,
      type: a.kind,
      account: config.accountId === null ? null : { id: config.accountId, name: accountName },
      message: a.message,
      data: a.data,
      firedAt: a.firedAt.toISOString(),
    });
    if (config.webhooks.length) {
      await prisma.webhookDelivery.createMany({
        data: config.webhooks.map((w) => ({ webhookId: w.id, eventId: a.id, kind: a.kind, body })),
      });
    }
    for (const to of config.emails) {
      await mail
        .send({
          to,
          subject: `modelgate alert${accountName ? ` for ${accountName}` : ""}: ${a.kind.replace("_", " ")}`,
          text: `${a.message[0]!.toUpperCase()}${a.message.slice(1)}\n\nAlert ${a.id}, ${a.firedAt.toISOString()}.`,
        })
        .catch(onError);
    }
  }
  return [...top.values()].map((a) => a.id);
}
