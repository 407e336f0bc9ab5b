import type { BudgetCalendar } from "@modelgate/data-plane";
import type { Logger } from "pino";
import type { Db } from "../db/client.ts";
import type { Mailer } from "../mail/mailer.ts";
import { deliverDue, type DeliveryOptions } from "./deliver.ts";
import { accountAlerts, type Alert, fire } from "./evaluate.ts";

export const OPERATORS_CONFIG = "operators";

export interface AlertRunnerOptions {
  prisma: Db;
  mail: Mailer;
  calendar: BudgetCalendar;
  delivery: DeliveryOptions;
  logger: Logger;
  /** every account is evaluated this often (time-based alerts: expiring keys, a new period); default 60 s */
  intervalMs?: number;
  /**
   * the accounts settlement touched are evaluated at most this often; default 1 s (their settled figures are
   * published as often: see Publisher.settled)
   */
  settledEveryMs?: number;
  /** the upstreams' circuit breakers (embedded: this process's; distributed: the replicas' reports) */
  breakers?: () => Record<string, string> | Promise<Record<string, string>>;
  /** how often breakers are looked at; default 5 s */
  breakerIntervalMs?: number;
}

/**
 * Runs alert evaluation and webhook delivery in the control plane: the accounts a settlement batch touched
 * shortly after it (coalesced), every account on a timer, and deliveries whenever one is due. One pass at a
 * time, so a slow receiver delays alerts but never duplicates a delivery.
 */
export class AlertRunner {
  private readonly dirty = new Set<string>();
  private all = false;
  private timer: NodeJS.Timeout | null = null;
  /** when `timer` fires */
  private timerAt = 0;
  /**
   * deliveries may be due: asked for, their timer fired, alerts were queued, or a full pass. A pass for settled
   * accounts alone that fired nothing does not look (two queries for nothing, several times a second under load).
   */
  private deliveriesDue = true;
  private interval: NodeJS.Timeout | null = null;
  private breakerInterval: NodeJS.Timeout | null = null;
  private breakersDue = false;
  private deliveryTimer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  /** upstream keys a data plane disabled, recorded and not yet alerted */
  private readonly keysDisabled: Alert[] = [];
  /** when each breaker was first seen open (its "period"); forgotten when it closes */
  private readonly openSince = new Map<string, string>();

  constructor(private readonly o: AlertRunnerOptions) {}

  start(): void {
    this.interval = setInterval(() => this.evaluateAll(), this.o.intervalMs ?? 60_000);
    this.interval.unref();
    if (this.o.breakers) {
      this.breakerInterval = setInterval(() => {
        this.breakersDue = true;
        this.schedule(0);
      }, this.o.breakerIntervalMs ?? 5_000);
      this.breakerInterval.unref();
    }
    this.evaluateAll();
  }

  /** Settlement moved these accounts' spend. */
  settled(accountIds: Iterable<string>): void {
    for (const id of accountIds) this.dirty.add(id);
    this.schedule(this.o.settledEveryMs ?? 1_000);
  }

  evaluateAll(): void {
    this.all = true;
    this.deliveriesDue = true;
    this.schedule(0);
  }

  /**
   * A data plane disabled an upstream key (the provider refused it) and the control plane recorded it: the
   * operators are told, always (upstream_key_disabled is on by default and has no switch: a refused key is
   * capacity lost until someone acts).
   */
  keyDisabled(d: { upstream: string; key: string; reason: string; at: number }): void {
    const at = new Date(d.at).toISOString();
    const group = `upstream_key:${d.upstream}:${d.key}:${at}`;
    this.keysDisabled.push({
      kind: "upstream_key_disabled",
      dedupeKey: group,
      group,
      rank: 0,
      message: `key ${d.key} of upstream ${d.upstream} was taken out of rotation (${d.reason.replace(/_/g, " ")}); it stays disabled until an operator enables it.`,
      data: { upstream: d.upstream, key: d.key, reason: d.reason, disabledAt: at },
    });
    this.schedule(0);
  }

  /** A delivery was queued (or a test send asked for). */
  deliverSoon(): void {
    this.deliveriesDue = true;
    this.schedule(0);
  }

  /** A pass in `ms` at the latest: a pass already due sooner stands, a later one is brought forward. */
  private schedule(ms: number): void {
    if (this.stopped) return;
    const at = Date.now() + ms;
    if (this.timer) {
      if (this.timerAt <= at) return;
      clearTimeout(this.timer);
    }
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.run();
    }, ms);
    this.timer.unref();
  }

  /** Resolves when the pass running now (if any) and everything already asked for are done. */
  async idle(): Promise<void> {
    while (this.running || this.timer || this.dirty.size || this.all) {
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
        void this.run();
      }
      await this.running;
    }
  }

  private async run(): Promise<void> {
    if (this.running) {
      await this.running;
      return this.run();
    }
    this.running = this.pass().catch((err) => this.o.logger.error({ err }, "alert evaluation failed"));
    await this.running;
    this.running = null;
  }

  private async pass(): Promise<void> {
    const { prisma } = this.o;
    const all = this.all;
    const breakers = this.breakersDue || all;
    const ids = [...this.dirty];
    let deliver = this.deliveriesDue || all || breakers;
    this.all = false;
    this.breakersDue = false;
    this.dirty.clear();
    if (all || ids.length || breakers) {
      const configs = await prisma.alertConfig.findMany({
        where: all ? {} : { OR: [{ accountId: { in: ids } }, ...(breakers ? [{ id: OPERATORS_CONFIG }] : [])] },
        include: { webhooks: { select: { id: true } }, account: { select: { name: true } } },
      });
      for (const c of configs) {
        let alerts: Alert[];
        if (c.accountId !== null) alerts = await accountAlerts(prisma, c, c.accountId, this.o.calendar);
        else if (c.id === OPERATORS_CONFIG && breakers) alerts = await this.breakerAlerts(c.breakerOpen);
        else continue;
        if (alerts.length) {
          deliver = true;
          await fire(prisma, this.o.mail, c, c.account?.name ?? null, alerts, (err) =>
            this.o.logger.warn({ err }, "alert mail failed"),
          );
        }
      }
    }
    if (this.keysDisabled.length > 0) {
      const alerts = this.keysDisabled.splice(0);
      // The operators' settings exist once anyone saved them; the alert is recorded (and shown) even before.
      const c = await prisma.alertConfig.upsert({
        where: { id: OPERATORS_CONFIG },
        create: { id: OPERATORS_CONFIG, emails: [] },
        update: {},
        include: { webhooks: { select: { id: true } } },
      });
      deliver = true;
      await fire(prisma, this.o.mail, c, null, alerts, (err) => this.o.logger.warn({ err }, "alert mail failed"));
    }
    if (!deliver) return;
    this.deliveriesDue = false;
    const next = await deliverDue(prisma, this.o.delivery);
    if (this.deliveryTimer) clearTimeout(this.deliveryTimer);
    this.deliveryTimer = null;
    if (next !== null && !this.stopped) {
      this.deliveryTimer = setTimeout(
        () => this.deliverSoon(),
        Math.max(0, Math.min(next.getTime() - Date.now(), 60_000)),
      );
      this.deliveryTimer.unref();
    }
  }

  private async breakerAlerts(enabled: boolean): Promise<Alert[]> {
    const states = (await this.o.breakers?.()) ?? {};
    const out: Alert[] = [];
    for (const [upstream, state] of Object.entries(states)) {
      // An outage is one period from opening until closed again: a failed probe (half-open → open) is the same
      // outage, not a new alert.
      if (state === "closed") {
        this.openSince.delete(upstream);
        continue;
      }
      if (state !== "open" && !this.openSince.has(upstream)) continue;
      let since = this.openSince.get(upstream);
      if (since === undefined) this.openSince.set(upstream, (since = new Date().toISOString()));
      if (!enabled) continue;
      const group = `breaker:${upstream}:${since}`;
      out.push({
        kind: "breaker_open",
        dedupeKey: group,
        group,
        rank: 0,
        message: `the circuit breaker of upstream ${upstream} is open (since ${since}).`,
        data: { upstream, since },
      });
    }
    return out;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of [this.timer, this.interval, this.breakerInterval, this.deliveryTimer]) if (t) clearTimeout(t);
    await this.running;
  }
}

/**
 * Distributed mode: the replicas' breaker reports merged (an upstream is open when any live replica's shared
 * breaker is); reports older than maxAgeMs (a replica gone) are ignored.
 */
export async function readBreakerReports(
  redis: { hgetall(key: string): Promise<Record<string, string>> },
  key: string,
  maxAgeMs = 15_000,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const now = Date.now();
  for (const raw of Object.values(await redis.hgetall(key))) {
    let report: { at?: number; states?: Record<string, string> };
    try {
      report = JSON.parse(raw) as typeof report;
    } catch {
      continue;
    }
    if (typeof report.at !== "number" || now - report.at > maxAgeMs) continue;
    // the worst state any replica reports: open, then half_open, then closed
    const rank = (s: string | undefined) => (s === "open" ? 2 : s === "half_open" ? 1 : 0);
    for (const [upstream, state] of Object.entries(report.states ?? {}))
      if (rank(state) >= rank(out[upstream])) out[upstream] = state;
  }
  return out;
}
